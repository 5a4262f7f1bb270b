#!/usr/bin/env python3
"""Compare two dump trees made by tools/gen_dumps.py (committed vs freshly generated).

  python3 tools/oracle_compare.py COMMITTED_DIR FRESH_DIR [--manifest A B] [--skip NAME ...]

--skip NAME leaves program NAME out of the comparison (both trees and both manifests): the
third-party cells gen_dumps.py skipped because their source was not given.

Exits 0 when every program directory holds the same files with the same content, 1 otherwise,
printing a per-file summary and the first lines of each diff.

Normalization (only what legitimately differs between checkouts, not between XLA runs):
  * .gz files are compared by their decompressed text;
  * absolute paths in quoted strings of the HLO text (the FileNames table that XLA prints
    before the computations, source_file=... in metadata) are reduced to a location-free form:
    ".../site-packages/X" -> "<site-packages>/X", ".../lib/pythonN.M/X" -> "<stdlib>/X",
    ".../tools/X.py" -> "<repo>/tools/X.py", and third-party programs' source files
    (extracted by tools/corpus/thirdparty/ to $TMPDIR/spmdsim_thirdparty/) ".../spmdsim_thirdparty/X"
    -> "<thirdparty>/X".
  * on XLA:CPU programs (program.json "platform" starting with "cpu"),
    memory_analysis.json's generated_code_size_in_bytes is reported as a NOTE and not failed:
    XLA:CPU compiles for the host's own LLVM target (its CPU features pick the instructions),
    so the size of the machine code changes with the machine that runs the oracle, while no
    buffer figure does. GPU and TPU deviceless compiles target a fixed device description, so
    their code size is compared exactly.
Everything else is compared exactly: HLO text before/after optimizations, buffer assignment,
live ranges, memory-usage report, memory_analysis.json, cost_analysis.json, program.json.
Generating twice with the same pinned JAX gives byte-identical files (checked when the
corpus was made), so no other normalization is applied.
"""

import difflib
import gzip
import json
import os
import re
import sys

PATH_RULES = [
    (re.compile(r'"[^"\n]*/(?:site|dist)-packages/'), '"<site-packages>/'),
    (re.compile(r'"[^"\n]*/lib/python\d+\.\d+/'), '"<stdlib>/'),
    (re.compile(r'"[^"\n]*/tools/([A-Za-z0-9_./-]+\.py)"'), r'"<repo>/tools/\1"'),
    (re.compile(r'"[^"\n]*/spmdsim_thirdparty/'), '"<thirdparty>/'),
]
MAX_DIFF_LINES = 25


def read_text(path):
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace")


def normalize(text):
    for rx, repl in PATH_RULES:
        text = rx.sub(repl, text)
    return text


