"""Typed views of spmdsim's JSON output. Attribute names are the JSON fields' names
(docs/JSON_SCHEMA.md); every object keeps the whole JSON object it came from in `raw`, so a field
the class does not name is still there. Sizes are exact bytes, as in the JSON."""

import dataclasses
import typing
from dataclasses import dataclass, field

Optional = typing.Optional


def _convert(tp, value):
    """`value` (parsed JSON) as the annotated type `tp`."""
    if value is None:
        return None
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union:  # Optional[X]
        inner = [a for a in args if a is not type(None)]
        return _convert(inner[0], value) if len(inner) == 1 else value
    if origin is list and args:
        return [_convert(args[0], v) for v in value]
    if isinstance(tp, type) and dataclasses.is_dataclass(tp) and isinstance(value, dict):
        return tp.from_json(value)
    return value


class _Record:
    """Built from a JSON object: each declared field from the key of its name."""

    @classmethod
    def from_json(cls, obj):
        hints = typing.get_type_hints(cls)
        kwargs = {}
        for f in dataclasses.fields(cls):
            if f.name == "raw":
                continue
            if f.name in obj:
                kwargs[f.name] = _convert(hints[f.name], obj[f.name])
        return cls(raw=obj, **kwargs)


def _raw():
    return field(default_factory=dict, repr=False, compare=False)


@dataclass
class LiveBuffer(_Record):
    """A buffer live at the peak (`memory.live_at_peak[]`) or at a position
    (`memory.live_at.buffers[]`, which also name its `category`)."""
    size_bytes: int = 0
    instruction: str = ""
    index: str = ""
    opcode: str = ""
    shape: str = ""
    op_name: str = ""
    source: str = ""
    kind: str = ""
    category: str = ""
    raw: dict = _raw()


@dataclass
class LiveAt(_Record):
    """What is live at one schedule position (`spmdsim analyze --at`, `memory.live_at`)."""
    position: int = 0
    instruction: str = ""
    opcode: str = ""
    live_bytes: int = 0
    count: int = 0
    buffers: typing.List[LiveBuffer] = field(default_factory=list)
    raw: dict = _raw()




@dataclass
class XlaFigures(_Record):
    """XLA's own figures found beside the dump (`memory.xla`): its `memory_analysis()` when
    saved, else its buffer assignment."""
    source: str = ""
    peak_bytes: Optional[int] = None
    argument_bytes: Optional[int] = None
    output_bytes: Optional[int] = None
    alias_bytes: Optional[int] = None
    temp_bytes: Optional[int] = None
    temp_source: str = ""
    memory_analysis: dict = field(default_factory=dict)
    raw: dict = _raw()


@dataclass
class Memory(_Record):
    """Peak memory per device (`memory`)."""
    peak_bytes: int = 0
    argument_bytes: int = 0
    output_bytes: int = 0
    alias_bytes: int = 0
    temp_bytes: int = 0
    num_partitions: int = 1
    peak_instruction: str = ""
    peak_opcode: str = ""
    live_at_peak: typing.List[LiveBuffer] = field(default_factory=list)
    timeline: list = field(default_factory=list)
    notes: typing.List[str] = field(default_factory=list)
    platform: dict = field(default_factory=dict)
    xla: Optional[XlaFigures] = None
    raw: dict = _raw()


@dataclass
class Fix(_Record):
    """One fix ranked by the peak it gives (`fit.fixes[]`)."""
    fix: str = ""
    action: str = ""
    peak_bytes: int = 0
    peak_high_bytes: int = 0
    fits: Optional[bool] = None
    wire_bytes_per_device: int = 0
    host_bytes_per_step: int = 0
    cost: str = ""
    basis: str = ""
    raw: dict = _raw()


