#!/usr/bin/env python3
"""The flipped-mode what-if against XLA, as a table: for each testdata pair, spmdsim's prediction
of the other mode's random-bit memory and collective bytes (from one dump) beside what XLA did in
the other mode's dump (its buffer-assignment sizes of the sites' buffers, the collectives it
inserted). The same comparison is asserted within 10% by passes/rng_site_analysis_test.cc.

Usage: tools/rng_flip_table.py [SPMDSIM]   (default build/analyzer/spmdsim; run from the repo root)
"""
import glob
import json
import re
import subprocess
import sys

PAIRS = [
    ("dp8_partitionable_remat", "dp8_replicated_remat", "replicated"),
    ("dp8_partitionable_noremat", "dp8_replicated_noremat", "replicated"),
    ("mesh4x2_partitionable_remat", "mesh4x2_replicated_remat", "replicated"),
    ("seed_dp8_partitionable_remat", "seed_dp8_replicated_remat", "replicated"),
    ("dp8_replicated_remat", "dp8_partitionable_remat", "partitionable"),
    ("dp8_replicated_noremat", "dp8_partitionable_noremat", "partitionable"),
    ("mesh4x2_replicated_remat", "mesh4x2_partitionable_remat", "partitionable"),
    ("seed_dp8_replicated_remat", "seed_dp8_partitionable_remat", "partitionable"),
    ("dp8_partitionable_remat", "dp8_rbg_remat", "rbg"),
]


def rng_sites(spmdsim, program):
    out = subprocess.run([spmdsim, "rng", "sites", f"testdata/dumps/{program}", "--format", "json",
                          "--module", "jit_train_step"], capture_output=True, text=True, check=True)
    modules = json.loads(out.stdout)["modules"]
    return next(m for m in modules if m["stage"] == "after_optimizations")["rng"]


def xla_value_sizes(program):
    path = glob.glob(f"testdata/dumps/{program}/*-buffer-assignment.txt")[0]
    sizes = {}
    with open(path) as f:
        for line in f:
            m = re.search(r"value: <\d+ (\S+?)(\{[0-9,]*\})? @\d+> \(size=(\d+)", line)
            if m:
                sizes[m.group(1) + (m.group(2) or "{}")] = int(m.group(3))
    return sizes


def percent(predicted, actual):
    if actual == 0:
        return "+0.000%" if predicted == 0 else "n/a"
    return f"{100.0 * (predicted - actual) / actual:+.3f}%"


def main():
    spmdsim = sys.argv[1] if len(sys.argv) > 1 else "build/analyzer/spmdsim"
    print("| from -> to | memory predicted | XLA buffer assignment | error "
          "| wire predicted | XLA collectives | error |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for source, target, mode in PAIRS:
        predicted = rng_sites(spmdsim, source)["totals"]["whatif"][mode]
        sizes = xla_value_sizes(target)
        memory = wire = 0
        for site in rng_sites(spmdsim, target)["sites"]:
            if site["purpose"] != "bits":
                continue
            wire += site["wire_bytes_per_device"]
            for buffer in site["buffers"]:
                value = buffer["value"]
                memory += sizes[value if "{" in value else value + "{}"]
        print(f"| {source} -> {target} | {predicted['memory_bytes']:,} | {memory:,} "
              f"| {percent(predicted['memory_bytes'], memory)} "
              f"| {predicted['wire_bytes_per_device']:,} | {wire:,} "
              f"| {percent(predicted['wire_bytes_per_device'], wire)} |")


if __name__ == "__main__":
    main()
