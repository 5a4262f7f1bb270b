#!/usr/bin/env python3
"""Generate the ground-truth corpus of real XLA HLO dumps for spmdsim.

Each program is a transformer training step written in plain JAX (embedding, N blocks of
layernorm / multi-head self-attention / dropout / MLP / dropout, final layernorm, logits,
softmax cross-entropy, value_and_grad, optax.adam), jitted with NamedSharding on 8 virtual
CPU devices and compiled from abstract inputs (never executed).

Every program is compiled in its own subprocess so that XLA_FLAGS (--xla_dump_to) and the
jax.config flags are set before jax is imported. From the dump directory only the main
train-step module's files are kept, next to memory_analysis.json, cost_analysis.json and
program.json. Files over 1 MB are gzipped deterministically (gzip -n -9 equivalent).

Usage:
  .venv/bin/python tools/gen_dumps.py                 # all programs into testdata/dumps/
  .venv/bin/python tools/gen_dumps.py --only NAME     # one program (repeatable)
  .venv/bin/python tools/gen_dumps.py --list
  .venv/bin/python tools/gen_dumps.py --out DIR --no-manifest
"""

import argparse
import gzip
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "testdata", "dumps")
MANIFEST = os.path.join(REPO, "testdata", "manifest.json")
GZIP_THRESHOLD = 1_000_000  # bytes

BASE_XLA_FLAGS = ["--xla_force_host_platform_device_count=8", "--xla_dump_hlo_as_text"]

SMALL = dict(num_layers=2, d_model=64, num_heads=4, d_ff=256, seq_len=32, vocab=256,
             global_batch=16, dtype="float32", dropout_rate=0.1, tied_embeddings=False)
SEED = dict(num_layers=12, d_model=768, num_heads=12, d_ff=3072, seq_len=1024, vocab=32000,
            global_batch=1024, dtype="float32", dropout_rate=0.1, tied_embeddings=False)


def _prog(name, size, mesh, partitionable=True, remat=True, prng_impl="threefry2x32",
          shard_map_key=False, grad_accum=0, desc="", **overrides):
    cfg = dict(SMALL if size == "small" else SEED)
    cfg.update(overrides)
    return dict(name=name, size=size, mesh=mesh, threefry_partitionable=partitionable,
                remat=remat, prng_impl=prng_impl, shard_map_key=shard_map_key,
                grad_accum_microbatches=grad_accum, model=cfg, description=desc)


DP8 = {"shape": [8], "axes": ["data"]}
MESH4x2 = {"shape": [4, 2], "axes": ["data", "model"]}

PROGRAMS = [
    _prog("dp8_partitionable_remat", "small", DP8, True, True,
          desc="data parallel, threefry partitionable, jax.checkpoint per block"),
    _prog("dp8_partitionable_noremat", "small", DP8, True, False,
          desc="data parallel, threefry partitionable, no remat"),
    _prog("dp8_replicated_remat", "small", DP8, False, True,
          desc="data parallel, threefry non-partitionable (replicated key), remat"),
    _prog("dp8_replicated_noremat", "small", DP8, False, False,
          desc="data parallel, threefry non-partitionable, no remat"),
    _prog("mesh4x2_partitionable_remat", "small", MESH4x2, True, True,
          desc="4 data x 2 model Megatron-style, threefry partitionable, remat"),
    _prog("mesh4x2_replicated_remat", "small", MESH4x2, False, True,
          desc="4 data x 2 model Megatron-style, threefry non-partitionable, remat"),
    _prog("dp8_rbg_remat", "small", DP8, True, True, prng_impl="rbg",
          desc="data parallel, jax_default_prng_impl=rbg (rng-bit-generator), remat"),
    _prog("dp8_shardmap_key_partitionable", "small", DP8, True, True, shard_map_key=True,
          desc="data parallel, dropout inside shard_map with fold_in(key, axis_index('data')) "
               "per device (like flax shard_prng_key), remat"),
    # Global batch 64: each of the 4 microbatches is [16,32], 2 rows per device, and the
    # strided microbatch split (row b -> microbatch b % 4) is local to each device.
    _prog("dp8_gradaccum4_partitionable_remat", "small", DP8, True, True, grad_accum=4,
          global_batch=64,
          desc="data parallel, gradient accumulation with lax.scan over 4 microbatches of "
               "[16,32] (while loop with known trip count 4), remat"),
    _prog("seed_dp8_partitionable_remat", "seed", DP8, True, True,
          desc="seed size (12 layers, d768, per-device [128,1024,768]), partitionable, remat"),
    _prog("seed_dp8_replicated_remat", "seed", DP8, False, True,
          desc="seed size, threefry non-partitionable, remat"),
    _prog("seed_dp8_partitionable_noremat", "seed", DP8, True, False,
          desc="seed size, threefry partitionable, no remat"),
]
BY_NAME = {p["name"]: p for p in PROGRAMS}


