#!/usr/bin/env python3
"""CPU time (user + sys, best of N) of `stats`, `analyze`, `rng sites` and `report` on the
benchmark modules (tools/make_big_module.py writes them to build-bench/), and report / stats:
issue #14's target is report at most 3x stats. Run from the repository root:

    python3 tools/bench_commands.py [SPMDSIM] [--reps N]   # default build/analyzer/spmdsim, 2
"""
import argparse
import os
import resource
import subprocess
import sys

MODULES = ["build-bench/big_module.txt", "build-bench/big_module_pytorch_bert.txt"]
COMMANDS = [("stats", []), ("analyze", []), ("rng sites", []), ("report", ["-o", os.devnull])]


def cpu_seconds(args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("spmdsim", nargs="?", default="build/analyzer/spmdsim")
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    print("| module | " + " | ".join(c for c, _ in COMMANDS) + " | report / stats |")
    print("|---|" + "---:|" * (len(COMMANDS) + 1))
    for module in MODULES:
        if not os.path.exists(module):
            sys.exit(f"bench_commands.py: {module} is missing (python3 tools/make_big_module.py)")
        row = {}
        for name, extra in COMMANDS:
            row[name] = min(cpu_seconds([args.spmdsim, *name.split(), module, *extra])
                            for _ in range(args.reps))
        cells = " | ".join(f"{row[c]:.2f} s" for c, _ in COMMANDS)
        print(f"| {os.path.basename(module)} | {cells} | {row['report'] / row['stats']:.1f}x |")


if __name__ == "__main__":
    main()
