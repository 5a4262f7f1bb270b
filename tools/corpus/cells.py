"""The corpus matrix: which program is compiled by which JAX for which platform.

A cell is one compile (one process, one dump directory): program x platform x JAX version.
The first twelve cells are the original corpus (JAX 0.10.2, XLA:CPU) under their original
names; every other cell is named <env>_<platform>_<program>. Each cell was picked because it
shows XLA something new (see testdata/README.md for what each teaches).
"""

# JAX environments: one venv each, made by tools/setup_python.sh from tools/requirements/<env>.txt.
ENVIRONMENTS = {
    "jax0.10.2": {"venv": ".venv", "python": ["3.11"], "short": "jax010"},
    "jax0.12.0.1": {"venv": ".venv-jax0.12.0.1", "python": ["3.12", "3.13"], "short": "jax012"},
    "jax0.4.30": {"venv": ".venv-jax0.4.30", "python": ["3.11"], "short": "jax04"},
    # JAX 0.12.0.1 plus MaxText 0.2.5 (pip) for thirdparty/maxtext_decoder.py's cells.
    "maxtext0.2.5": {"venv": ".venv-maxtext0.2.5", "python": ["3.12", "3.13"], "short": "jax012"},
}

SMALL = dict(num_layers=2, d_model=64, num_heads=4, d_ff=256, seq_len=32, vocab=256,
             global_batch=16, dtype="float32", dropout_rate=0.1)
SEED = dict(num_layers=12, d_model=768, num_heads=12, d_ff=3072, seq_len=1024, vocab=32000,
            global_batch=1024, dtype="float32", dropout_rate=0.1)


def program(name, family="plain", size="small", sharding="dp", layers="unrolled",
            remat="default", partitionable=True, prng_impl="threefry2x32",
            gpu_kernel_lowering=False, grad_accum=0, shard_map_key=False, modules="train",
            desc="", **model_overrides):
    cfg = dict(SMALL if size == "small" else SEED)
    cfg.update(model_overrides)
    return dict(name=name, family=family, size=size, sharding=sharding, layers=layers,
                remat=remat, threefry_partitionable=partitionable, prng_impl=prng_impl,
                gpu_kernel_lowering=gpu_kernel_lowering, grad_accum_microbatches=grad_accum,
                shard_map_key=shard_map_key, modules=modules, model=cfg, description=desc)


# The draws of one transformer block in both families (models.py): att_dropout and mlp_dropout.
DROPOUTS_PER_BLOCK = 2


def train_draws(prog):
    """The random draws of one train step, counted from the program's structure.

    Counting at trace time undercounts: jax.checkpoint traces a block once per distinct
    signature, so an unrolled stack of remat blocks is traced as one. `sites` are the static
    draws (a scanned layer's draws are one site each), `per_step` how often the forward pass
    executes them, and `redrawn_by_remat` the static draws the backward pass makes again
    because remat recomputes each block's forward (dropout included) from its key."""
    layers = prog["model"]["num_layers"]
    sites = DROPOUTS_PER_BLOCK * (1 if prog["layers"] == "scan" else layers)
    microbatches = max(1, prog["grad_accum_microbatches"])
    return {"sites": sites,
            "per_step": DROPOUTS_PER_BLOCK * layers * microbatches,
            "redrawn_by_remat": sites if prog["remat"] else 0}


def activation_spec(prog):
    """Mesh axes splitting the activations [batch, seq, d_model] that each dropout draws for:
    the batch on 'data' (the batch's sharding); Megatron sequence parallelism also constrains
    seq to 'model' (models.py's act_constraint; its lines are left as they are because the
    committed dumps' metadata holds their source line numbers)."""
    return ("data", "model", None) if prog["sharding"] == "seqpar" else ("data", None, None)


