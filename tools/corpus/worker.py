"""Compile one corpus cell. Runs in its own subprocess, started by tools/gen_dumps.py with
XLA_FLAGS (--xla_dump_to) and JAX_PLATFORMS already set, so that nothing is imported before
the flags are in place.

  python tools/corpus/worker.py CELL RESULT_DIR

Writes into RESULT_DIR, per compiled function: <jit_name>.memory_analysis.json (every numeric
field of compiled.memory_analysis()), <jit_name>.cost_analysis.json, <jit_name>.as_text.txt
(compiled.as_text()), and one program.json describing the cell (mesh, flags, versions, draws).
"""

import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from corpus import cells, platforms, thirdparty  # noqa: E402


def json_safe(v):
    if isinstance(v, dict):
        return {str(k): json_safe(x) for k, x in sorted(v.items())}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if isinstance(v, (int, str, bool)) or v is None:
        return v
    if hasattr(v, "item"):
        return json_safe(v.item())
    return str(v)


def memory_stats(compiled):
    ma = compiled.memory_analysis()
    mem = {}
    for attr in sorted(dir(ma)):
        if attr.startswith("_") or attr == "serialized_buffer_assignment_proto":
            continue
        v = getattr(ma, attr)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            mem[attr] = v
    return mem


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")


def init_draws(params):
    """Random draws of a flax init: one per kernel or embedding table (flax's default
    initializers draw those; biases and LayerNorm scales are constants)."""
    import jax
    out = []
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        name = jax.tree_util.keystr(path)
        if "kernel" in name or "embedding" in name:
            out.append({"scope": name, "shape": list(leaf.shape), "bits": 32,
                        "kind": "init", "executions_per_step": 1})
    return out


def main(cell_name, result_dir):
    cell = cells.BY_NAME[cell_name]
    prog = cell["program"]
    import jax
    jax.config.update("jax_threefry_partitionable", prog["threefry_partitionable"])
    jax.config.update("jax_default_prng_impl", prog["prng_impl"])
    if prog["gpu_kernel_lowering"]:
        jax.config.update("jax_threefry_gpu_kernel_lowering", True)
    models = thirdparty.program_module(prog)  # corpus.models or corpus.thirdparty.<module>

    plat = platforms.PLATFORMS[cell["platform"]]
    mesh_desc = cells.mesh_for(prog, plat["devices"])
    mesh = platforms.make_mesh(cell["platform"], mesh_desc["shape"], mesh_desc["axes"])
    functions, draws, facts = models.build_program(prog, mesh)

    os.makedirs(result_dir, exist_ok=True)
    modules = []
    timing = {}
    for jit_name, fn, args, role in functions:
        draws.sites.clear()
        t0 = time.time()
        lowered = fn.lower(*args)
        t1 = time.time()
        compiled = lowered.compile()
        t2 = time.time()
        timing[jit_name] = {"lower_s": round(t1 - t0, 2), "compile_s": round(t2 - t1, 2)}
        summary = draws.summary()
        if role == "init":
            summary["draws"] = init_draws(jax.eval_shape(lambda k: fn(k), *args))
            summary["sites"] = summary["per_step"] = len(summary["draws"])
        write_json(os.path.join(result_dir, jit_name + ".memory_analysis.json"),
                   memory_stats(compiled))
        write_json(os.path.join(result_dir, jit_name + ".cost_analysis.json"),
                   json_safe(compiled.cost_analysis()))
        with open(os.path.join(result_dir, jit_name + ".as_text.txt"), "w") as f:
            f.write(compiled.as_text())
        modules.append({"jit_name": jit_name, "role": role, "random_draws": summary})

    import jaxlib
    info = {
        "name": cell["name"],
        "description": prog["description"],
        "env": cell["env"],
        "platform": cell["platform"],
        "platform_description": plat["description"],
        "num_devices": plat["devices"],
        "mesh": mesh_desc,
        "jax_version": jax.__version__,
        "jaxlib_version": jaxlib.__version__,
        "jax_config": {
            "jax_threefry_partitionable": bool(jax.config.jax_threefry_partitionable),
            "jax_default_prng_impl": str(jax.config.jax_default_prng_impl),
            "jax_threefry_gpu_kernel_lowering": bool(jax.config.jax_threefry_gpu_kernel_lowering),
        },
        "program": {k: prog[k] for k in ("family", "size", "sharding", "layers", "remat",
                                         "grad_accum_microbatches", "shard_map_key", "modules")},
        "model": dict(prog["model"], **{k: v for k, v in facts.items() if k != "program_json"}),
        "modules": modules,
        "optimizer": "optax.adam(1e-3)",
        "donate_argnums": [0, 1], **facts.get("program_json", {}),
    }
    write_json(os.path.join(result_dir, "program.json"), info)
    print(json.dumps(timing))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