@dataclass
class Fit(_Record):
    """Does the peak fit the device (`fit`)."""
    peak_bytes: int = 0
    fits: Optional[bool] = None
    unknown: str = ""
    margin_bytes: int = 0
    device: Optional[str] = None
    device_name: str = ""
    usable_bytes: int = 0
    memory_bytes: Optional[int] = None
    reserved_bytes: int = 0
    memory_fraction: Optional[float] = None
    memory_fraction_that_fits: Optional[float] = None
    basis: str = ""
    decided_by: str = ""
    random_bits_at_peak_bytes: int = 0
    fixes: typing.List[Fix] = field(default_factory=list)
    raw: dict = _raw()


@dataclass
class CollectiveOp(_Record):
    """One collective (`collectives.ops[]`)."""
    instruction: str = ""
    kind: str = ""
    opcode: str = ""
    computation: str = ""
    group_size: int = 0
    group_count: int = 0
    mesh_axes: str = ""
    bytes: int = 0
    wire_bytes_per_device: int = 0
    est_time_us: float = 0.0
    loop_multiplier: int = 1
    op_name: str = ""
    source: str = ""
    raw: dict = _raw()


@dataclass
class Collectives(_Record):
    """Every collective and the totals per step (`collectives`)."""
    num_devices: int = 1
    topology: str = ""
    ops: typing.List[CollectiveOp] = field(default_factory=list)
    total_wire_bytes_per_device: int = 0
    intra_node_bytes_per_device: int = 0
    inter_node_bytes_per_device: int = 0
    by_kind: dict = field(default_factory=dict)
    est_time_us: float = 0.0
    notes: typing.List[str] = field(default_factory=list)
    raw: dict = _raw()


@dataclass
class Finding(_Record):
    """An RNG finding (`findings[]`): `rng-key-residual`, `rng-depends-on-partition`, ..."""
    kind: str = ""
    severity: str = ""
    bytes: int = 0
    saving_bytes: int = 0
    site: str = ""
    op_name: str = ""
    source: str = ""
    message: str = ""
    values: typing.List[str] = field(default_factory=list)
    raw: dict = _raw()


@dataclass
class RngSite(_Record):
    """One random draw (`rng.sites[]`)."""
    name: str = ""
    computation: str = ""
    kind: str = ""
    mode: str = ""
    purpose: str = ""
    draws: str = ""
    phase: str = ""
    shape: typing.List[int] = field(default_factory=list)
    dtype: str = ""
    shards: int = 1
    op_name: str = ""
    source: str = ""
    materialized_bytes: int = 0
    wire_bytes_per_device: int = 0
    key_depends_on_partition: bool = False
    whatif: dict = field(default_factory=dict)
    raw: dict = _raw()


@dataclass
class Rng(_Record):
    """Random numbers of a module (`rng`)."""
    num_partitions: int = 1
    partitioned: bool = True
    sites: typing.List[RngSite] = field(default_factory=list)
    totals: dict = field(default_factory=dict)
    findings: typing.List[Finding] = field(default_factory=list)
    notes: typing.List[str] = field(default_factory=list)
    backward_start: dict = field(default_factory=dict)
    remat_whatif: Optional[dict] = None
    raw: dict = _raw()

    @property
    def bits_sites(self):
        """The sites that draw random values (not key derivations)."""
        return [s for s in self.sites if s.purpose == "bits"]

    @property
    def random_bit_bytes(self):
        """Bytes per device of the buffers holding random values (`totals.materialized_bytes`)."""
        return int(self.totals.get("materialized_bytes", 0))

    @property
    def wire_bytes_per_device(self):
        """Bytes the RNG's collectives send per device per step."""
        return int(self.totals.get("wire_bytes_per_device", 0))


@dataclass
class Module:
    """One HLO module and every analysis of it."""
    name: str
    file: str
    stage: str
    memory: Optional[Memory] = None
    fit: Optional[Fit] = None
    collectives: Optional[Collectives] = None
    rng: Optional[Rng] = None
    findings: typing.List[Finding] = field(default_factory=list)

    @property
    def peak_bytes(self):
        return self.memory.peak_bytes if self.memory else None

    @property
    def fits(self):
        return self.fit.fits if self.fit else None
