"""Getting XLA's dump of a JAX compile into a directory spmdsim reads.

A `Lowered` is compiled with XLA's dump options passed as compiler options (they are XLA
DebugOptions, which JAX's `Lowered.compile(compiler_options=...)` sets for that compile alone, so
nothing depends on XLA_FLAGS having been set before JAX started): the optimized module, its
buffer assignment and live ranges. Beside them goes `memory_analysis.json`, every numeric field of
`compiled.memory_analysis()`, which spmdsim prints as XLA's figures. A `Compiled` already made
gives only its optimized text and memory_analysis().
"""

import json
import os
import re


def stage_kind(x):
    """"lowered", "compiled", or None for anything that is not a JAX stage."""
    try:
        from jax import stages
    except ImportError:
        return None
    if isinstance(x, stages.Lowered):
        return "lowered"
    if isinstance(x, stages.Compiled):
        return "compiled"
    return None


def memory_stats(compiled):
    """Every numeric field of compiled.memory_analysis() (None where the backend gives none)."""
    ma = compiled.memory_analysis()
    if ma is None:
        return None
    stats = {}
    for attr in sorted(dir(ma)):
        if attr.startswith("_"):
            continue
        v = getattr(ma, attr)
        if isinstance(v, int) and not isinstance(v, bool):
            stats[attr] = v
    return stats


def _write_memory_analysis(compiled, out):
    stats = memory_stats(compiled)
    if stats is not None:
        with open(os.path.join(out, "memory_analysis.json"), "w") as f:
            json.dump(stats, f, indent=1, sort_keys=True)
            f.write("\n")


def compile_with_dump(lowered, out, compiler_options=None):
    """Compiles `lowered` with XLA's dumps written to `out`; returns the Compiled."""
    os.makedirs(out, exist_ok=True)
    if any(n.endswith(".txt") for n in os.listdir(out)):
        raise ValueError("%s already holds a dump: give each compile a directory of its own" % out)
    options = {"xla_dump_to": out, "xla_dump_hlo_as_text": True}
    options.update(compiler_options or {})
    compiled = lowered.compile(compiler_options=options)
    _write_memory_analysis(compiled, out)
    return compiled


def module_name(hlo_text):
    m = re.match(r"\s*HloModule\s+([^\s,]+)", hlo_text)
    return m.group(1) if m else "module"


def write_compiled(compiled, out):
    """Writes a Compiled's optimized HLO text and memory_analysis() into `out`."""
    os.makedirs(out, exist_ok=True)
    text = compiled.as_text()
    if not text:
        raise ValueError("this Compiled has no HLO text (compiled.as_text() is empty)")
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", module_name(text))
    with open(os.path.join(out, "module_0000.%s.after_optimizations.txt" % name), "w") as f:
        f.write(text)
    _write_memory_analysis(compiled, out)
