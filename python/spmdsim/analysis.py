"""spmdsim.analyze(x): every analysis of a dump, a dump file, or a JAX compile, as typed objects."""

import html
import os
import tempfile

from . import _engine, _jax_dump
from .results import Collectives, Finding, Fit, LiveAt, Memory, Module, Rng


def _device_args(device=None, capacity=None, mem_fraction=None):
    args = []
    if device:
        args += ["--device", device]
    if capacity is not None:
        args += ["--capacity", str(capacity)]
    if mem_fraction is not None:
        args += ["--mem-fraction", repr(float(mem_fraction))]
    return args


class Analysis:
    """The modules of one input and what spmdsim found in each (`modules`, after-optimizations
    modules first). `inputs` are the files given to the binary; `compiled` the JAX object where
    the analysis came from one."""

    def __init__(self, inputs, modules, device_args=(), compiled=None, warnings="",
                 stage_args=()):
        self.inputs = list(inputs)
        self.modules = list(modules)
        self.compiled = compiled
        self.warnings = warnings
        self._device_args = list(device_args)
        self._stage_args = list(stage_args)
        # Set by Target.compile: the target, and every field of the compile's memory_analysis().
        self.target = None
        self.xla_memory_analysis = None

    def __iter__(self):
        return iter(self.modules)

    def __len__(self):
        return len(self.modules)

    def __getitem__(self, key):
        """A module by position or by (part of) its name."""
        if isinstance(key, int):
            return self.modules[key]
        found = [m for m in self.modules if m.name == key] or \
                [m for m in self.modules if key in m.name]
        if not found:
            raise KeyError("no module named %r (modules: %s)" %
                           (key, ", ".join(m.name for m in self.modules)))
        return found[0]

    @property
    def step(self):
        """The module that decides whether the step fits: the after-optimizations module with the
        largest peak (a compile has one)."""
        after = [m for m in self.modules if m.stage == "after_optimizations" and m.memory]
        pool = after or [m for m in self.modules if m.memory]
        if not pool:
            raise ValueError("no module with a memory analysis")
        return max(pool, key=lambda m: m.memory.peak_bytes)

    def live_at(self, position, module=None):
        """What is live at schedule position `position` of a module (`spmdsim analyze --at`): a
        LiveAt with the live bytes there (the memory curve's value) and the buffers, largest
        first, each with its category. module: a Module of this analysis or its name (default:
        the step). A position past the module's schedule raises SpmdsimError."""
        m = self.step if module is None else module if isinstance(module, Module) else self[module]
        doc, _, _ = _engine.run_json(["analyze", m.file, "--at", str(int(position))] +
                                     self._device_args)
        for found in doc["modules"]:
            if found["name"] == m.name and found["stage"] == m.stage:
                return LiveAt.from_json(found["memory"]["live_at"])
        raise _engine.SpmdsimError("%s: module %s not found again" % (m.file, m.name))

    def report_html(self):
        """spmdsim's self-contained HTML report of these inputs (`spmdsim report`)."""
        _, out, _ = _engine.run(["report"] + self.inputs + self._stage_args + self._device_args +
                                ["-o", "-"])
        return out

    def _repr_html_(self):
        # The report is a whole page with its own styles and scripts: an iframe keeps them apart
        # from the notebook's.
        return ('<iframe style="width:100%%;height:640px;border:1px solid #ccc" srcdoc="%s">'
                '</iframe>' % html.escape(self.report_html(), quote=True))

    def __repr__(self):
        lines = ["<spmdsim.Analysis of %d module(s)>" % len(self.modules)]
        for m in self.modules:
            verdict = ""
            if m.fit is not None and m.fit.fits is not None:
                verdict = ", fits %s" % m.fit.device_name if m.fit.fits else \
                    ", does not fit %s" % m.fit.device_name
            peak = "peak %d B" % m.memory.peak_bytes if m.memory else "no memory analysis"
            lines.append("  %s (%s): %s%s" % (m.name, m.stage, peak, verdict))
        return "\n".join(lines)


def analyze_files(inputs, device=None, capacity=None, mem_fraction=None, stage=None,
                  compiled=None):
    """Runs `analyze`, `collectives` and `rng sites` on dump files or directories."""
    inputs = [os.fspath(p) for p in inputs]
    for p in inputs:
        if not os.path.exists(p):
            raise _engine.SpmdsimError("%s: no such file or directory" % p)
    common = ["--stage", stage] if stage else []
    dev = _device_args(device, capacity, mem_fraction)
    memory, _, warnings = _engine.run_json(["analyze"] + inputs + common + dev)
    colls, _, _ = _engine.run_json(["collectives"] + inputs + common)
    rng, _, _ = _engine.run_json(["rng", "sites"] + inputs + common)

    def by_key(doc):
        return {(m["file"], m["name"], m["stage"]): m for m in doc["modules"]}

    colls_by, rng_by = by_key(colls), by_key(rng)
    modules = []
    for m in memory["modules"]:
        key = (m["file"], m["name"], m["stage"])
        c, r = colls_by.get(key, {}), rng_by.get(key, {})
        modules.append(Module(
            name=m["name"], file=m["file"], stage=m["stage"],
            memory=Memory.from_json(m["memory"]) if m.get("memory") else None,
            fit=Fit.from_json(m["fit"]) if m.get("fit") else None,
            collectives=Collectives.from_json(c["collectives"]) if c.get("collectives") else None,
            rng=Rng.from_json(r["rng"]) if r.get("rng") else None,
            findings=[Finding.from_json(f) for f in r.get("findings", [])]))
    return Analysis(inputs, modules, dev, compiled=compiled, warnings=warnings, stage_args=common)


def analyze(x, device=None, capacity=None, mem_fraction=None, stage=None, dump_dir=None):
    """Analyses `x`: a `--xla_dump_to` directory or HLO text file (a path or a list of them), a
    `jax.stages.Lowered` (compiled here with XLA's dumps on), or a `jax.stages.Compiled` (its
    optimized HLO text and memory_analysis(); a Lowered gives spmdsim XLA's buffer assignment
    too).

    device / capacity / mem_fraction: the device the fit verdict judges against (`--device`,
    `--capacity`, `--mem-fraction`); by default the one the dump names. stage: "after" or
    "before" to keep one stage. dump_dir: where a JAX object's dump is written (default: a new
    temporary directory, kept so that the analysis' files stay readable)."""
    if isinstance(x, (str, os.PathLike)):
        return analyze_files([x], device, capacity, mem_fraction, stage)
    if isinstance(x, (list, tuple)) and all(isinstance(p, (str, os.PathLike)) for p in x):
        return analyze_files(x, device, capacity, mem_fraction, stage)
    kind = _jax_dump.stage_kind(x)
    if kind is None:
        raise TypeError("spmdsim.analyze takes a dump directory or file, a jax.stages.Lowered or "
                        "a jax.stages.Compiled, not %s (for a jitted function: "
                        "analyze(step.lower(*args)))" % type(x).__name__)
    out = dump_dir or tempfile.mkdtemp(prefix="spmdsim_")
    if kind == "lowered":
        compiled = _jax_dump.compile_with_dump(x, out)
    else:
        compiled = x
        _jax_dump.write_compiled(x, out)
    return analyze_files([out], device, capacity, mem_fraction, stage, compiled=compiled)