def mesh_for(prog, devices):
    """Mesh shape and axes: data parallel over every device, or data x model with model=2."""
    if prog["sharding"] in ("megatron", "seqpar"):
        return {"shape": [devices // 2, 2], "axes": ["data", "model"]}
    return {"shape": [devices], "axes": ["data"]}


def _mode(p):
    return "partitionable" if p else "replicated"


P = program
CELLS = []


def cell(name, env, platform, prog):
    CELLS.append(dict(name=name, env=env, platform=platform, program=prog))


# --- The original corpus: JAX 0.10.2 on XLA:CPU, names kept. ---
_ORIGINAL = [
    ("dp8_partitionable_remat", P("", desc="data parallel, threefry partitionable, jax.checkpoint per block")),
    ("dp8_partitionable_noremat", P("", remat=None, desc="data parallel, threefry partitionable, no remat")),
    ("dp8_replicated_remat", P("", partitionable=False,
                               desc="data parallel, threefry non-partitionable (replicated key), remat")),
    ("dp8_replicated_noremat", P("", partitionable=False, remat=None,
                                 desc="data parallel, threefry non-partitionable, no remat")),
    ("mesh4x2_partitionable_remat", P("", sharding="megatron",
                                      desc="4 data x 2 model Megatron-style, threefry partitionable, remat")),
    ("mesh4x2_replicated_remat", P("", sharding="megatron", partitionable=False,
                                   desc="4 data x 2 model Megatron-style, threefry non-partitionable, remat")),
    ("dp8_rbg_remat", P("", prng_impl="rbg",
                        desc="data parallel, jax_default_prng_impl=rbg (rng-bit-generator), remat")),
    ("dp8_shardmap_key_partitionable", P("", shard_map_key=True,
                                         desc="data parallel, dropout inside shard_map with fold_in(key, "
                                              "axis_index('data')) per device (like flax shard_prng_key), remat")),
    # Global batch 64: each of the 4 microbatches is [16,32], 2 rows per device, and the strided
    # microbatch split (row b -> microbatch b % 4) is local to each device.
    ("dp8_gradaccum4_partitionable_remat", P("", grad_accum=4, global_batch=64,
                                             desc="data parallel, gradient accumulation with lax.scan over 4 "
                                                  "microbatches of [16,32] (while loop, trip count 4), remat")),
    ("seed_dp8_partitionable_remat", P("", size="seed",
                                       desc="seed size (12 layers, d768, per-device [128,1024,768]), "
                                            "partitionable, remat")),
    ("seed_dp8_replicated_remat", P("", size="seed", partitionable=False,
                                    desc="seed size, threefry non-partitionable, remat")),
    ("seed_dp8_partitionable_noremat", P("", size="seed", remat=None,
                                         desc="seed size, threefry partitionable, no remat")),
]
for _name, _prog in _ORIGINAL:
    _prog["name"] = _name
    cell(_name, "jax0.10.2", "cpu8", _prog)


# --- The newest JAX on every platform. ---
def _new(platform, name, **kw):
    prog = P(name, **kw)
    cell("jax012_%s_%s" % (platform, name), "jax0.12.0.1", platform, prog)


for _plat in ("cpu8", "gpu8"):
    for _p in (True, False):
        m = _mode(_p)
        _new(_plat, "plain_dp_%s_remat" % m, partitionable=_p,
             desc="plain JAX transformer, data parallel, %s threefry, jax.checkpoint per block" % m)
        _new(_plat, "flax_dp_%s_remat" % m, family="flax", partitionable=_p,
             desc="flax.linen transformer with nn.Dropout and nn.remat, data parallel, %s threefry" % m)
        _new(_plat, "fsdp_%s_remat" % m, sharding="fsdp", partitionable=_p,
             desc="FSDP: params and optimizer state sharded over 'data', %s threefry, remat" % m)
        _new(_plat, "megatron_%s_remat" % m, sharding="megatron", partitionable=_p,
             desc="Megatron tensor parallel (data x model), %s threefry, remat" % m)
    _new(_plat, "flax_scan_nothing_saveable_partitionable", family="flax", layers="scan",
         remat="nothing_saveable",
         desc="flax nn.scan over nn.remat(policy=nothing_saveable) blocks (a while loop), partitionable")
    _new(_plat, "plain_scan_dots_saveable_partitionable", layers="scan", remat="dots_saveable",
         desc="lax.scan over layers with jax.checkpoint(policy=dots_saveable), partitionable")
    _new(_plat, "plain_scan_dots_saveable_replicated", layers="scan", remat="dots_saveable",
         partitionable=False,
         desc="lax.scan over layers with jax.checkpoint(policy=dots_saveable), replicated threefry")
    _new(_plat, "seqpar_partitionable_remat", sharding="seqpar",
         desc="Megatron sequence parallel on a 2-D mesh (activations split on seq), partitionable")
    _new(_plat, "plain_dp_rbg_remat", prng_impl="rbg",
         desc="jax_default_prng_impl=rbg (rng-bit-generator), data parallel, remat")
    _new(_plat, "plain_dp_unsafe_rbg_remat", prng_impl="unsafe_rbg",
         desc="jax_default_prng_impl=unsafe_rbg, data parallel, remat")
    _new(_plat, "plain_dp_gradaccum4_partitionable_remat", grad_accum=4, global_batch=64,
         desc="gradient accumulation: lax.scan over 4 microbatches, partitionable, remat")
    _new(_plat, "plain_dp_bf16_partitionable_remat", dtype="bfloat16",
         desc="bf16 compute (f32 params cast per layer), partitionable, remat")
    _new(_plat, "flax_process_init_train_eval", family="flax", modules="init_train_eval",
         desc="one process, three modules: jit(init), jit(train_step), jit(eval), partitionable")

# The other threefry mode of the programs above, so every RNG program has its mode pair.
for _plat in ("cpu8", "gpu8"):
    _new(_plat, "flax_scan_nothing_saveable_replicated", family="flax", layers="scan",
         remat="nothing_saveable", partitionable=False,
         desc="flax nn.scan over nn.remat(policy=nothing_saveable) blocks, replicated threefry")
    _new(_plat, "plain_dp_gradaccum4_replicated_remat", grad_accum=4, global_batch=64,
         partitionable=False,
         desc="gradient accumulation: lax.scan over 4 microbatches, replicated threefry, remat")
    _new(_plat, "plain_dp_bf16_replicated_remat", dtype="bfloat16", partitionable=False,
         desc="bf16 compute (f32 params cast per layer), replicated threefry, remat")
    _new(_plat, "flax_process_init_train_eval_replicated", family="flax",
         modules="init_train_eval", partitionable=False,
         desc="one process, three modules: jit(init), jit(train_step), jit(eval), replicated")
_new("gpu8", "seqpar_replicated_remat", sharding="seqpar", partitionable=False,
     desc="Megatron sequence parallel on a 2-D mesh, replicated threefry")
_new("gpu8", "seed_flax_dp_replicated_kernel_remat", family="flax", size="seed",
     gpu_kernel_lowering=True, partitionable=False,
     desc="the seed user's program with replicated threefry: flax, [128,1024,768] per device, "
          "cu_threefry2x32 custom call, nn.remat")
_new("gpu16", "fsdp_replicated_remat", sharding="fsdp", partitionable=False,
     desc="FSDP over 16 GPUs in 2 nodes, replicated threefry, remat")
_new("gpu16", "megatron_partitionable_remat", sharding="megatron",
     desc="Megatron 8 data x 2 model over 2 nodes, partitionable, remat")
_new("tpu4", "fsdp_replicated_remat", sharding="fsdp", partitionable=False,
     desc="FSDP on TPU v5e 2x2, replicated threefry, remat")
_new("tpu4", "plain_scan_dots_saveable_replicated", layers="scan", remat="dots_saveable",
     partitionable=False, desc="lax.scan over layers, dots_saveable, replicated, TPU v5e 2x2")
_new("tpu16", "fsdp_replicated_remat", sharding="fsdp", partitionable=False,
     desc="FSDP on TPU v5e 4x4 (16 chips), replicated threefry, remat")
_new("tpu16", "megatron_replicated_remat", sharding="megatron", partitionable=False,
     desc="Megatron 8 data x 2 model on TPU v5e 4x4, replicated threefry, remat")

_new("cpu8", "seed_plain_dp_partitionable_remat", size="seed",
     desc="seed size on XLA:CPU, plain JAX, partitionable, remat")
_new("cpu8", "seqpar_replicated_remat", sharding="seqpar", partitionable=False,
     desc="Megatron sequence parallel on a 2-D mesh, replicated threefry")
for _p in (True, False):
    m = _mode(_p)
    _new("gpu8", "plain_dp_%s_kernel_remat" % m, partitionable=_p, gpu_kernel_lowering=True,
         desc="jax_threefry_gpu_kernel_lowering=True (cu_threefry2x32 custom call), %s, remat" % m)
_new("gpu8", "seed_flax_dp_partitionable_kernel_remat", family="flax", size="seed",
     gpu_kernel_lowering=True,
     desc="the seed user's program: flax, [128,1024,768] per device, partitionable, "
          "cu_threefry2x32 custom call, nn.remat")
_new("gpu8", "seed_plain_dp_partitionable_remat", size="seed",
     desc="seed size on XLA:GPU, plain JAX, partitionable (unrolled threefry), remat")

for _p in (True, False):
    m = _mode(_p)
    _new("gpu16", "flax_dp_%s_remat" % m, family="flax", partitionable=_p,
         desc="flax, data parallel over 2 nodes x 8 GPUs, %s threefry, remat" % m)
_new("gpu16", "fsdp_partitionable_remat", sharding="fsdp",
     desc="FSDP over 16 GPUs in 2 nodes, partitionable, remat")
_new("gpu16", "megatron_replicated_remat", sharding="megatron", partitionable=False,
     desc="Megatron 8 data x 2 model over 2 nodes, replicated threefry, remat")

for _p in (True, False):
    m = _mode(_p)
    for _plat in ("tpu4", "tpu16"):
        _new(_plat, "flax_dp_%s_remat" % m, family="flax", partitionable=_p,
             desc="flax, data parallel on a TPU v5e slice, %s threefry, remat" % m)
    _new("tpu4", "megatron_%s_remat" % m, sharding="megatron", partitionable=_p,
         desc="Megatron 2 data x 2 model on TPU v5e 2x2, %s threefry, remat" % m)
_new("tpu4", "fsdp_partitionable_remat", sharding="fsdp",
     desc="FSDP on TPU v5e 2x2, partitionable, remat")
_new("tpu4", "plain_dp_rbg_remat", prng_impl="rbg", desc="rbg on TPU v5e 2x2, remat")
_new("tpu4", "plain_scan_dots_saveable_partitionable", layers="scan", remat="dots_saveable",
     desc="lax.scan over layers, dots_saveable, TPU v5e 2x2")
_new("tpu4", "flax_process_init_train_eval", family="flax", modules="init_train_eval",
     desc="one process, three modules (init, train step, eval) on TPU v5e 2x2")
_new("tpu16", "fsdp_partitionable_remat", sharding="fsdp",
     desc="FSDP on TPU v5e 4x4 (16 chips), partitionable, remat")
_new("tpu16", "megatron_partitionable_remat", sharding="megatron",
     desc="Megatron 8 data x 2 model on TPU v5e 4x4, partitionable, remat")

# --- An older JAX on XLA:CPU: the syntax users of 2024's releases still have. ---
for _p in (True, False):
    m = _mode(_p)
    prog = P("plain_dp_%s_remat" % m, partitionable=_p,
             desc="JAX 0.4.30, plain JAX, data parallel, %s threefry, remat" % m)
    cell("jax04_cpu8_" + prog["name"], "jax0.4.30", "cpu8", prog)

# --- Third-party programs (tools/corpus/thirdparty/): training steps others wrote, compiled as
# their authors wrote them. Their source is read at a pinned commit from a tree given to
# gen_dumps.py (--thirdparty-src NAME=PATH or SPMDSIM_<NAME>_SRC), never vendored; cells whose
# source is not given are skipped. prog["thirdparty"]["source"] names it. ---
def _flax_example(platform, example, partitionable, sharding, desc):
    m = _mode(partitionable)
    prog = P("flax_%s_%s" % (example, m), family="thirdparty:flax_examples", sharding=sharding,
             remat=None, partitionable=partitionable,
             desc="flax's examples/%s train_step (google/flax, third party): %s, %s threefry"
                  % (example, desc, m),
             num_layers=2, d_model=64, num_heads=4, d_ff=256, seq_len=32, vocab=256,
             global_batch=2 * PLATFORM_DEVICES[platform])
    prog["thirdparty"] = {"source": "flax", "example": example}
    cell("jax012_%s_%s" % (platform, prog["name"]), "jax0.12.0.1", platform, prog)


PLATFORM_DEVICES = {"gpu8": 8, "tpu4": 4}
for _plat in ("gpu8", "tpu4"):
    for _p in (True, False):
        _flax_example(_plat, "wmt", _p, "dp",
                      "encoder-decoder Transformer, jax.pmap data parallel, 2 per device")
        _flax_example(_plat, "lm1b", _p, "fsdp",
                      "decoder-only TransformerLM, jax.jit on its data x fsdp(2) mesh with "
                      "logical axis rules, 2 per device")

# MaxText's own train step (thirdparty/maxtext_decoder.py, pip maxtext==0.2.5 in its own venv):
# a 2-layer llama2 decoder, dropout 0.1, scanned layers with remat_policy full, FSDP over every
# device, bf16 activations / f32 weights, global batch 16; threefry both ways, and MaxText's
# own PRNG (train_compile.py: unsafe_rbg with --xla_tpu_spmd_rng_bit_generator_unsafe).
def _maxtext(platform, rng, partitionable=True, prng_impl="threefry2x32"):
    prog = P("maxtext_llama_fsdp_%s_remat" % rng, family="thirdparty:maxtext_decoder",
             sharding="fsdp", layers="scan", remat="full", partitionable=partitionable,
             prng_impl=prng_impl,
             desc="MaxText 0.2.5's train_step (third party): llama2 decoder, 2 scanned layers, "
                  "remat full, FSDP, dropout 0.1, %s" % (
                      "MaxText's own PRNG (unsafe_rbg)" if prng_impl == "unsafe_rbg"
                      else rng + " threefry"),
             num_layers=2, d_model=128, num_heads=4, d_ff=256, seq_len=64, vocab=256,
             global_batch=16, dtype="bfloat16")
    prog["thirdparty"] = {"package": "maxtext==0.2.5"}
    cell("jax012_%s_%s" % (platform, prog["name"]), "maxtext0.2.5", platform, prog)


for _plat in ("gpu8", "tpu4"):
    for _p in (True, False):
        _maxtext(_plat, _mode(_p), partitionable=_p)
_maxtext("tpu4", "unsafe_rbg", prng_impl="unsafe_rbg")

BY_NAME = {c["name"]: c for c in CELLS}
assert len(BY_NAME) == len(CELLS), "duplicate cell names"
