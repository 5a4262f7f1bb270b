#!/usr/bin/env python3
"""Golden tests: every subcommand and output format of spmdsim over real dumps of the corpus.

Each case is tests/golden/<name>.golden:

    # spmdsim <arguments, run from the repository root>
    # exit <code>
    <exactly what spmdsim printed on stdout>

  golden.py --check SPMDSIM     runs every case and fails (exit 1) with a unified diff where the
                                output or the exit code changed
  golden.py --update SPMDSIM    rewrites every case's expected output from SPMDSIM; review the
                                change with `git diff tests/golden`
  golden.py --update SPMDSIM --add NAME -- ARGS...
                                adds a case

The cases pin what users read, so a change to any view shows up as a reviewed diff. Standard
library only; run from anywhere.
"""
import argparse
import difflib
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN_DIR = os.path.join(ROOT, "tests", "golden")
TIMEOUT_S = 120


def read_case(path):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        command_line = f.readline()
        exit_line = f.readline()
        expected = f.read()
    if not command_line.startswith("# spmdsim ") or not exit_line.startswith("# exit "):
        raise ValueError(f"{path}: expected '# spmdsim ARGS' and '# exit N' as the first lines")
    return shlex.split(command_line[len("# spmdsim "):]), int(exit_line[len("# exit "):]), expected


def run(binary, args):
    env = dict(os.environ)
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        env.pop(name, None)  # check's CI outputs depend on them
    # argv[0] "spmdsim": the usage line names the program, not where this build put it.
    done = subprocess.run(["spmdsim"] + args, executable=binary, cwd=ROOT, env=env,
                          stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, timeout=TIMEOUT_S)
    return done.returncode, done.stdout.decode("utf-8", errors="surrogateescape")


def write_case(path, args, code, output):
    with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
        f.write("# spmdsim " + shlex.join(args) + "\n")
        f.write(f"# exit {code}\n")
        f.write(output)


def cases():
    return sorted(name for name in os.listdir(GOLDEN_DIR) if name.endswith(".golden"))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", metavar="SPMDSIM")
    mode.add_argument("--update", metavar="SPMDSIM")
    parser.add_argument("--add", metavar="NAME", help="with --update: add this case")
    parser.add_argument("args", nargs="*", help="with --add: the case's arguments")
    options = parser.parse_args()
    binary = os.path.abspath(options.check or options.update)

    if options.add:
        if not options.update or not options.args:
            parser.error("--add needs --update and the case's arguments after --")
        code, output = run(binary, options.args)
        write_case(os.path.join(GOLDEN_DIR, options.add + ".golden"), options.args, code, output)
        print(f"added {options.add}: exit {code}, {len(output)} bytes")
        return 0

    names = cases()
    if not names:
        print(f"golden: no cases in {GOLDEN_DIR}", file=sys.stderr)
        return 1
    failed = []
    for name in names:
        path = os.path.join(GOLDEN_DIR, name)
        args, expected_code, expected = read_case(path)
        code, output = run(binary, args)
        stray = os.path.join(ROOT, "-")
        if os.path.exists(stray):  # "-" must mean standard output, never a file of that name
            os.remove(stray)
            failed.append(name)
            print(f"FAILED {name}: spmdsim {shlex.join(args)} wrote a file named '-'")
            continue
        if options.update:
            if (code, output) != (expected_code, expected):
                write_case(path, args, code, output)
                print(f"updated {name}")
            continue
        if code == expected_code and output == expected:
            continue
        failed.append(name)
        print(f"FAILED {name}: spmdsim {shlex.join(args)}")
        if code != expected_code:
            print(f"  exit {code}, expected {expected_code}")
        diff = list(difflib.unified_diff(expected.splitlines(keepends=True),
                                         output.splitlines(keepends=True),
                                         f"{name} (expected)", f"{name} (now)", n=2))
        sys.stdout.writelines(diff[:200])
        if len(diff) > 200:
            print(f"  ... {len(diff) - 200} more diff lines")
    if options.check:
        print(f"golden: {len(names) - len(failed)} of {len(names)} cases unchanged")
        if failed:
            print("If the change is intended: python3 tools/golden.py --update BINARY, then review "
                  "git diff tests/golden")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
