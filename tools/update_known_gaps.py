#!/usr/bin/env python3
"""Rewrite testdata/known_gaps.json from what the corpus tests measure now.

Runs each test binary's corpus tests (testing/corpus_test.h) over every cell with the known
gaps cleared, and records, per test, each cell that fails with its first failing check and the
values it compared: the measured error, for the next issue to close. Review the diff.

    python3 tools/update_known_gaps.py build      # the build directory with the test binaries
"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GAPS = os.path.join(REPO, "testdata", "known_gaps.json")
BINARIES = ["passes/spmdsim_passes_tests", "analyzer/spmdsim_analyzer_tests"]


def corpus_tests():
    """Names of the SPMDSIM_CORPUS_TEST tests, read from the sources."""
    import re
    names = []
    for folder in ("passes", "analyzer", "ir"):
        for root, dirs, files in os.walk(os.path.join(REPO, folder)):
            dirs.sort()
            for fn in sorted(files):
                if fn.endswith("_test.cc"):
                    text = open(os.path.join(root, fn)).read()
                    names += re.findall(r'SPMDSIM_CORPUS_TEST\(\s*"((?:[^"\\]|\\.)*)"', text)
    return names


def first_failure(section):
    for node in section.iter():
        if node.tag == "Failure":  # FAIL_CHECK(...) with its message
            return " ".join((node.text or "").split())[:400]
        if node.tag != "Expression":
            continue
        expr = node
        if expr.get("success") == "false":
            original = (expr.findtext("Original") or "").strip()
            expanded = (expr.findtext("Expanded") or "").strip()
            info = [i.text.strip() for i in expr.iter("Info") if i.text]
            note = original + (" -> " + expanded if expanded and expanded != original else "")
            if info:
                note += " [" + "; ".join(info[-2:]) + "]"
            return " ".join(note.split())[:400]
    for exc in section.iter("Exception"):
        return "exception: " + " ".join((exc.text or "").split())[:300]
    return "failed"


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    names = set(corpus_tests())
    gaps = {}
    for binary in BINARIES:
        path = os.path.join(build, binary)
        for name in sorted(names):
            env = dict(os.environ, SPMDSIM_KNOWN_GAPS="none")
            out = subprocess.run([path, name, "-r", "xml"], capture_output=True, text=True,
                                 env=env)
            try:
                root = ET.fromstring(out.stdout)
            except ET.ParseError:
                continue
            for case in root.iter("TestCase"):
                for section in case.findall("Section"):
                    res = section.find("OverallResults")
                    if res is not None and int(res.get("failures", "0")) > 0:
                        gaps.setdefault(name, {})[section.get("name")] = first_failure(section)
    with open(GAPS, "w") as f:
        json.dump(gaps, f, indent=1, sort_keys=True)
        f.write("\n")
    total = sum(len(v) for v in gaps.values())
    print("%d known gaps in %d tests written to %s" % (total, len(gaps), GAPS))


if __name__ == "__main__":
    main()
