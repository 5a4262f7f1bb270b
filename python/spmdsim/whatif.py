"""Exact what-ifs: the step recompiled once per lever value, beside what spmdsim's dump-only model
predicts from the first compile.

A lever named like a JAX config option (`jax_threefry_partitionable`, `jax_default_prng_impl`,
`jax_threefry_gpu_kernel_lowering`, ...) is set with jax.config.update around the trace and the
compile and restored after; any other lever is a keyword argument of the step's factory
(`make_step(remat_policy=...)`, `make_step(batch=...)`), which returns the jitted step or
`(jitted, abstract_args)`.

The model's figures come from the first (baseline) compile's dump alone: the peak each fix gives
(`spmdsim check`'s `fit.fixes`, analyzer/model/fit_fixes.h) and the random-bit bytes and RNG
collective bytes of the other mode (`rng sites`' `totals.whatif`). Where spmdsim has no model of a
lever, the row says so.
"""

import dataclasses
import tempfile
import typing

from . import _engine, _jax_dump
from .analysis import analyze_files

Optional = typing.Optional


@dataclasses.dataclass
class WhatIfRow:
    """One compile: `lever` set to `value` (the baseline row has lever "baseline")."""
    lever: str
    value: object
    # XLA's peak and temp as spmdsim reads them beside the dump (`memory.xla`): memory_analysis()
    # (argument + output - alias + temp) on CPU and GPU; on a TPU the HBM preallocated temp of
    # the buffer assignment, libtpu's memory_analysis() temp being no sum of allocations
    # (docs/MEMORY.md). `memory_analysis` keeps every field of memory_analysis() itself.
    peak_bytes: int
    temp_bytes: int
    spmdsim_peak_bytes: int    # spmdsim's peak of the same dump
    random_bit_bytes: int      # random bits made per step: the bits sites' buffers (rng sites)
    rng_wire_bytes: int        # what the RNG's collectives send per device per step
    fits: Optional[bool]
    model_peak_bytes: Optional[int] = None
    model_peak_high_bytes: Optional[int] = None
    model_random_bit_bytes: Optional[int] = None
    model_rng_wire_bytes: Optional[int] = None
    model_basis: str = ""
    memory_analysis: dict = dataclasses.field(default_factory=dict, repr=False)
    analysis: object = dataclasses.field(default=None, repr=False, compare=False)

    @staticmethod
    def _error(model, exact):
        if model is None:
            return None
        if exact == 0:
            return 0.0 if model == 0 else None
        return 100.0 * (model - exact) / exact

    @property
    def peak_error_pct(self):
        """(model - exact) / exact in percent; None without a model figure."""
        return self._error(self.model_peak_bytes, self.peak_bytes)

    @property
    def random_bit_error_pct(self):
        return self._error(self.model_random_bit_bytes, self.random_bit_bytes)

    @property
    def wire_error_pct(self):
        return self._error(self.model_rng_wire_bytes, self.rng_wire_bytes)

    def to_json(self):
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "analysis"}
        d["value"] = self.value if isinstance(self.value, (bool, int, float, str)) or \
            self.value is None else repr(self.value)
        d.update(peak_error_pct=self.peak_error_pct, random_bit_error_pct=self.random_bit_error_pct,
                 wire_error_pct=self.wire_error_pct)
        return d


def _size(n):
    if n is None:
        return "-"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return "%.2f %s" % (n / scale, unit)
    return "%d B" % n


def _pct(p):
    return "-" if p is None else "%+.1f%%" % p


