"""spmdsim: what a sharded JAX/XLA program costs per device (peak memory and whether it fits,
every collective, the price of its random numbers), from XLA's dump, without the cluster.

    import spmdsim
    a = spmdsim.analyze("/tmp/dump")                 # a --xla_dump_to directory or HLO file
    a = spmdsim.analyze(step.lower(*args))           # a JAX Lowered (or Compiled)
    t = spmdsim.Target("h100", devices=8)            # compile for hardware you do not have
    a = t.compile(step, *abstract_args)
    t.whatif(step, *abstract_args, jax_threefry_partitionable=[True, False])

The C++ binary `spmdsim` does the analysis; this package runs it and reads its JSON
(docs/JSON_SCHEMA.md) into typed objects. docs/PYTHON.md is the guide.
"""

from ._engine import SpmdsimError, SpmdsimParseError, binary_path
from .analysis import Analysis, analyze
from .results import (Collectives, CollectiveOp, Finding, Fit, Fix, LiveAt, LiveBuffer, Memory,
                      Module, Rng, RngSite, XlaFigures)
from .targets import Target, TargetUnavailable
from .whatif import WhatIf, WhatIfRow

__version__ = "0.1.0"

__all__ = ["Analysis", "Collectives", "CollectiveOp", "Finding", "Fit", "Fix", "LiveAt", "LiveBuffer",
           "Memory", "Module", "Rng", "RngSite", "SpmdsimError", "SpmdsimParseError", "Target",
           "TargetUnavailable", "WhatIf", "WhatIfRow", "XlaFigures", "analyze", "binary_path"]
