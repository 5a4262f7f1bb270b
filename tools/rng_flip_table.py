#!/usr/bin/env python3
"""The flipped-mode what-if against XLA, as a table: for each testdata pair, spmdsim's prediction
of the other mode's random-bit memory and collective bytes (from one dump, told the JAX release
that compiled it with --jax-version) beside what XLA did in
the other mode's dump (its buffer-assignment sizes of the sites' buffers, the collectives it
inserted), for every pair of corpus cells that differ only in the mode. Every pair is asserted
within 5% by analyzer/model/rng_whatif_corpus_test.cc (the failing ones listed in
testdata/known_gaps.json, with their error).

Usage: tools/rng_flip_table.py [SPMDSIM]   (default build/analyzer/spmdsim; run from the repo root)
"""
import glob
import gzip
import json
import re
import subprocess
import sys

def mode_pairs():
    """Every pair of corpus cells that differ only in the threefry mode, both directions, and the
    rbg cells against their threefry twin (testdata/manifest.json)."""
    with open("testdata/manifest.json") as f:
        names = {p["name"] for p in json.load(f)["programs"]}
    pairs = []
    for name in sorted(names):
        if "partitionable" in name:
            other = name.replace("partitionable", "replicated")
            if other in names:
                pairs += [(name, other, "replicated"), (other, name, "partitionable")]
        for rbg in ("rbg", "unsafe_rbg"):
            twin = name.replace("partitionable", rbg)
            if "partitionable" in name and twin in names and twin != name:
                pairs.append((name, twin, "rbg"))
    return pairs


def train_module(program):
    """The jit name of the program's training step (jit__fun for a pmapped step)."""
    with open("testdata/manifest.json") as f:
        entry = next(p for p in json.load(f)["programs"] if p["name"] == program)
    return next((m["jit_name"] for m in entry.get("modules", []) if m.get("role") == "train"),
                "jit_train_step")


def rng_sites(spmdsim, program, jax_version=None):
    version = ["--jax-version", jax_version] if jax_version else []
    out = subprocess.run([spmdsim, "rng", "sites", f"testdata/dumps/{program}", "--format", "json",
                          "--module", train_module(program), "--stage", "after", *version],
                         capture_output=True, text=True, check=True)
    modules = json.loads(out.stdout)["modules"]
    return next(m for m in modules if m["stage"] == "after_optimizations")["rng"]


def xla_value_sizes(program):
    paths = glob.glob(f"testdata/dumps/{program}/*after_optimizations-buffer-assignment.txt*")
    sizes = {}
    with (gzip.open if paths[0].endswith(".gz") else open)(paths[0], "rt") as f:
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
    with open("testdata/manifest.json") as f:
        versions = {p["name"]: p.get("jax_version") for p in json.load(f)["programs"]}
    for source, target, mode in mode_pairs():
        # Told the JAX release that compiled the dump, as a user would (--jax-version).
        predicted = rng_sites(spmdsim, source, versions.get(source))["totals"]["whatif"][mode]
        sizes = xla_value_sizes(target)
        memory = wire = 0
        for site in rng_sites(spmdsim, target)["sites"]:
            if site["purpose"] != "bits":
                continue
            wire += site["wire_bytes_per_device"]
            for buffer in site["buffers"]:
                value = buffer["value"]
                memory += sizes.get(value if "{" in value else value + "{}", 0)
        bounds = predicted.get("bounds")
        if bounds:  # the two lowerings' figures; XLA's compile should lie between them
            low, high = bounds["memory_bytes_low"], bounds["memory_bytes_high"]
            shown = f"{low:,} to {high:,}"
            # As the corpus test: within the point figures' 5 % of either bound.
            error = "inside" if low <= memory * 1.05 and memory <= high * 1.05 else "outside"
        else:
            shown = f"{predicted['memory_bytes']:,}"
            error = percent(predicted['memory_bytes'], memory)
        print(f"| {source} -> {target} | {shown} | {memory:,} "
              f"| {error} "
              f"| {predicted['wire_bytes_per_device']:,} | {wire:,} "
              f"| {percent(predicted['wire_bytes_per_device'], wire)} |")


if __name__ == "__main__":
    main()
