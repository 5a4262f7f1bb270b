#!/usr/bin/env python3
"""CPU time (user + sys, best of N) of `stats`, `analyze`, `rng sites` and `report` on the
benchmark modules (tools/make_big_module.py writes them to build-bench/), and report / stats:
issue #14's target is report at most 3x stats. Run from the repository root:

    python3 tools/bench_commands.py [SPMDSIM] [--reps N]   # default build/analyzer/spmdsim, 2
    python3 tools/bench_commands.py NEW --baseline OLD --reps 9
    python3 tools/bench_commands.py --module A.txt --module B.txt   # other modules

With --baseline the two binaries alternate run by run (OLD, NEW, then NEW, OLD, ...), so that the
machine's drift between runs falls on both alike, and each cell gives min / median of the reps.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys

MODULES = ["build-bench/big_module.txt", "build-bench/big_module_pytorch_bert.txt"]
COMMANDS = [("stats", []), ("analyze", []), ("rng sites", []), ("report", ["-o", os.devnull])]


def cpu_seconds(args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def single(args):
    print("| module | " + " | ".join(c for c, _ in COMMANDS) + " | report / stats |")
    print("|---|" + "---:|" * (len(COMMANDS) + 1))
    for module in args.modules:
        row = {}
        for name, extra in COMMANDS:
            row[name] = min(cpu_seconds([args.spmdsim, *name.split(), module, *extra])
                            for _ in range(args.reps))
        cells = " | ".join(f"{row[c]:.3f} s" for c, _ in COMMANDS)
        print(f"| {os.path.basename(module)} | {cells} | {row['report'] / row['stats']:.1f}x |")


def alternating(args):
    binaries = [("baseline", args.baseline), ("new", args.spmdsim)]
    print("| module | build | " + " | ".join(f"{c} min / median" for c, _ in COMMANDS) +
          " | report / stats (min) |")
    print("|---|---|" + "---:|" * (len(COMMANDS) + 1))
    for module in args.modules:
        times = {(b, c): [] for b, _ in binaries for c, _ in COMMANDS}
        for name, extra in COMMANDS:
            for rep in range(args.reps):
                for label, binary in (binaries if rep % 2 == 0 else binaries[::-1]):
                    times[(label, name)].append(
                        cpu_seconds([binary, *name.split(), module, *extra]))
        for label, binary in binaries:
            cells = " | ".join(
                f"{min(times[(label, c)]):.3f} / {statistics.median(times[(label, c)]):.3f} s"
                for c, _ in COMMANDS)
            ratio = min(times[(label, "report")]) / min(times[(label, "stats")])
            print(f"| {os.path.basename(module)} | {label} ({binary}) | {cells} | {ratio:.1f}x |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("spmdsim", nargs="?", default="build/analyzer/spmdsim")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--baseline", help="another spmdsim binary to alternate with")
    parser.add_argument("--module", dest="modules", action="append",
                        help="a module to measure, instead of the two benchmark modules "
                        "(repeat for more; e.g. make_big_module.py --copies K for a smaller one)")
    args = parser.parse_args()
    args.modules = args.modules or MODULES
    for module in args.modules:
        if not os.path.exists(module):
            sys.exit(f"bench_commands.py: {module} is missing (python3 tools/make_big_module.py)")
    if args.baseline:
        alternating(args)
    else:
        single(args)


if __name__ == "__main__":
    main()