class WhatIf:
    """The rows of a what-if: `rows[0]` the baseline, then one per lever value."""

    def __init__(self, target, rows):
        self.target = target
        self.rows = rows

    COLUMNS = ("lever = value", "peak (XLA)", "model", "err", "temp", "bits made", "model",
               "err", "RNG wire", "model", "err", "fits")

    def table_rows(self):
        for r in self.rows:
            label = "baseline" if r.lever == "baseline" else "%s=%r" % (r.lever, r.value)
            fits = "-" if r.fits is None else ("yes" if r.fits else "no")
            yield (label, _size(r.peak_bytes), _size(r.model_peak_bytes), _pct(r.peak_error_pct),
                   _size(r.temp_bytes), _size(r.random_bit_bytes),
                   _size(r.model_random_bit_bytes), _pct(r.random_bit_error_pct),
                   _size(r.rng_wire_bytes), _size(r.model_rng_wire_bytes),
                   _pct(r.wire_error_pct), fits)

    def table(self):
        """The rows as aligned text: the exact figure, the model's, and its error."""
        rows = [self.COLUMNS] + list(self.table_rows())
        widths = [max(len(r[i]) for r in rows) for i in range(len(self.COLUMNS))]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                           for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
        notes = ["%s=%r: %s" % (r.lever, r.value, r.model_basis) for r in self.rows
                 if r.lever != "baseline" and r.model_basis]
        return "\n".join(["what-if on %r (exact: each value compiled)" % self.target] + lines +
                         ["model basis:"] + ["  " + n for n in notes])

    def __str__(self):
        return self.table()

    def _repr_html_(self):
        import html
        head = "".join("<th>%s</th>" % html.escape(c) for c in self.COLUMNS)
        body = "".join("<tr>%s</tr>" % "".join("<td>%s</td>" % html.escape(c) for c in row)
                       for row in self.table_rows())
        return "<table><caption>%s</caption><tr>%s</tr>%s</table>" % (
            html.escape(repr(self.target)), head, body)

    def to_json(self):
        return {"target": repr(self.target), "rows": [r.to_json() for r in self.rows]}


# -- the model's figure for a lever value ---------------------------------------------------------

def _threefry_mode(partitionable):
    return "partitionable" if partitionable else "replicated"


def _model_mode(lever, value, config):
    """The `fit.fixes` / `totals.whatif` name of what a lever value changes to, or None."""
    if lever == "jax_threefry_partitionable":
        return _threefry_mode(bool(value))
    if lever == "jax_default_prng_impl":
        if value in ("rbg", "unsafe_rbg"):
            return "rbg"
        if value == "threefry2x32":
            return _threefry_mode(config.get("jax_threefry_partitionable", True))
    if lever == "jax_threefry_gpu_kernel_lowering" and not value:
        # Without the cu_threefry2x32 custom call XLA:GPU hashes in its own HLO, which its fusion
        # passes put into the consumers (the dropout's select): the bits are not materialized,
        # as the `fused` fix models. The other way (turning the kernel on) has no model.
        return "fused"
    return None


def _model(baseline_dir, baseline_rows_source, target):
    """The baseline's fixes (`check`, every module has them) and RNG what-if totals."""
    args = ["check", baseline_dir, "--stage", "after"]
    dev = target.device_args()
    if dev["device"]:
        args += ["--device", dev["device"]]
    if dev["capacity"] is not None:
        args += ["--capacity", str(dev["capacity"])]
    if dev["mem_fraction"] is not None:
        args += ["--mem-fraction", repr(float(dev["mem_fraction"]))]
    doc, _, _ = _engine.run_json(args)
    step = baseline_rows_source.step
    module = next((m for m in doc["modules"] if m["name"] == step.name), None)
    fixes = {f["fix"]: f for f in ((module or {}).get("fit") or {}).get("fixes", [])}
    whatif = (step.rng.totals.get("whatif", {}) if step.rng else {})
    return fixes, whatif


def _row(lever, value, analysis, stats):
    step = analysis.step
    bits = [s for s in (step.rng.sites if step.rng else []) if s.purpose == "bits"]
    xla = step.memory.xla
    if xla is not None and xla.peak_bytes is not None:
        peak, temp = xla.peak_bytes, xla.temp_bytes
    else:
        peak = stats["argument_size_in_bytes"] + stats["output_size_in_bytes"] - \
            stats["alias_size_in_bytes"] + stats["temp_size_in_bytes"]
        temp = stats["temp_size_in_bytes"]
    return WhatIfRow(lever=lever, value=value, peak_bytes=peak, temp_bytes=temp,
                     memory_analysis=dict(stats),
                     spmdsim_peak_bytes=step.memory.peak_bytes,
                     random_bit_bytes=sum(s.materialized_bytes for s in bits),
                     rng_wire_bytes=sum(s.wire_bytes_per_device for s in bits),
                     fits=step.fit.fits if step.fit else None, analysis=analysis)


