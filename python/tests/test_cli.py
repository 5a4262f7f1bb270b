"""python -m spmdsim: compile a FILE.py:make_step for a target, what-ifs, and the binary as is."""

import json
import os
import subprocess
import sys

from conftest import TESTDATA
from test_targets import OLD_XLA

HERE = os.path.dirname(os.path.abspath(__file__))


def run(*args):
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)  # the command sets what the target needs itself
    return subprocess.run([sys.executable, "-m", "spmdsim"] + list(args), cwd=HERE, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_compile_for_cpu_prints_the_analysis():
    p = run("compile", "cli_step.py:make_step", "--target", "cpux8", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    m = doc["modules"][0]
    assert m["stage"] == "after_optimizations"
    assert m["memory"]["xla"]["source"] == "memory_analysis.json"
    if not OLD_XLA:  # JAX 0.4.30's XLA:CPU: test_targets.py's xfail
        assert m["memory"]["peak_bytes"] == m["memory"]["xla"]["peak_bytes"]
    assert "XLA's dump is in" in p.stderr


def test_whatif_from_the_command_line():
    p = run("compile", "cli_step.py:make_step", "--target", "cpux8", "--whatif",
            "jax_default_prng_impl=rbg", "--whatif", "batch_per_device=2,8", "--format", "json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["rows"]
    assert [(r["lever"], r["value"]) for r in rows] == [
        ("baseline", None), ("jax_default_prng_impl", "rbg"), ("batch_per_device", 2),
        ("batch_per_device", 8)]
    assert rows[2]["peak_bytes"] < rows[0]["peak_bytes"] < rows[3]["peak_bytes"]


def test_usage_errors_exit_2():
    p = run("compile", "cli_step.py:make_step", "--target", "h900x8")
    assert p.returncode == 2 and "unknown target" in p.stderr
    p = run("compile", "cli_step.py:make_step", "--target", "nonsense")
    assert p.returncode == 2 and "target" in p.stderr
    p = run("compile", "missing.py:make_step", "--target", "cpux8")
    assert p.returncode != 0 and "no such file" in p.stderr


def test_the_binary_behind_double_dash():
    p = run("--", "stats", os.path.join(TESTDATA, "dumps", "dp8_partitionable_remat"),
            "--format", "json")
    assert p.returncode == 0
    assert json.loads(p.stdout)["schema_version"] == 1