def clip_diff_lines(diff, width=240):
    """Shorten long diff lines; for a changed -/+ pair show the window where they differ."""
    focus = {}
    minus = []
    for i, l in enumerate(diff):
        if l.startswith("-") and not l.startswith("---"):
            minus.append(i)
        elif l.startswith("+") and not l.startswith("+++"):
            if minus:
                j = minus.pop(0)
                a, b = diff[j], l
                k = next((n for n in range(1, min(len(a), len(b))) if a[n] != b[n]),
                         min(len(a), len(b)))
                focus[i] = focus[j] = max(1, k - width // 2)
        else:
            minus = []
    for i, l in enumerate(diff):
        if len(l) <= width:
            yield l
            continue
        start = focus.get(i, 1)
        if start <= 1:
            yield l[:width] + " ..."
        else:
            yield l[0] + " ..." + l[start:start + width] + " ..."


def json_diff(a, b, prefix=""):
    """Yield 'key: old -> new' lines for differing JSON leaves."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            p = "%s.%s" % (prefix, k) if prefix else str(k)
            if k not in a:
                yield "%s: (missing) -> %r" % (p, b[k])
            elif k not in b:
                yield "%s: %r -> (missing)" % (p, a[k])
            else:
                yield from json_diff(a[k], b[k], p)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from json_diff(x, y, "%s[%d]" % (prefix, i))
    elif a != b:
        yield "%s: %r -> %r" % (prefix, a, b)


HOST_DEPENDENT_CPU_FIELDS = ("generated_code_size_in_bytes",)


def program_platform(program_dir):
    try:
        with open(os.path.join(program_dir, "program.json")) as f:
            return str(json.load(f).get("platform", ""))
    except (OSError, ValueError):
        return ""


def compare_file(old_path, new_path, label, out, platform=""):
    if old_path.endswith(".json") and new_path.endswith(".json"):
        with open(old_path) as f:
            a = json.load(f)
        with open(new_path) as f:
            b = json.load(f)
        if a == b:
            return True
        if (platform.startswith("cpu") and os.path.basename(old_path) == "memory_analysis.json"
                and isinstance(a, dict) and isinstance(b, dict)):
            host_fields = [k for k in HOST_DEPENDENT_CPU_FIELDS if a.get(k) != b.get(k)]
            rest_a = {k: v for k, v in a.items() if k not in HOST_DEPENDENT_CPU_FIELDS}
            rest_b = {k: v for k, v in b.items() if k not in HOST_DEPENDENT_CPU_FIELDS}
            if rest_a == rest_b:
                for k in host_fields:
                    out.append("NOTE %s: %s %r -> %r (XLA:CPU machine code depends on the host "
                               "CPU; not compared)" % (label, k, a.get(k), b.get(k)))
                return True
        lines = list(json_diff(a, b))
        out.append("DIFF %s: %d JSON field(s) differ" % (label, len(lines)))
        out.extend("    " + l for l in lines[:MAX_DIFF_LINES])
        if len(lines) > MAX_DIFF_LINES:
            out.append("    ... %d more" % (len(lines) - MAX_DIFF_LINES))
        return False
    a = normalize(read_text(old_path)).splitlines()
    b = normalize(read_text(new_path)).splitlines()
    if a == b:
        return True
    diff = list(difflib.unified_diff(a, b, "committed/" + label, "regenerated/" + label,
                                     n=1, lineterm=""))
    changed = sum(1 for l in diff if l[:1] in "+-" and not l.startswith(("+++", "---")))
    out.append("DIFF %s: %d lines committed, %d regenerated, %d changed (+/-) lines" % (
        label, len(a), len(b), changed))
    for l in clip_diff_lines(diff[:MAX_DIFF_LINES]):
        out.append("    " + l)
    if len(diff) > MAX_DIFF_LINES:
        out.append("    ... (%d more diff lines)" % (len(diff) - MAX_DIFF_LINES))
    return False


def compare_trees(old_root, new_root, out, skip=()):
    ok = True
    nfiles = 0
    old_progs = sorted(d for d in os.listdir(old_root)
                       if os.path.isdir(os.path.join(old_root, d)) and d not in skip)
    new_progs = sorted(d for d in os.listdir(new_root)
                       if os.path.isdir(os.path.join(new_root, d)) and d not in skip)
    for p in sorted(set(old_progs) - set(new_progs)):
        out.append("MISSING program %s: committed but no longer generated" % p)
        ok = False
    for p in sorted(set(new_progs) - set(old_progs)):
        out.append("NEW program %s: generated but not committed" % p)
        ok = False
    for p in sorted(set(old_progs) & set(new_progs)):
        od, nd = os.path.join(old_root, p), os.path.join(new_root, p)
        of, nf = set(os.listdir(od)), set(os.listdir(nd))
        for f in sorted(of - nf):
            out.append("MISSING file %s/%s: committed but not regenerated "
                       "(module number or .gz status changed?)" % (p, f))
            ok = False
        for f in sorted(nf - of):
            out.append("NEW file %s/%s: regenerated but not committed" % (p, f))
            ok = False
        platform = program_platform(od)
        for f in sorted(of & nf):
            nfiles += 1
            if not compare_file(os.path.join(od, f), os.path.join(nd, f), "%s/%s" % (p, f), out,
                                platform):
                ok = False
    return ok, len(set(old_progs) & set(new_progs)), nfiles


def main(argv):
    args = argv[1:]
    manifest = None
    if "--manifest" in args:
        i = args.index("--manifest")
        manifest = args[i + 1:i + 3]
        del args[i:i + 3]
    skip = set()
    while "--skip" in args:
        i = args.index("--skip")
        skip.add(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    out = []
    ok, nprog, nfiles = compare_trees(args[0], args[1], out, skip)
    if manifest:
        nfiles += 1
        if skip:  # compare the manifests without the skipped programs
            import tempfile
            tmp = tempfile.mkdtemp(prefix="oracle_manifest_")
            for k, path in enumerate(manifest):
                with open(path) as f:
                    m = json.load(f)
                m["programs"] = [p for p in m["programs"] if p["name"] not in skip]
                manifest[k] = os.path.join(tmp, "%d.manifest.json" % k)
                with open(manifest[k], "w") as f:
                    json.dump(m, f, indent=1)
        if not compare_file(manifest[0], manifest[1], "manifest.json", out):
            ok = False
    if skip:
        print("oracle: skipped %d program(s) (third-party source not given): %s" % (
            len(skip), " ".join(sorted(skip))))
    for l in out:
        print(l)
    ndiff = sum(1 for l in out if l.startswith(("DIFF", "MISSING", "NEW")))
    if ok:
        print("oracle: OK, %d programs, %d files match what JAX writes now" % (nprog, nfiles))
        return 0
    print("oracle: MISMATCH, %d problem(s) over %d programs / %d files compared. "
          "If the change is intended, regenerate with: "
          "tools/setup_python.sh && .venv/bin/python tools/gen_dumps.py" % (ndiff, nprog, nfiles))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
