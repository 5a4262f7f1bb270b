#!/usr/bin/env python3
"""Writes testdata/replicas/pmap_cpu8: a real XLA dump of a program whose devices are replicas.

PyTorch/XLA and jax.pmap hand XLA replica-based programs: the module says `replica_count=8` and
has no `num_partitions`, and its collectives name replica ids. This compiles a data-parallel SGD
step with dropout under jax.pmap for 8 XLA:CPU devices and keeps XLA's dump files and
memory_analysis() beside them, as tools/gen_dumps.py does for the SPMD corpus.

    .venv-jax0.4.30/bin/python tools/gen_replica_dump.py   (JAX 0.5 and later implement pmap
                                                          with SPMD partitions instead)
"""
import json
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "testdata", "replicas", "pmap_cpu8")
DEVICES = 8


def main():
    dump = tempfile.mkdtemp(prefix="spmdsim_pmap_")
    os.environ["XLA_FLAGS"] = (f"--xla_force_host_platform_device_count={DEVICES} "
                               f"--xla_dump_to={dump} --xla_dump_hlo_as_text "
                               )
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    import jax.numpy as jnp

    def loss(params, x, y, key):
        h = jnp.tanh(x @ params["w1"])
        keep = jax.random.bernoulli(key, 0.9, h.shape)
        h = jnp.where(keep, h / 0.9, 0)
        return jnp.mean((h @ params["w2"] - y) ** 2)

    def train_step(params, x, y, key):
        key = jax.random.fold_in(key, jax.lax.axis_index("batch"))
        grads = jax.grad(loss)(params, x, y, key)
        grads = jax.lax.pmean(grads, "batch")
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)

    step = jax.pmap(train_step, axis_name="batch")
    params = {"w1": jnp.zeros((DEVICES, 64, 256)), "w2": jnp.zeros((DEVICES, 256, 16))}
    x = jnp.zeros((DEVICES, 32, 64))
    y = jnp.zeros((DEVICES, 32, 16))
    keys = jnp.stack([jax.random.PRNGKey(0)] * DEVICES)
    compiled = step.lower(params, x, y, keys).compile()
    memory = compiled.memory_analysis()

    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    kept = []
    for name in sorted(os.listdir(dump)):
        if "train_step" not in name or not name.endswith(".txt"):
            continue
        if "before_optimizations" in name or "cpu_after_optimizations" in name:
            shutil.copy(os.path.join(dump, name), OUT)
            kept.append(name)
    fields = ["argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
              "temp_size_in_bytes", "generated_code_size_in_bytes"]
    with open(os.path.join(OUT, "memory_analysis.json"), "w") as f:
        json.dump({k: int(getattr(memory, k)) for k in fields}, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(OUT, "program.json"), "w") as f:
        json.dump({"jax_version": jax.__version__, "devices": DEVICES, "transform": "jax.pmap",
                   "replica_count": DEVICES, "files": kept}, f, indent=1, sort_keys=True)
        f.write("\n")
    if not kept:
        print("no dump file matched; XLA wrote: " + ", ".join(sorted(os.listdir(dump))),
              file=sys.stderr)
        return 1
    shutil.rmtree(dump)
    print(f"wrote {len(kept)} dump files to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