def _compile(target, jitted, abstract_args):
    lowered = jitted.lower(*abstract_args)
    out = tempfile.mkdtemp(prefix="spmdsim_whatif_")
    compiled = _jax_dump.compile_with_dump(lowered, out, target.compiler_options())
    analysis = analyze_files([out], compiled=compiled, stage="after_optimizations",
                             **target.device_args())
    stats = _jax_dump.memory_stats(compiled)
    if stats is None:
        raise RuntimeError("%s: compiled.memory_analysis() gives nothing" % target)
    return out, analysis, stats


# Levers that change the step's arguments (a PRNG key is (2,) words under threefry, (4,) under
# rbg): the arguments must be made again under the lever, by a factory.
ARGUMENT_LEVERS = ("jax_default_prng_impl", "jax_enable_custom_prng")


def _build(step, abstract_args, kwargs):
    """The jitted step and its arguments for these function-argument levers."""
    if hasattr(step, "lower"):
        if kwargs:
            raise TypeError("levers %s are not JAX config options: pass a factory "
                            "make_step(**levers) instead of a jitted function" % sorted(kwargs))
        return step, abstract_args
    made = step(**kwargs)
    if isinstance(made, tuple):
        return made[0], tuple(made[1])
    return made, abstract_args


def run_whatif(target, step, abstract_args, levers):
    import jax
    target.devices()
    config_levers = {k: v for k, v in levers.items() if k.startswith("jax_")}
    unknown = sorted(k for k in config_levers if not hasattr(jax.config, k))
    if unknown:
        raise ValueError("not a JAX %s config option: %s" % (jax.__version__, ", ".join(unknown)))
    config = {k: getattr(jax.config, k) for k in config_levers}
    config.setdefault("jax_threefry_partitionable",
                      getattr(jax.config, "jax_threefry_partitionable", True))

    if hasattr(step, "lower"):
        needs_factory = sorted(set(levers) & set(ARGUMENT_LEVERS))
        if needs_factory:
            raise TypeError("%s changes the step's arguments (the key's shape): pass a factory "
                            "make_step(**levers) returning (jitted, abstract_args) that makes "
                            "them under each value" % ", ".join(needs_factory))
    jitted, args = _build(step, abstract_args, {})
    base_dir, base, stats = _compile(target, jitted, args)
    rows = [_row("baseline", None, base, stats)]
    fixes, whatif = _model(base_dir, base, target)

    for lever, values in levers.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, typing.Iterable):
            values = [values]
        for value in values:
            if lever in config_levers:
                old = getattr(jax.config, lever)
                jax.config.update(lever, value)
                try:
                    jitted, args = _build(step, abstract_args, {})
                    _, analysis, stats = _compile(target, jitted, args)
                finally:
                    jax.config.update(lever, old)
                unchanged = value == old
            else:
                jitted, args = _build(step, abstract_args, {lever: value})
                _, analysis, stats = _compile(target, jitted, args)
                unchanged = False
            row = _row(lever, value, analysis, stats)
            _attach_model(row, lever, value, config, unchanged, rows[0], fixes, whatif)
            rows.append(row)
    return WhatIf(target, rows)


def _attach_model(row, lever, value, config, unchanged, base, fixes, whatif):
    if unchanged:
        row.model_peak_bytes = row.model_peak_high_bytes = base.peak_bytes
        row.model_random_bit_bytes = base.random_bit_bytes
        row.model_rng_wire_bytes = base.rng_wire_bytes
        row.model_basis = "the baseline's own value: as compiled"
        return
    mode = _model_mode(lever, value, config)
    if mode is None:
        row.model_basis = "spmdsim has no dump-only model of this lever"
        return
    fix = fixes.get(mode)
    if fix:
        row.model_peak_bytes = fix["peak_bytes"]
        row.model_peak_high_bytes = fix.get("peak_high_bytes", fix["peak_bytes"])
        row.model_basis = fix.get("basis", "")
    else:
        row.model_basis = "the baseline is already %s: no fix to model" % mode
    rng = whatif.get(mode)
    if rng:
        row.model_random_bit_bytes = rng.get("memory_bytes")
        row.model_rng_wire_bytes = rng.get("wire_bytes_per_device")

