"""spmdsim.analyze on the committed corpus (testdata/manifest.json: every cell, so a new dump is
checked without new code): the typed objects carry the binary's JSON field for field, and XLA's
own figures saved beside a dump (memory_analysis.json) come through as `memory.xla`."""

import json
import os
import subprocess

import pytest

import spmdsim
from conftest import TESTDATA, manifest

CELLS = [p for p in manifest()["programs"] if os.path.isdir(os.path.join(TESTDATA, p["dir"]))]


def binary_json(*args):
    out = subprocess.run([spmdsim.binary_path()] + list(args) + ["--format", "json"],
                         stdout=subprocess.PIPE, check=False, text=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("cell", CELLS, ids=[c["name"] for c in CELLS])
def test_corpus_cell(cell):
    path = os.path.join(TESTDATA, cell["dir"])
    analysis = spmdsim.analyze(path, stage="after_optimizations")
    raw = {(m["file"], m["name"]): m for m in binary_json("analyze", path, "--stage", "after")
           ["modules"]}
    assert len(analysis.modules) == len(raw) > 0
    for m in analysis:
        r = raw[(m.file, m.name)]
        mem = r["memory"]
        for field in ("peak_bytes", "argument_bytes", "output_bytes", "alias_bytes",
                      "temp_bytes", "peak_instruction"):
            assert getattr(m.memory, field) == mem[field], field
        assert [b.size_bytes for b in m.memory.live_at_peak] == \
            [b["size_bytes"] for b in mem["live_at_peak"]]
        assert m.fit.fits == r["fit"]["fits"]
        assert m.collectives is not None and m.rng is not None
    saved = os.path.join(path, "memory_analysis.json")
    if os.path.exists(saved):
        with open(saved) as f:
            ma = json.load(f)
        xla = analysis.step.memory.xla
        assert xla.source == "memory_analysis.json"
        assert xla.argument_bytes == ma["argument_size_in_bytes"]
        assert xla.output_bytes == ma["output_size_in_bytes"]
        assert xla.alias_bytes == ma["alias_size_in_bytes"]


def test_collectives_and_rng_match_their_commands():
    path = os.path.join(TESTDATA, "dumps", "jax012_gpu8_flax_dp_replicated_remat")
    m = spmdsim.analyze(path, stage="after_optimizations").step
    colls = binary_json("collectives", path, "--stage", "after")["modules"][0]["collectives"]
    assert m.collectives.total_wire_bytes_per_device == colls["total_wire_bytes_per_device"]
    assert [op.instruction for op in m.collectives.ops] == \
        [op["instruction"] for op in colls["ops"]]
    rng = binary_json("rng", "sites", path, "--stage", "after")["modules"][0]
    assert [s.name for s in m.rng.sites] == [s["name"] for s in rng["rng"]["sites"]]
    assert m.rng.random_bit_bytes == rng["rng"]["totals"]["materialized_bytes"]
    assert [f.kind for f in m.findings] == [f["kind"] for f in rng["findings"]]


def test_live_at_is_the_binarys_and_the_peak_listing_at_the_peak():
    path = os.path.join(TESTDATA, "dumps", "dp8_partitionable_remat")
    analysis = spmdsim.analyze(path, stage="after_optimizations")
    step = analysis.step
    peak = step.memory.raw["peak_time"]
    at = analysis.live_at(peak)
    assert at.position == peak and at.instruction == step.memory.peak_instruction
    assert [(b.size_bytes, b.instruction, b.index) for b in at.buffers] == \
        [(b.size_bytes, b.instruction, b.index) for b in step.memory.live_at_peak]
    assert at.count == len(at.buffers) and "random bits" in {b.category for b in at.buffers}
    raw = binary_json("analyze", step.file, "--at", "0")["modules"][0]["memory"]["live_at"]
    assert analysis.live_at(0, step.name).live_bytes == raw["live_bytes"]
    with pytest.raises(spmdsim.SpmdsimError, match="positions"):
        analysis.live_at(step.memory.raw["schedule_length"])


def test_device_options_reach_the_verdict():
    path = os.path.join(TESTDATA, "dumps", "jax012_gpu8_flax_dp_partitionable_remat")
    small = spmdsim.analyze(path, stage="after_optimizations", capacity="1MiB").step
    assert small.fit.fits is False and small.fit.usable_bytes == 1 << 20
    assert small.fit.margin_bytes == (1 << 20) - small.memory.peak_bytes
    h200 = spmdsim.analyze(path, stage="after_optimizations", device="h200").step
    assert h200.fit.device == "h200" and h200.fit.fits is True


def test_errors_are_exceptions_with_the_binary_message(tmp_path):
    with pytest.raises(spmdsim.SpmdsimError, match="no such file"):
        spmdsim.analyze(tmp_path / "missing")
    bad = tmp_path / "module_0000.jit_f.cpu_after_optimizations.txt"
    bad.write_text("HloModule m\n\nENTRY e {\n  p = f32[2 parameter(0)\n}\n")
    with pytest.raises(spmdsim.SpmdsimParseError) as e:
        spmdsim.analyze(str(bad))
    assert e.value.returncode == 3 and "error:" in e.value.stderr
    assert "%s:4:" % bad in e.value.stderr
    with pytest.raises(TypeError, match="Lowered"):
        spmdsim.analyze(42)
    good = spmdsim.analyze(os.path.join(TESTDATA, "dumps", "dp8_partitionable_remat"))
    with pytest.raises(KeyError, match="no module named"):
        good["jit_not_there"]


def test_binary_override(monkeypatch, tmp_path):
    monkeypatch.setenv("SPMDSIM_BINARY", str(tmp_path / "nothing"))
    with pytest.raises(spmdsim.SpmdsimError, match="SPMDSIM_BINARY"):
        spmdsim.binary_path()


def test_notebook_html_is_the_report_in_an_iframe():
    a = spmdsim.analyze(os.path.join(TESTDATA, "dumps", "jax012_gpu8_flax_dp_partitionable_remat"),
                        stage="after_optimizations")
    page = a.report_html()
    assert page.lstrip().lower().startswith("<!doctype html")
    shown = a._repr_html_()
    assert shown.startswith("<iframe") and shown.endswith("</iframe>")
    assert "&lt;!DOCTYPE html" in shown or "&lt;!doctype html" in shown
    assert "<script" not in shown.split("srcdoc=", 1)[1]  # escaped into the attribute