# --------------------------------------------------------------------------------------
# Worker: runs in a subprocess with XLA_FLAGS already set.
# --------------------------------------------------------------------------------------

def worker(prog, result_dir):
    import jax
    jax.config.update("jax_threefry_partitionable", prog["threefry_partitionable"])
    jax.config.update("jax_default_prng_impl", prog["prng_impl"])
    import jax.numpy as jnp
    import numpy as np
    import optax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    cfg = prog["model"]
    L, D, H, F = cfg["num_layers"], cfg["d_model"], cfg["num_heads"], cfg["d_ff"]
    S, V, B = cfg["seq_len"], cfg["vocab"], cfg["global_batch"]
    Dh = D // H
    dtype = jnp.dtype(cfg["dtype"])
    rate = cfg["dropout_rate"]
    keep_prob = 1.0 - rate

    devices = np.array(jax.devices()[:8]).reshape(prog["mesh"]["shape"])
    mesh = Mesh(devices, tuple(prog["mesh"]["axes"]))
    has_model = "model" in prog["mesh"]["axes"]
    M = "model" if has_model else None

    def ns(*spec):
        return NamedSharding(mesh, P(*spec))

    # ---- parameters (shapes + shardings) ----
    def block_shapes():
        return {
            "ln1_scale": ((D,), ns()), "ln1_bias": ((D,), ns()),
            "wq": ((D, D), ns(None, M)), "wk": ((D, D), ns(None, M)), "wv": ((D, D), ns(None, M)),
            "wo": ((D, D), ns(M, None)), "bo": ((D,), ns()),
            "ln2_scale": ((D,), ns()), "ln2_bias": ((D,), ns()),
            "w1": ((D, F), ns(None, M)), "b1": ((F,), ns(M)),
            "w2": ((F, D), ns(M, None)), "b2": ((D,), ns()),
        }

    shapes = {"embed": ((V, D), ns()),
              "blocks": [block_shapes() for _ in range(L)],
              "lnf_scale": ((D,), ns()), "lnf_bias": ((D,), ns())}
    if not cfg["tied_embeddings"]:
        shapes["head"] = ((D, V), ns())
    is_leaf = lambda x: isinstance(x, tuple) and len(x) == 2 and isinstance(x[1], NamedSharding)
    param_shardings = jax.tree.map(lambda t: t[1], shapes, is_leaf=is_leaf)
    abstract_params = jax.tree.map(
        lambda t: jax.ShapeDtypeStruct(t[0], dtype, sharding=t[1]), shapes, is_leaf=is_leaf)

    opt = optax.adam(1e-3)
    abstract_opt = jax.eval_shape(opt.init, abstract_params)
    # optax.adam state: (ScaleByAdamState(count, mu, nu), EmptyState()); mu/nu mirror params.
    adam_state = abstract_opt[0]
    opt_shardings = (adam_state._replace(count=ns(), mu=param_shardings, nu=param_shardings),
                     jax.tree.map(lambda _: ns(), abstract_opt[1]))
    abstract_opt = jax.tree.map(lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s),
                                abstract_opt, opt_shardings)

    batch_sharding = ns("data", None)
    abstract_batch = {
        "tokens": jax.ShapeDtypeStruct((B, S), jnp.int32, sharding=batch_sharding),
        "targets": jax.ShapeDtypeStruct((B, S), jnp.int32, sharding=batch_sharding),
    }
    key_aval = jax.eval_shape(lambda: jax.random.PRNGKey(0))
    rng_sharding = ns()
    abstract_rng = jax.ShapeDtypeStruct(key_aval.shape, key_aval.dtype, sharding=rng_sharding)

    # ---- model ----
    def layernorm(x, scale, bias):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-6) * scale + bias

    def dropout_plain(x, key):
        # Exactly flax.linen.Dropout: bernoulli mask, select(mask, x / keep_prob, 0).
        keep = jax.random.bernoulli(key, keep_prob, x.shape)
        return jnp.where(keep, x / keep_prob, jnp.zeros_like(x))

    if prog["shard_map_key"]:
        def dropout(x, key):
            def local(x_local, k):
                k = jax.random.fold_in(k, jax.lax.axis_index("data"))
                return dropout_plain(x_local, k)
            return jax.shard_map(local, mesh=mesh, in_specs=(P("data"), P()),
                                 out_specs=P("data"))(x, key)
    else:
        dropout = dropout_plain

    def attention(x, p):
        b, s, _ = x.shape
        q = (x @ p["wq"]).reshape(b, s, H, Dh)
        k = (x @ p["wk"]).reshape(b, s, H, Dh)
        v = (x @ p["wv"]).reshape(b, s, H, Dh)
        logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(Dh)
        causal = jnp.tril(jnp.ones((s, s), dtype=bool))
        logits = jnp.where(causal[None, None], logits, jnp.finfo(logits.dtype).min)
        w = jax.nn.softmax(logits, axis=-1)
        o = jnp.einsum("bhqk,bkhd->bqhd", w, v).reshape(b, s, D)
        return o @ p["wo"] + p["bo"]

    def block(x, p, key):
        att_key = jax.random.fold_in(key, 0)
        mlp_key = jax.random.fold_in(key, 1)
        with jax.named_scope("attention"):
            h = attention(layernorm(x, p["ln1_scale"], p["ln1_bias"]), p)
        with jax.named_scope("att_dropout"):
            h = dropout(h, att_key)
        x = x + h
        with jax.named_scope("mlp"):
            h = layernorm(x, p["ln2_scale"], p["ln2_bias"])
            h = jax.nn.gelu(h @ p["w1"] + p["b1"])
            h = h @ p["w2"] + p["b2"]
        with jax.named_scope("mlp_dropout"):
            h = dropout(h, mlp_key)
        return x + h

    block_fn = jax.checkpoint(block) if prog["remat"] else block

    def model(params, tokens, key):
        with jax.named_scope("TransformerModel"), jax.named_scope("_transformer"):
            x = params["embed"][tokens]
            for i in range(L):
                with jax.named_scope(f"block_{i}"):
                    x = block_fn(x, params["blocks"][i], jax.random.fold_in(key, i))
            x = layernorm(x, params["lnf_scale"], params["lnf_bias"])
            head = params["embed"].T if cfg["tied_embeddings"] else params["head"]
            return x @ head

    def compute_loss(params, batch, key):
        logits = model(params, batch["tokens"], key)
        return optax.softmax_cross_entropy_with_integer_labels(logits, batch["targets"]).mean()

    grad_fn = jax.value_and_grad(compute_loss)

    def train_step(params, opt_state, batch, rng):
        rng, new_rng = jax.random.split(rng)
        nmb = prog["grad_accum_microbatches"]
        if nmb:
            def mb_split(a):  # [B,S] -> [nmb, B/nmb, S], each microbatch sharded on 'data'
                a = a.reshape(a.shape[0] // nmb, nmb, *a.shape[1:]).swapaxes(0, 1)
                return jax.lax.with_sharding_constraint(a, ns(None, "data", None))
            mbs = jax.tree.map(mb_split, batch)

            def body(carry, xs):
                loss_acc, grad_acc = carry
                mb, i = xs
                loss, grads = grad_fn(params, mb, jax.random.fold_in(rng, i))
                return (loss_acc + loss, jax.tree.map(jnp.add, grad_acc, grads)), None
            zeros = jax.tree.map(jnp.zeros_like, params)
            (loss, grads), _ = jax.lax.scan(body, (jnp.zeros((), dtype), zeros),
                                            (mbs, jnp.arange(nmb)))
            loss = loss / nmb
            grads = jax.tree.map(lambda g: g / nmb, grads)
        else:
            loss, grads = grad_fn(params, batch, rng)
        updates, new_opt_state = opt.update(grads, opt_state, params)
        new_params = optax.apply_updates(params, updates)
        return new_params, new_opt_state, loss, new_rng

    jitted = jax.jit(
        train_step,
        in_shardings=(param_shardings, opt_shardings,
                      {"tokens": batch_sharding, "targets": batch_sharding}, rng_sharding),
        out_shardings=(param_shardings, opt_shardings, ns(), rng_sharding),
        donate_argnums=(0, 1),
    )
    t0 = time.time()
    lowered = jitted.lower(abstract_params, abstract_opt, abstract_batch, abstract_rng)
    t1 = time.time()
    compiled = lowered.compile()
    t2 = time.time()

    ma = compiled.memory_analysis()
    mem = {}
    for attr in sorted(dir(ma)):
        if attr.startswith("_") or attr == "serialized_buffer_assignment_proto":
            continue
        v = getattr(ma, attr)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            mem[attr] = v

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

    cost = json_safe(compiled.cost_analysis())

    n_params = sum(int(np.prod(a.shape)) for a in jax.tree.leaves(abstract_params))
    info = {
        "name": prog["name"],
        "description": prog["description"],
        "size": prog["size"],
        "mesh": prog["mesh"],
        "num_devices": 8,
        "platform": "cpu",
        "jax_version": jax.__version__,
        "jaxlib_version": __import__("jaxlib").__version__,
        "jax_config": {
            "jax_threefry_partitionable": bool(jax.config.jax_threefry_partitionable),
            "jax_default_prng_impl": str(jax.config.jax_default_prng_impl),
        },
        "remat": prog["remat"],
        "remat_policy": "jax.checkpoint default (nothing saveable, prevent_cse=True)"
                        if prog["remat"] else None,
        "shard_map_per_device_key": prog["shard_map_key"],
        "grad_accum_microbatches": prog["grad_accum_microbatches"],
        "model": dict(cfg, head_dim=Dh, num_params=n_params,
                      mlp_activation="gelu (tanh approximation, jax.nn.gelu default)",
                      dropout_sites_per_block=["att_dropout", "mlp_dropout"],
                      dropout_shape_global=[B // max(1, prog["grad_accum_microbatches"]), S, D],
                      dropout_shape_per_device=[B // max(1, prog["grad_accum_microbatches"])
                                                // prog["mesh"]["shape"][0], S, D]),
        "optimizer": "optax.adam(1e-3)",
        "shardings": {
            "batch": "P('data', None)",
            "params": ("replicated" if not has_model else
                       "wq/wk/wv/w1: P(None,'model'); b1: P('model'); wo/w2: P('model',None); "
                       "others replicated"),
            "rng": "replicated",
            "opt_state": "mu/nu like params, count replicated",
        },
        "donate_argnums": [0, 1],
        "rng_key": {"shape": list(key_aval.shape), "dtype": str(key_aval.dtype),
                    "kind": "raw uint32 key (jax.random.PRNGKey style)"},
        "inputs": {
            "params": "pytree of %d arrays, %s" % (len(jax.tree.leaves(abstract_params)), cfg["dtype"]),
            "batch.tokens": [B, S, "int32"], "batch.targets": [B, S, "int32"],
        },
        "xla_flags": os.environ.get("XLA_FLAGS", "").replace(
            os.environ.get("SPMDSIM_DUMP_DIR", "\0"), "<DUMP_DIR>"),
        "compile_seconds": None,  # timing lives in the generator log, not in committed files
    }
    os.makedirs(result_dir, exist_ok=True)
    with open(os.path.join(result_dir, "memory_analysis.json"), "w") as f:
        json.dump(mem, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(result_dir, "cost_analysis.json"), "w") as f:
        json.dump(cost, f, indent=1, sort_keys=True)
        f.write("\n")
    info.pop("compile_seconds")
    with open(os.path.join(result_dir, "program.json"), "w") as f:
        json.dump(info, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(result_dir, "_compiled_as_text.txt"), "w") as f:
        f.write(compiled.as_text())
    print(json.dumps({"lower_s": round(t1 - t0, 2), "compile_s": round(t2 - t1, 2)}))


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------

MAIN_RE = re.compile(r"^module_(\d+)\.jit_train_step\.(.+)$")
# Dump files of the main module that are kept (XLA's own names, minus the module prefix).
KEEP_SUFFIXES = (
    ".before_optimizations.txt",
    "_after_optimizations.txt",
    "_after_optimizations-buffer-assignment.txt",
    "_after_optimizations-memory-usage-report.txt",
    "_after_optimizations-live-range.txt",
)


def normalize_backend_configs(text):
    """Re-serialize every backend_config={...} JSON with sorted keys.

    compiled.as_text() and the *_after_optimizations.txt dump print the same module, but the
    dump keeps backend_config keys in proto field order while as_text() sorts them."""
    out, i = [], 0
    while True:
        j = text.find("backend_config={", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        start = j + len("backend_config=")
        depth, k = 0, start
        while k < len(text):
            if text[k] == "{":
                depth += 1
            elif text[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        blob = text[start:k + 1]
        try:
            blob = json.dumps(json.loads(blob), sort_keys=True, separators=(",", ":"))
        except ValueError:
            pass
        out.append(text[i:start])
        out.append(blob)
        i = k + 1


def gzip_file(path):
    with open(path, "rb") as f:
        data = f.read()
    gz = path + ".gz"
    with open(gz, "wb") as raw:
        # mtime=0 and no file name: same bytes as `gzip -n -9`.
        with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=raw, mtime=0) as g:
            g.write(data)
    os.remove(path)
    return gz


def run_program(prog, out_dir, python, keep_all_txt=False):
    dest = os.path.join(out_dir, prog["name"])
    work = tempfile.mkdtemp(prefix="spmdsim_dump_")
    try:
        dump_dir = os.path.join(work, "xla_dump")
        res_dir = os.path.join(work, "result")
        env = dict(os.environ)
        env["JAX_PLATFORMS"] = "cpu"
        env["XLA_FLAGS"] = " ".join(BASE_XLA_FLAGS + ["--xla_dump_to=" + dump_dir])
        env["SPMDSIM_DUMP_DIR"] = dump_dir
        env.pop("JAX_ENABLE_X64", None)
        t0 = time.time()
        proc = subprocess.run([python, os.path.abspath(__file__), "--_worker", prog["name"],
                               "--_result", res_dir], env=env, capture_output=True, text=True)
        elapsed = time.time() - t0
        if proc.returncode != 0:
            sys.stderr.write(proc.stdout + proc.stderr)
            raise RuntimeError("worker failed for %s" % prog["name"])
        timing = json.loads(proc.stdout.strip().splitlines()[-1])

        # Pick the main module: the jit_train_step module (there is exactly one).
        main = {}
        for fn in sorted(os.listdir(dump_dir)):
            m = MAIN_RE.match(fn)
            if m:
                main.setdefault(m.group(1), []).append(fn)
        if len(main) != 1:
            raise RuntimeError("expected one jit_train_step module, got %r" % sorted(main))
        (module_id, files), = main.items()

        if os.path.exists(dest):
            shutil.rmtree(dest)
        os.makedirs(dest)
        kept = []
        for fn in files:
            # Keep HLO text and the reports; drop the rest (LLVM IR, object files, the
            # *-buffer-assignment-values.txt listing, debug_options, module.mlir, ...).
            if not fn.endswith(".txt" if keep_all_txt else KEEP_SUFFIXES):
                continue
            shutil.copyfile(os.path.join(dump_dir, fn), os.path.join(dest, fn))
            kept.append(fn)
        after = [f for f in kept if f.endswith("_after_optimizations.txt")]
        compiled_txt = os.path.join(res_dir, "_compiled_as_text.txt")
        compiled_differs = None
        if after:
            with open(os.path.join(dest, after[0])) as a, open(compiled_txt) as c:
                compiled_differs = (normalize_backend_configs(a.read()) !=
                                    normalize_backend_configs(c.read()))
            if compiled_differs:
                shutil.copyfile(compiled_txt, os.path.join(dest, "compiled_as_text.txt"))
        for fn in ("memory_analysis.json", "cost_analysis.json", "program.json"):
            shutil.copyfile(os.path.join(res_dir, fn), os.path.join(dest, fn))
        with open(os.path.join(dest, "program.json")) as f:
            info = json.load(f)
        info["compiled_as_text_differs_from_after_optimizations"] = compiled_differs
        with open(os.path.join(dest, "program.json"), "w") as f:
            json.dump(info, f, indent=1, sort_keys=True)
            f.write("\n")
        for fn in sorted(os.listdir(dest)):
            p = os.path.join(dest, fn)
            if os.path.getsize(p) > GZIP_THRESHOLD:
                gzip_file(p)
        print("%-40s module_%s  lower %.1fs compile %.1fs total %.1fs" % (
            prog["name"], module_id, timing["lower_s"], timing["compile_s"], elapsed), flush=True)
        return dest
    finally:
        shutil.rmtree(work, ignore_errors=True)


def manifest_entry(prog, out_dir, testdata_root):
    dest = os.path.join(out_dir, prog["name"])
    files = sorted(os.listdir(dest))

    def find(suffix):
        for f in files:
            if f.endswith(suffix) or f.endswith(suffix + ".gz"):
                return os.path.relpath(os.path.join(dest, f), testdata_root)
        return None

    with open(os.path.join(dest, "memory_analysis.json")) as f:
        mem = json.load(f)
    with open(os.path.join(dest, "program.json")) as f:
        model = json.load(f)["model"]
    return {
        "name": prog["name"],
        "dir": os.path.relpath(dest, testdata_root),
        "description": prog["description"],
        "mesh": prog["mesh"],
        "threefry_partitionable": prog["threefry_partitionable"],
        "remat": prog["remat"],
        "prng_impl": prog["prng_impl"],
        "shard_map_per_device_key": prog["shard_map_key"],
        "grad_accum_microbatches": prog["grad_accum_microbatches"],
        "size": prog["size"],
        "model": {k: model[k] for k in ("num_layers", "d_model", "num_heads", "d_ff", "seq_len",
                                        "vocab", "global_batch", "dtype", "dropout_rate",
                                        "dropout_shape_global", "dropout_shape_per_device")},
        "files": {
            "before": find(".before_optimizations.txt"),
            "after": find("_after_optimizations.txt"),
            "buffer_assignment": find("_after_optimizations-buffer-assignment.txt"),
            "memory_usage_report": find("-memory-usage-report.txt"),
            "live_range": find("-live-range.txt"),
            "memory_analysis": find("memory_analysis.json"),
            "cost_analysis": find("cost_analysis.json"),
            "program": find("program.json"),
            "compiled_as_text": find("compiled_as_text.txt"),
        },
        "memory_analysis": mem,
    }


def write_manifest(out_dir, path):
    import importlib.metadata as md
    testdata_root = os.path.dirname(path)
    progs = [p for p in PROGRAMS if os.path.isdir(os.path.join(out_dir, p["name"]))]
    manifest = {
        "jax_version": md.version("jax"),
        "jaxlib_version": md.version("jaxlib"),
        "optax_version": md.version("optax"),
        "platform": "cpu",
        "xla_flags": " ".join(BASE_XLA_FLAGS + ["--xla_dump_to=<DIR>"]),
        "env": {"JAX_PLATFORMS": "cpu"},
        "regenerate": "tools/setup_python.sh && .venv/bin/python tools/gen_dumps.py",
        "programs": [manifest_entry(p, out_dir, testdata_root) for p in progs],
    }
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory (default testdata/dumps)")
    ap.add_argument("--only", action="append", help="program name (repeatable)")
    ap.add_argument("--list", action="store_true", help="list program names and exit")
    ap.add_argument("--small-only", action="store_true", help="skip seed-size programs")
    ap.add_argument("--no-manifest", action="store_true",
                    help="do not rewrite testdata/manifest.json (implied when --out is not the default)")
    ap.add_argument("--manifest", help="write the manifest to this path instead")
    ap.add_argument("--keep-all-txt", action="store_true",
                    help="keep every .txt dump file of the main module (adds e.g. "
                         "*-buffer-assignment-values.txt); not used for testdata/")
    ap.add_argument("--_worker", help=argparse.SUPPRESS)
    ap.add_argument("--_result", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args._worker:
        worker(BY_NAME[args._worker], args._result)
        return

    if args.list:
        for p in PROGRAMS:
            print("%-40s %-5s %s" % (p["name"], p["size"], p["description"]))
        return

    names = args.only or [p["name"] for p in PROGRAMS
                          if not (args.small_only and p["size"] == "seed")]
    for n in names:
        if n not in BY_NAME:
            ap.error("unknown program %r (see --list)" % n)
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.time()
    for n in names:
        run_program(BY_NAME[n], out_dir, sys.executable, args.keep_all_txt)
    print("generated %d program(s) in %.1fs" % (len(names), time.time() - t0))

    manifest_path = args.manifest
    if manifest_path is None and not args.no_manifest and out_dir == os.path.abspath(DEFAULT_OUT):
        manifest_path = MANIFEST
    if manifest_path:
        write_manifest(out_dir, os.path.abspath(manifest_path))
        print("wrote", manifest_path)


if __name__ == "__main__":
    main()
