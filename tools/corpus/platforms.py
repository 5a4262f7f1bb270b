"""Devices to compile for: XLA:CPU's virtual devices, or a GPU / TPU slice described to XLA's real
compiler through JAX's deviceless ahead-of-time path (nothing is executed; no accelerator needed).

Each platform entry says how the worker subprocess is started (environment) and how it gets
its devices. GPU targets are described by a GpuTargetConfig text proto: the device facts of
the H100 SXM (132 SMs, 80 GB HBM3, compute capability 9.0) as NVIDIA publishes them.
"""

H100_SXM_TARGET = """
gpu_device_info {
  threads_per_block_limit: 1024
  threads_per_warp: 32
  shared_memory_per_block: 49152
  shared_memory_per_core: 233472
  threads_per_core_limit: 2048
  core_count: 132
  fpus_per_core: 128
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  memory_bandwidth: 3352320000000
  l2_cache_size: 52428800
  clock_rate_ghz: 1.98
  device_memory_size: 84942979072
  shared_memory_per_block_optin: 232448
  cuda_compute_capability { major: 9 minor: 0 }
  registers_per_core_limit: 65536
  registers_per_block_limit: 65536
}
platform_name: "CUDA"
dnn_version_info { major: 9 minor: 1 }
device_description_str: "NVIDIA H100 80GB HBM3"
"""

# name -> how to get the devices. `devices` is the device count the meshes are made from.
PLATFORMS = {
    "cpu8": {"kind": "cpu", "devices": 8, "description": "XLA:CPU, 8 virtual host devices"},
    "gpu8": {"kind": "gpu", "devices": 8, "topology": "1x1x8", "target": "h100_sxm",
             "description": "XLA:GPU, 8 x H100 SXM in one node (deviceless AOT compile)"},
    "gpu16": {"kind": "gpu", "devices": 16, "topology": "1x2x8", "target": "h100_sxm",
              "description": "XLA:GPU, 2 nodes of 8 x H100 SXM (deviceless AOT compile)"},
    "tpu4": {"kind": "tpu", "devices": 4, "topology": "v5e:2x2",
             "chips_per_host_bounds": [2, 2, 1],
             "description": "XLA:TPU, TPU v5e 2x2 slice (4 chips, deviceless AOT compile)"},
    "tpu16": {"kind": "tpu", "devices": 16, "topology": "v5e:4x4",
              "chips_per_host_bounds": [2, 2, 1],
              "description": "XLA:TPU, TPU v5e 4x4 slice (16 chips, deviceless AOT compile)"},
}

GPU_TARGETS = {"h100_sxm": H100_SXM_TARGET}


def environment(platform):
    """Environment variables for the worker subprocess (besides XLA_FLAGS)."""
    p = PLATFORMS[platform]
    env = {"JAX_PLATFORMS": "cpu"}
    if p["kind"] == "tpu":
        env["TPU_SKIP_MDS_QUERY"] = "1"
    return env


def xla_flags(platform):
    p = PLATFORMS[platform]
    if p["kind"] == "cpu":
        return ["--xla_force_host_platform_device_count=%d" % p["devices"]]
    if p["kind"] == "gpu":
        # Autotuning needs a GPU; without it XLA picks its default configurations.
        return ["--xla_gpu_autotune_level=0"]
    return []


def make_mesh(platform, shape, axes):
    """A jax.sharding.Mesh of `shape` over the platform's devices."""
    import jax
    import numpy as np
    from jax.experimental import topologies
    from jax.sharding import Mesh

    p = PLATFORMS[platform]
    if p["kind"] == "cpu":
        devices = np.array(jax.devices()[:p["devices"]]).reshape(shape)
        return Mesh(devices, tuple(axes))
    if p["kind"] == "gpu":
        topo = topologies.get_topology_desc(platform="cuda", target_config=GPU_TARGETS[p["target"]],
                                            topology=p["topology"])
    else:
        topo = topologies.get_topology_desc(topology_name=p["topology"], platform="tpu",
                                            chip_config_name="default",
                                            chips_per_host_bounds=tuple(p["chips_per_host_bounds"]),
                                            num_slices=1)
    if len(topo.devices) != p["devices"]:
        raise RuntimeError("%s: topology has %d devices, expected %d" % (
            platform, len(topo.devices), p["devices"]))
    if p["kind"] == "tpu":
        # A 2-wide 'model' axis on a 4x4 torus splits a physical axis, as users of 8x2 meshes do.
        from jax.experimental import mesh_utils
        devices = mesh_utils.create_device_mesh(tuple(shape), devices=topo.devices,
                                                allow_split_physical_axes=True)
        return Mesh(devices, tuple(axes))
    return topologies.make_mesh(topo, tuple(shape), tuple(axes))
