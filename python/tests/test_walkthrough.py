"""docs/PYTHON.md's walk-through: the script runs, its output is the page's (so the page cannot go
stale), and every figure of spmdsim's equals XLA's memory_analysis() of the same compile."""

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO

SCRIPT = os.path.join(REPO, "docs", "examples", "seed_walkthrough.py")
GUIDE = os.path.join(REPO, "docs", "PYTHON.md")


def documented_output():
    with open(GUIDE) as f:
        text = f.read()
    m = re.search(r"<!-- walkthrough-output: begin -->\n```text\n(.*?)```\n"
                  r"<!-- walkthrough-output: end -->", text, re.S)
    assert m, "docs/PYTHON.md has no walk-through output block"
    return m.group(1)


def test_walkthrough(tmp_path, target_or_skip):
    pytest.importorskip("flax")
    target_or_skip("h100", 8)  # the plugin, or a skip (a failure where GPU is required)
    out = tmp_path / "walkthrough.json"
    env = dict(os.environ)
    p = subprocess.run([sys.executable, SCRIPT, "--json", str(out)], env=env, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout == documented_output()
    figures = json.loads(out.read_text())
    ma = figures["xla_memory_analysis"]
    xla_peak = (ma["argument_size_in_bytes"] + ma["output_size_in_bytes"] -
                ma["alias_size_in_bytes"] + ma["temp_size_in_bytes"])
    assert figures["peak_bytes"] == xla_peak
    assert figures["fits"] is (xla_peak <= figures["usable_bytes"])
    rows = figures["whatif"]["rows"]
    assert rows[0]["peak_bytes"] == xla_peak  # the baseline is the same compile again
    for row in rows:  # XLA:GPU: spmdsim's peak of each compile is XLA's
        assert row["spmdsim_peak_bytes"] == row["peak_bytes"], row["lever"]
