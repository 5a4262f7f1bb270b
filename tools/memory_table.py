#!/usr/bin/env python3
"""spmdsim's memory figures beside XLA's memory_analysis() for every module of the corpus.

    python3 tools/memory_table.py build/analyzer/spmdsim          # markdown table to stdout

Per module with an after-optimizations dump and memory_analysis JSON: whether arguments,
outputs and aliases equal XLA's, and temp's error; then worst and median |temp error| per
platform kind. XLA's temp is the one spmdsim reports beside its own (`xla.temp_bytes`):
memory_analysis() on CPU and GPU, the HBM preallocated temp of the buffer assignment on TPU
(libtpu's memory_analysis() temp is not made of the allocations the dump lists; docs/MEMORY.md).
"""
import json
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTDATA = os.path.join(REPO, "testdata")


def main():
    spmdsim = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "build/analyzer/spmdsim")
    manifest = json.load(open(os.path.join(TESTDATA, "manifest.json")))
    print("| cell | module | args exact | out exact | alias exact | temp spmdsim | temp XLA | "
          "temp error |")
    print("|---|---|---|---|---|---:|---:|---:|")
    errors = {}
    for program in manifest["programs"]:
        for module in program["modules"]:
            files = module["files"]
            out = subprocess.run([spmdsim, "analyze", os.path.join(TESTDATA, files["after"]),
                                  "--format", "json"], capture_output=True, text=True)
            if out.returncode != 0:
                print("| %s | %s | spmdsim exit %d | | | | | |" % (program["name"], module["jit_name"],
                                                            out.returncode))
                continue
            ours = json.loads(out.stdout)["modules"][0]["memory"]
            xla = module["memory_analysis"]
            exact = ["yes" if ours[a] == xla[b] else "**no** (%+d B)" % (ours[a] - xla[b])
                     for a, b in (("argument_bytes", "argument_size_in_bytes"),
                                  ("output_bytes", "output_size_in_bytes"),
                                  ("alias_bytes", "alias_size_in_bytes"))]
            reported = json.loads(out.stdout)["modules"][0]["memory"].get("xla") or {}
            temp = reported.get("temp_bytes", xla["temp_size_in_bytes"])
            err = 100.0 * (ours["temp_bytes"] - temp) / temp if temp else 0.0
            errors.setdefault(program["platform_kind"], []).append(abs(err))
            print("| %s | %s | %s | %s | %s | %d | %d | %+.2f%% |" % (
                program["name"], module["jit_name"], *exact, ours["temp_bytes"], temp, err))
    print()
    for kind, errs in sorted(errors.items()):
        print("%s: %d modules, |temp error| worst %.2f%%, median %.2f%%" % (
            kind, len(errs), max(errs), statistics.median(errs)))


if __name__ == "__main__":
    main()
