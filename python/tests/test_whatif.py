"""Target.whatif: each row is an exact compile. Checked here against separate compiles of the
same lever value (config set around them, as a user would), three levers for two programs on a
GPU and a TPU target (and on CPU, the one platform every JAX version compiles for)."""

import jax
import pytest

import spmdsim
from programs import PROGRAMS

TARGETS = [("h100", 8), ("v5e", "2x4"), ("cpu", 8)]


def separate_compile(target, program, lever, value):
    if lever.startswith("jax_"):
        old = getattr(jax.config, lever)
        jax.config.update(lever, value)
        try:
            jitted, args = PROGRAMS[program](target)
            return target.compile(jitted, *args)
        finally:
            jax.config.update(lever, old)
    jitted, args = PROGRAMS[program](target, **{lever: value})
    return target.compile(jitted, *args)


@pytest.mark.parametrize("kind,devices", TARGETS, ids=["%s-%s" % t for t in TARGETS])
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_rows_equal_separate_compiles(target_or_skip, kind, devices, program):
    if program == "flax_decoder":
        pytest.importorskip("flax")
    target = target_or_skip(kind, devices)
    flipped = not jax.config.jax_threefry_partitionable
    levers = dict(jax_threefry_partitionable=[flipped], jax_default_prng_impl=["rbg"],
                  batch_per_device=[8])
    result = target.whatif(lambda **kw: PROGRAMS[program](target, **kw), **levers)
    assert [r.lever for r in result.rows] == ["baseline"] + list(levers)
    for row in result.rows[1:]:
        other = separate_compile(target, program, row.lever, row.value)
        ma = other.xla_memory_analysis
        assert row.memory_analysis == ma, row.lever
        assert row.peak_bytes == other.step.memory.xla.peak_bytes
        assert row.temp_bytes == other.step.memory.xla.temp_bytes
        if target.platform != "tpu":  # there XLA's figures are memory_analysis() itself
            assert row.temp_bytes == ma["temp_size_in_bytes"], row.lever
            assert row.peak_bytes == (ma["argument_size_in_bytes"] + ma["output_size_in_bytes"] -
                                      ma["alias_size_in_bytes"] + ma["temp_size_in_bytes"])
        assert row.spmdsim_peak_bytes == other.step.memory.peak_bytes
        bits = other.step.rng.bits_sites
        assert row.random_bit_bytes == sum(s.materialized_bytes for s in bits)
        assert row.rng_wire_bytes == sum(s.wire_bytes_per_device for s in bits)
        assert row.fits == other.step.fit.fits
    by_lever = {r.lever: r for r in result.rows}
    # The threefry flip and rbg have a dump-only model; the batch size has none, and says so.
    for lever in ("jax_threefry_partitionable", "jax_default_prng_impl"):
        assert by_lever[lever].model_random_bit_bytes is not None, lever
    assert by_lever["batch_per_device"].model_peak_bytes is None
    assert "no dump-only model" in by_lever["batch_per_device"].model_basis
    table = result.table()
    assert "baseline" in table and "jax_default_prng_impl='rbg'" in table
    assert result.to_json()["rows"][1]["lever"] == "jax_threefry_partitionable"


def test_a_jitted_step_takes_config_levers_only(target_or_skip):
    target = target_or_skip("cpu", 8)
    jitted, args = PROGRAMS["plain_scan"](target)
    with pytest.raises(TypeError, match="not JAX config options"):
        target.whatif(jitted, *args, batch_per_device=[8])
    flipped = not jax.config.jax_threefry_partitionable
    result = target.whatif(jitted, *args, jax_threefry_partitionable=[flipped])
    assert len(result.rows) == 2 and result.rows[1].value is flipped
    assert jax.config.jax_threefry_partitionable is not flipped  # restored after the row
    with pytest.raises(TypeError, match="factory"):
        target.whatif(jitted, *args, jax_default_prng_impl=["rbg"])
    with pytest.raises(ValueError, match="not a JAX .* config option: jax_threefry_partitionabel"):
        target.whatif(jitted, *args, jax_threefry_partitionabel=[False])
