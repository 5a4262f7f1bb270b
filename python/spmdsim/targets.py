"""spmdsim.Target: a GPU or TPU slice (or XLA:CPU's host devices) to compile for without the
hardware, through JAX's deviceless ahead-of-time path, and read back with spmdsim."""

import importlib.util
import os
import tempfile

from . import _devices, _jax_dump
from .analysis import analyze_files


class TargetUnavailable(RuntimeError):
    """This Python environment cannot compile for the target (a plugin is missing)."""


def _jax():
    try:
        import jax
    except ImportError:
        raise TargetUnavailable("compiling needs JAX: pip install jax") from None
    return jax


def _has_module(name):
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:  # a parent package that is not there
        return False


def _backends_initialized():
    from jax._src import xla_bridge
    probe = getattr(xla_bridge, "backends_are_initialized", None)
    if probe is not None:
        return probe()
    return bool(getattr(xla_bridge, "_backends", {}))


class Target:
    """Devices to compile for.

        Target("h100", devices=8)       8 H100s in one node (also h200, a100-80g, a100-40g, b200)
        Target("h100", 16)              2 nodes of 8
        Target("v5e", "2x4")            a TPU v5e slice of 2x4 chips (also v5p "2x2x2", v6e)
        Target("cpu", 8)                XLA:CPU with 8 host devices

    capacity / mem_fraction: what the fit verdict judges against, as the binary's --capacity and
    --mem-fraction (default: the device's memory as its runtime gives it to XLA)."""

    def __init__(self, kind, devices=None, capacity=None, mem_fraction=None):
        self.kind = _devices.canonical(kind)
        self.capacity = capacity
        self.mem_fraction = mem_fraction
        if self.kind in _devices.GPUS:
            self.platform = "gpu"
            self._count = int(devices or _devices.GPUS_PER_NODE)
            self.topology = _devices.gpu_topology(self._count)
            self.device = _devices.GPUS[self.kind]["spmdsim"]
        elif self.kind in _devices.TPUS:
            self.platform = "tpu"
            grid = devices if isinstance(devices, str) else None
            if grid is None:
                raise ValueError('a TPU target names its chip grid: Target("%s", "2x4")' %
                                 self.kind)
            self._chips = _devices.tpu_chips(self.kind, grid)
            self.topology = "%s:%s" % (self.kind, grid.lower())
            self.device = _devices.TPUS[self.kind]["spmdsim"]
        elif self.kind == "cpu":
            self.platform = "cpu"
            self._count = int(devices or 1)
            self.topology = None
            self.device = None
        else:
            known = sorted(_devices.GPUS) + sorted(_devices.TPUS) + ["cpu"]
            raise ValueError("unknown target %r (known: %s)" % (kind, ", ".join(known)))
        self._devices = None
        self._topology = None

    def __repr__(self):
        where = self.topology or "%d host devices" % self._count
        return "Target(%r, %s)" % (self.kind, where)

    @property
    def num_devices(self):
        """JAX devices of the target: GPUs, host devices, or the devices libtpu's topology makes
        of the chips (one per chip on v5e, v5p and v6e)."""
        if self.platform == "tpu":
            return len(self.devices())
        return self._count

    # -- devices ------------------------------------------------------------------------------

    def devices(self):
        """The target's JAX devices (deviceless for GPU and TPU: they compile, they do not run)."""
        if self._devices is None:
            self._devices = self._make_devices()
        return self._devices

    def _make_devices(self):
        jax = _jax()
        if self.platform == "cpu":
            return self._cpu_devices(jax)
        from jax.experimental import topologies
        if self.platform == "gpu":
            if not (_has_module("jax_plugins.xla_cuda12") or _has_module("jax_cuda12_plugin")):
                raise TargetUnavailable(
                    "compiling for %s needs XLA:GPU's compiler: pip install "
                    "'jax-cuda12-plugin==%s' (no GPU needed)" % (self.kind, jax.__version__))
            topo = topologies.get_topology_desc(
                platform="cuda", target_config=_devices.gpu_target_config(self.kind),
                topology=self.topology)
        else:
            if not _has_module("libtpu"):
                raise TargetUnavailable(
                    "compiling for TPU %s needs libtpu: pip install 'jax[tpu]==%s' "
                    "(no TPU needed)" % (self.kind, jax.__version__))
            # Off Google Cloud, libtpu must not ask the metadata server for a TPU it lacks.
            os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
            topo = topologies.get_topology_desc(
                topology_name=self.topology, platform="tpu", chip_config_name="default",
                chips_per_host_bounds=(2, 2, 1), num_slices=1)
        self._topology = topo
        if self.platform == "gpu" and len(topo.devices) != self._count:
            raise TargetUnavailable("%s: XLA's topology has %d devices, expected %d" %
                                    (self, len(topo.devices), self._count))
        return list(topo.devices)

    def _cpu_devices(self, jax):
        if not _backends_initialized():
            try:
                jax.config.update("jax_num_cpu_devices", self._count)
            except (AttributeError, ValueError, KeyError):
                # JAX before jax_num_cpu_devices: XLA reads the flag when the backend starts.
                flag = "--xla_force_host_platform_device_count=%d" % self._count
                os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()
        devices = jax.devices("cpu")
        if len(devices) < self._count:
            raise TargetUnavailable(
                "XLA:CPU has %d device(s) in this process, the target %d: JAX started before "
                "the target was made. Make the Target before any JAX computation, or set "
                "XLA_FLAGS=--xla_force_host_platform_device_count=%d before Python starts" %
                (len(devices), self._count, self._count))
        return devices[:self._count]

    def mesh(self, shape, axes):
        """A jax.sharding.Mesh of `shape` (named `axes`) over the target's devices."""
        jax = _jax()
        import numpy as np
        from jax.sharding import Mesh
        shape, axes = tuple(shape), tuple(axes)
        devices = self.devices()
        n = 1
        for s in shape:
            n *= s
        if n != len(devices):
            raise ValueError("mesh %s has %d devices; %s has %d" % (shape, n, self,
                                                                    len(devices)))
        if self.platform == "tpu":
            from jax.experimental import mesh_utils
            grid = mesh_utils.create_device_mesh(shape, devices=devices,
                                                 allow_split_physical_axes=True)
            return Mesh(grid, axes)
        if self.platform == "gpu":
            # JAX orders a GPU topology's devices for the mesh (NVLink within a node).
            from jax.experimental import topologies
            return topologies.make_mesh(self._topology, shape, axes)
        del jax
        return Mesh(np.array(devices).reshape(shape), axes)

    # -- compiling ----------------------------------------------------------------------------

    def compiler_options(self):
        """XLA options every compile for this target needs."""
        if self.platform == "gpu":
            # Autotuning runs kernels on a GPU; deviceless, XLA keeps its default configurations.
            return {"xla_gpu_autotune_level": 0}
        return {}

    def device_args(self):
        return dict(device=self.device, capacity=self.capacity, mem_fraction=self.mem_fraction)

    def compile(self, jitted, *abstract_args, dump_dir=None, **abstract_kwargs):
        """Compiles `jitted` (a jax.jit function) for the target with XLA's dumps on and returns
        spmdsim's Analysis of it (`.compiled` is the JAX Compiled, `.xla_memory_analysis` its
        memory_analysis() fields)."""
        self.devices()  # fails early, with the plugin to install, where one is missing
        lowered = jitted.lower(*abstract_args, **abstract_kwargs)
        out = dump_dir or tempfile.mkdtemp(prefix="spmdsim_%s_" % self.kind)
        compiled = _jax_dump.compile_with_dump(lowered, out, self.compiler_options())
        analysis = analyze_files([out], compiled=compiled, stage="after_optimizations",
                                 **self.device_args())
        analysis.xla_memory_analysis = _jax_dump.memory_stats(compiled)
        analysis.target = self
        return analysis

    def whatif(self, step, *abstract_args, **levers):
        """Recompiles the step once per lever value and returns the exact figures beside the
        dump-only model's prediction (spmdsim.whatif.WhatIf)."""
        from .whatif import run_whatif
        return run_whatif(self, step, abstract_args, levers)

