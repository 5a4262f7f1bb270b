#!/usr/bin/env python3
"""Lower a sharded dropout training step for the CUDA platform, without a GPU, and keep XLA's HLO.

XLA:GPU cannot compile here (no GPU), but JAX lowers for any platform: `jit(...).trace(...)
.lower(lowering_platforms=("cuda",))` gives the module XLA:GPU would start from, and
`as_text(dialect="hlo", debug_info=True)` prints it with XLA's own HLO printer and metadata: the
content of the `*.before_optimizations.txt` file that `--xla_dump_to` writes on a GPU machine.
It shows the two GPU threefry lowerings spmdsim must recognise:

  unrolled   jax_threefry_gpu_kernel_lowering=False (JAX's default): the 20 rounds as
             elementwise ops in a `threefry2x32` computation reached by `call`
  kernel     jax_threefry_gpu_kernel_lowering=True: a `cu_threefry2x32_ffi` custom call

each in both counter modes (jax_threefry_partitionable True / False), on 8 devices (data
parallel, batch sharded). The unrolled variants are also compiled by XLA:CPU (SPMD-partitioned
for 8 devices), which keeps `<variant>.cpu_after_optimizations.txt` with its buffer-assignment
and live-range files: the hash fused into loop fusions, as XLA fuses elementwise work. Each
variant runs in its own process so the flags are set before jax is imported. Output:
testdata/gpu_lowered/<variant>.* and testdata/gpu_lowered/manifest.json (flags, model, XLA's
memory figures, for the tests' expectations).

Usage: .venv/bin/python tools/gen_gpu_lowered.py [--out DIR]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "testdata", "gpu_lowered")
MODEL = dict(layers=2, batch=16, width=64, hidden=256, dropout_rate=0.1, devices=8)
VARIANTS = [
    dict(name=f"mlp_dp8_{mode}_{lowering}", partitionable=mode == "partitionable",
         gpu_kernel=lowering == "kernel")
    for mode in ("partitionable", "replicated") for lowering in ("unrolled", "kernel")
]


def worker(variant, path, dump_dir):
    os.environ["XLA_FLAGS"] = (f"--xla_force_host_platform_device_count={MODEL['devices']} "
                               f"--xla_dump_to={dump_dir} --xla_dump_hlo_as_text")
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    jax.config.update("jax_threefry_partitionable", variant["partitionable"])
    jax.config.update("jax_threefry_gpu_kernel_lowering", variant["gpu_kernel"])
    mesh = Mesh(jax.devices()[: MODEL["devices"]], ("data",))
    rate = MODEL["dropout_rate"]

    def dropout(x, key):
        keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
        return jnp.where(keep, x / (1.0 - rate), 0.0)

    def loss_fn(params, x, key):
        for i, (w1, w2) in enumerate(params):
            h = jax.nn.gelu(x @ w1)
            h = dropout(h, jax.random.fold_in(key, i))
            x = x + h @ w2
        return jnp.mean(x * x)

    def train_step(params, x, key):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, key)
        return loss, jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads)

    d, f = MODEL["width"], MODEL["hidden"]
    params = [(jax.ShapeDtypeStruct((d, f), jnp.float32), jax.ShapeDtypeStruct((f, d), jnp.float32))
              for _ in range(MODEL["layers"])]
    x = jax.ShapeDtypeStruct((MODEL["batch"], d), jnp.float32)
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    replicated = NamedSharding(mesh, P())
    jitted = jax.jit(train_step,
                     in_shardings=(replicated, NamedSharding(mesh, P("data", None)), replicated),
                     out_shardings=(replicated, replicated))
    lowered = jitted.trace(params, x, key).lower(lowering_platforms=("cuda",))
    with open(path, "w") as out:
        out.write(lowered.as_text(dialect="hlo", debug_info=True))
    info = {"jax_version": jax.__version__}
    if not variant["gpu_kernel"]:
        # The unrolled rounds are plain HLO: XLA:CPU can compile the CUDA lowering, and its
        # optimized, SPMD-partitioned module shows the hash fused the way XLA fuses elementwise
        # work on any backend (the custom call has no CPU implementation).
        import numpy as np
        from jax._src import compiler
        from jax._src.lib import xla_client

        client = jax.devices("cpu")[0].client
        devices = jax.devices("cpu")[: MODEL["devices"]]
        options = compiler.get_compile_options(
            num_replicas=1, num_partitions=MODEL["devices"],
            device_assignment=np.arange(MODEL["devices"]).reshape(1, -1), backend=client)
        options.executable_build_options.use_spmd_partitioning = True
        text = lowered.compiler_ir("stablehlo").operation.get_asm(enable_debug_info=True)
        compiled = client.compile_and_load(text, xla_client.DeviceList(tuple(devices)), options)
        stats = compiled.get_compiled_memory_stats()
        info["cpu_memory_analysis"] = {
            name: getattr(stats, name)
            for name in ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
                         "temp_size_in_bytes")}
    return info


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        variant = json.loads(args.worker)
        with tempfile.TemporaryDirectory() as dump_dir:
            info = worker(variant,
                          os.path.join(args.out, variant["name"] + ".before_optimizations.txt"),
                          dump_dir)
            # XLA:CPU's files for the compiled unrolled variants, renamed after the variant.
            for name in sorted(os.listdir(dump_dir)):
                match = re.match(r"module_\d+\.jit_train_step\.(cpu_after_optimizations"
                                 r"(-buffer-assignment|-live-range)?\.txt)$", name)
                if match:
                    shutil.copyfile(os.path.join(dump_dir, name),
                                    os.path.join(args.out, variant["name"] + "." + match.group(1)))
        print(json.dumps(info))
        return 0
    os.makedirs(args.out, exist_ok=True)
    entries = []
    for variant in VARIANTS:
        run = subprocess.run([sys.executable, __file__, "--out", args.out, "--worker",
                              json.dumps(variant)], capture_output=True, text=True, check=True)
        info = json.loads(run.stdout.strip().splitlines()[-1])
        entry = dict(variant, file=variant["name"] + ".before_optimizations.txt",
                     platform="cuda", **info)
        if "cpu_memory_analysis" in info:
            entry["cpu_after_optimizations"] = variant["name"] + ".cpu_after_optimizations.txt"
        entries.append(entry)
    manifest = {"model": MODEL, "dropout_sites": MODEL["layers"], "variants": entries}
    with open(os.path.join(args.out, "manifest.json"), "w") as out:
        json.dump(manifest, out, indent=2, sort_keys=True)
        out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
