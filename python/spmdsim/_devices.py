"""The devices a Target compiles for, without the hardware.

GPUs are described to XLA:GPU by a GpuTargetConfig text proto, as JAX's deviceless path
(jax.experimental.topologies with target_config) takes it. The facts of each GPU are those of
XLA's own device specs (xla/backends/gpu/target_config/specs/*.txtpb: h100_sxm, h200,
a100_sxm_80, a100_sxm_40, b200), which in turn are what the CUDA driver reports; docs/PYTHON.md
lists them. TPUs are named to libtpu by generation and chip grid ("v5e:2x4").

`spmdsim` is the device's name in the binary's device table (--device, docs/DEVICES.md), which
judges whether the peak fits.
"""

GPUS = {
    "h100": dict(spmdsim="h100-80gb", name="NVIDIA H100 80GB HBM3", cc=(9, 0), cores=132,
                 fpus=128, smem_core=233472, smem_optin=232448, bandwidth=3352320000000,
                 l2=52428800, clock_ghz=1.98, memory=84942979072),
    "h200": dict(spmdsim="h200", name="NVIDIA H200 141GB HBM3e", cc=(9, 0), cores=132, fpus=128,
                 smem_core=233472, smem_optin=232448, bandwidth=4800000000000, l2=52428800,
                 clock_ghz=1.98, memory=151397597184),
    "a100-80g": dict(spmdsim="a100-80gb", name="NVIDIA A100-SXM4-80GB", cc=(8, 0), cores=108,
                     fpus=64, smem_core=167936, smem_optin=166912, bandwidth=2039040000000,
                     l2=41943040, clock_ghz=1.41, memory=85100068864),
    "a100-40g": dict(spmdsim="a100-40gb", name="NVIDIA A100-SXM4-40GB", cc=(8, 0), cores=108,
                     fpus=64, smem_core=167936, smem_optin=166912, bandwidth=1555200000000,
                     l2=41943040, clock_ghz=1.41, memory=42331013120),
    "b200": dict(spmdsim="b200", name="NVIDIA B200", cc=(10, 0), cores=148, fpus=128,
                 smem_core=233472, smem_optin=232448, bandwidth=7672320000000, l2=132644864,
                 clock_ghz=1.965, memory=191514411008),
}

# GPUs per node: the NVLink domain of an HGX/DGX board. Past it, devices are on more nodes.
GPUS_PER_NODE = 8

TPUS = {
    "v5e": dict(spmdsim="tpu-v5e", dims=2),
    "v5p": dict(spmdsim="tpu-v5p", dims=3),
    "v6e": dict(spmdsim="tpu-v6e", dims=2),
}
# TPU v4 is left out: libtpu's deviceless v4 topology makes one device per TensorCore, which
# JAX's TPU meshes refuse ("megacore" mode wants one per chip).

ALIASES = {
    "h100-80g": "h100", "h100-80gb": "h100", "h100-sxm": "h100", "h200-141g": "h200",
    "a100": "a100-80g", "a100-80gb": "a100-80g", "a100-40gb": "a100-40g",
    "tpu-v5e": "v5e", "v5litepod": "v5e", "tpu-v5p": "v5p", "tpu-v6e": "v6e",
}


def canonical(kind):
    k = kind.strip().lower()
    return ALIASES.get(k, k)


def gpu_target_config(kind):
    """The GpuTargetConfig text proto of a GPU of GPUS."""
    g = GPUS[kind]
    return "\n".join([
        "gpu_device_info {",
        "  threads_per_block_limit: 1024",
        "  threads_per_warp: 32",
        "  shared_memory_per_block: 49152",
        "  shared_memory_per_core: %d" % g["smem_core"],
        "  threads_per_core_limit: 2048",
        "  core_count: %d" % g["cores"],
        "  fpus_per_core: %d" % g["fpus"],
        "  block_dim_limit_x: 2147483647",
        "  block_dim_limit_y: 65535",
        "  block_dim_limit_z: 65535",
        "  memory_bandwidth: %d" % g["bandwidth"],
        "  l2_cache_size: %d" % g["l2"],
        "  clock_rate_ghz: %s" % g["clock_ghz"],
        "  device_memory_size: %d" % g["memory"],
        "  shared_memory_per_block_optin: %d" % g["smem_optin"],
        "  cuda_compute_capability { major: %d minor: %d }" % g["cc"],
        "  registers_per_core_limit: 65536",
        "  registers_per_block_limit: 65536",
        "}",
        'platform_name: "CUDA"',
        "dnn_version_info { major: 9 minor: 1 }",
        'device_description_str: "%s"' % g["name"],
        ""])


def gpu_topology(devices):
    """JAX's deviceless GPU topology string "slices x hosts x devices per host"."""
    if devices <= GPUS_PER_NODE:
        return "1x1x%d" % devices
    if devices % GPUS_PER_NODE:
        raise ValueError("%d GPUs: more than one node takes whole nodes of %d" %
                         (devices, GPUS_PER_NODE))
    return "1x%dx%d" % (devices // GPUS_PER_NODE, GPUS_PER_NODE)


def tpu_chips(kind, grid):
    """Chips of a TPU grid such as "2x4" (v5e, v6e) or "2x2x2" (v5p)."""
    dims = [int(d) for d in grid.lower().split("x")]
    want = TPUS[kind]["dims"]
    if len(dims) != want or any(d < 1 for d in dims):
        raise ValueError("TPU %s takes a %d-dimensional chip grid such as %s, not %r" %
                         (kind, want, "2x4" if want == 2 else "2x2x2", grid))
    n = 1
    for d in dims:
        n *= d
    return n
