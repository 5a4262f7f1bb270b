#!/usr/bin/env python3
"""Compare two spmdsim binaries' `analyze --format json` on every dump of testdata/dumps.

    python3 tools/compare_builds.py OLD_SPMDSIM NEW_SPMDSIM [--keep-rng]

Prints `same` or `DIFF` per dump directory and the number that differ (exit 1 when any do).
By default keys mentioning rng are dropped, so a change meant to leave memory alone can be
checked on its own. Standard library only.
"""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def strip(o, keep_rng):
    if isinstance(o, dict):
        return {k: strip(v, keep_rng) for k, v in o.items() if keep_rng or "rng" not in k}
    if isinstance(o, list):
        return [strip(x, keep_rng) for x in o]
    return o


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    keep_rng = "--keep-rng" in sys.argv
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    dumps = os.path.join(REPO, "testdata", "dumps")
    differ = 0
    for d in sorted(os.listdir(dumps)):
        outs = []
        for binary in args:
            r = subprocess.run([binary, "analyze", os.path.join(dumps, d), "--format", "json"],
                               capture_output=True, text=True, timeout=600)
            try:
                outs.append(strip(json.loads(r.stdout), keep_rng))
            except ValueError:
                outs.append(("error", r.returncode, r.stderr[-200:]))
        same = outs[0] == outs[1]
        differ += 0 if same else 1
        print(("same " if same else "DIFF ") + d, flush=True)
    print("%d of the dumps differ" % differ)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
