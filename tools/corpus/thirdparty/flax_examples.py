"""flax's own examples as corpus programs: google/flax examples/wmt and examples/lm1b.

The point: the RNG analysis was fitted to our own generator's programs (tools/corpus/models.py);
these are training steps written by someone else, compiled exactly as their authors wrote them:
the example's own `train_step` (train.py) with its own model (models.py), dropout rng handling
(`fold_in(dropout_rng, state.step)`, `rngs={"dropout": ...}`), optimizer (optax.adamw with the
example's rsqrt schedule) and parallelism (wmt: `jax.pmap(train_step, axis_name="batch")`;
lm1b: `jax.jit` with in/out shardings from its logical axis rules on a data x fsdp x tensor mesh).

No flax code is copied into this repository. The example files are read at the pinned commit
(FLAX["commit"]) from a flax source tree given at generation time, either a git repository
(bare mirror or checkout: `git show COMMIT:PATH`) or a plain directory holding the same files
(checked against the pinned git blob hashes):

  python3 tools/gen_dumps.py --thirdparty-src flax=/path/to/flax(.git) --only CELL
  (or SPMDSIM_FLAX_SRC=/path/to/flax)

They are written to a folder under the system's temporary directory
($TMPDIR/spmdsim_thirdparty/flax-<commit12>/, the same path every run so that the dumps'
FileNames table is reproducible; tools/oracle_compare.py reduces it) and imported from there.
train.py imports modules that need TensorFlow, CLU or ml_collections (input pipeline, metric
writers, config); those are replaced in sys.modules by inert stubs (`_install_stubs`): none of
them is used by train_step. bleu.py and decode.py (pure Python / JAX) are the example's own.

Each example's train step is configured as its train_and_evaluate() does (read that function
for the glue below), with the example's configs/default.py and these overrides: small sizes,
float32 (use_mixed_precision / use_bfloat16 False), dropout_rate = attention_dropout_rate = 0.1
(the defaults). The random draws are counted from the example's source (WMT_DRAWS, LM1B_DRAWS).
"""

import hashlib
import importlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import types

SOURCE_NAME = "flax"
SOURCE_ENV = "SPMDSIM_FLAX_SRC"

# The flax commit the examples are read at: the newest commit of google/flax's main branch in
# the mirror this corpus was made from (version.py says 0.12.8 there; the JAX 0.12.0.1 venv has
# flax 0.12.12 from PyPI, a later release whose commit the mirror does not hold; the examples'
# files are unchanged since before 0.12.8's release: examples/wmt last changed in 5d908519,
# 2026-01-05, examples/lm1b in 5486a636, 2026-03-02).
FLAX = {
    "repo": "google/flax",
    "url": "https://github.com/google/flax",
    "commit": "18f8f311c275d57f46d95e41b15aa97b454754c0",
    "commit_date": "2026-07-02",
    "version_at_commit": "0.12.8",
    "license": "Apache-2.0",
    "license_file": "LICENSE",
    "license_blob": "bf911cf860e014baf72a4f0dcb0e690be0b5f098",
    "notice": "Copyright 2024 The Flax Authors. Licensed under the Apache License, Version 2.0 "
              "(each file's header).",
}

# Files read from the flax tree (path -> git blob hash at FLAX["commit"]).
EXAMPLES = {
    "wmt": {
        "dir": "examples/wmt",
        "files": {
            "models.py": "8c367892076a8289f2c3554a666f0105d0091118",
            "train.py": "644b112baee2197f24214c555d6fcdf035da36a3",
            "decode.py": "54085499f6d29e5d8f2d483d5c7098d96fe61dcd",
            "bleu.py": "f4059d04fa1a598d3cc5c714b702890ff4d6a05d",
            "configs/default.py": "5548c2218b58ffaa3194f6a42693712cdcdb91e4",
        },
        # Modules train.py imports that need TensorFlow / CLU / ml_collections.
        "stubs": ["tensorflow", "clu", "clu.metric_writers", "clu.periodic_actions",
                  "ml_collections", "input_pipeline"],
    },
    "lm1b": {
        "dir": "examples/lm1b",
        "files": {
            "models.py": "956c08f37aaedee5508207d1d6c93db2b2d73d4c",
            "train.py": "943b1545612a10ebb082ff145b7911d204355d0a",
            "utils.py": "13669136336c2f3a3e1220f1776aa4edec4c7164",
            "temperature_sampler.py": "5cc316870c1bb6a342d94a81a2a29361d8c517e8",
            "configs/default.py": "482928353e7de3fa4ad32c0008b7ef727a52ec81",
        },
        "stubs": ["tensorflow", "clu", "clu.metric_writers", "clu.periodic_actions",
                  "ml_collections", "input_pipeline"],
    },
}

# Libraries train.py / utils.py import that are installed in the venv (imported for real).
REAL_IMPORTS = ["absl.logging", "flax.io", "flax.jax_utils", "flax.linen.partitioning",
                "flax.training.checkpoints", "flax.training.common_utils",
                "flax.training.dynamic_scale", "flax.training.train_state",
                "jax.experimental.mesh_utils", "optax", "orbax.checkpoint"]

# Model sizes of the cells (overrides of the example's configs/default.py).
SMALL = dict(vocab_size=256, emb_dim=64, qkv_dim=64, mlp_dim=256, num_heads=4, num_layers=2,
             max_target_length=32, max_eval_target_length=32, per_device_batch_size=2,
             dropout_rate=0.1, attention_dropout_rate=0.1)


# --- Source ------------------------------------------------------------------------------------

class SourceMissing(RuntimeError):
    pass


def git_blob_hash(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _read(src, path):
    """Bytes of PATH at the pinned commit from a git repository, or from a plain tree."""
    if os.path.isdir(os.path.join(src, "objects")) or os.path.exists(os.path.join(src, ".git")):
        out = subprocess.run(["git", "-C", src, "show", "%s:%s" % (FLAX["commit"], path)],
                             capture_output=True)
        if out.returncode != 0:
            raise SourceMissing("%s: git show %s:%s failed: %s" % (
                src, FLAX["commit"][:12], path, out.stderr.decode(errors="replace").strip()))
        return out.stdout
    with open(os.path.join(src, path), "rb") as f:
        return f.read()


def source_dir():
    src = os.environ.get(SOURCE_ENV)
    if not src:
        raise SourceMissing("flax source not given: pass --thirdparty-src flax=PATH to "
                            "tools/gen_dumps.py or set %s (a clone or mirror of %s holding "
                            "commit %s)" % (SOURCE_ENV, FLAX["url"], FLAX["commit"]))
    return os.path.abspath(src)


def extract(example):
    """Writes the example's pinned files to $TMPDIR/spmdsim_thirdparty/flax-<commit12>/ and
    returns the example's folder there. Every file is checked against its pinned blob hash."""
    src = source_dir()
    ex = EXAMPLES[example]
    root = os.path.join(tempfile.gettempdir(), "spmdsim_thirdparty", "flax-" + FLAX["commit"][:12])
    wanted = dict({FLAX["license_file"]: FLAX["license_blob"]},
                  **{ex["dir"] + "/" + f: h for f, h in ex["files"].items()})
    for path, blob in sorted(wanted.items()):
        data = _read(src, path)
        if git_blob_hash(data) != blob:
            raise SourceMissing("%s in %s is not the pinned version (blob %s, expected %s at "
                                "flax commit %s)" % (path, src, git_blob_hash(data), blob,
                                                     FLAX["commit"]))
        dest = os.path.join(root, path)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if os.path.exists(dest):
            with open(dest, "rb") as f:
                if f.read() == data:
                    continue
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dest))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, dest)  # atomic: concurrent runs write the same bytes
    return os.path.join(root, ex["dir"])


class _Anything:
    """Stands for any attribute of a stubbed module (train.py's `tf.data.Dataset` annotations,
    `metric_writers`, ...); calling it fails loudly, which train_step never does."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        return _Anything(self._name + "." + attr)

    def __call__(self, *a, **k):
        raise RuntimeError("%s is a stub (tools/corpus/thirdparty/flax_examples.py): the "
                           "compiled train step must not call it" % self._name)


class _StubModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Anything(self.__name__ + "." + attr)


class _ConfigDict(dict):
    """ml_collections.ConfigDict as configs/default.py uses it (attribute access)."""

    def __getattr__(self, k):
        try:
            return self[k]
        except KeyError:
            raise AttributeError(k)

    def __setattr__(self, k, v):
        self[k] = v


def _install_stubs(names):
    for name in names:
        mod = _StubModule(name)
        if name == "ml_collections":
            mod.ConfigDict = _ConfigDict
        sys.modules[name] = mod
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, mod)


def load_example(example):
    """(train module, default config) of the example, imported from the extracted files."""
    folder = extract(example)
    # The real libraries train.py imports, imported before the stubs exist (flax.io asks
    # importlib whether tensorflow is installed, and must hear that it is not).
    for name in REAL_IMPORTS:
        importlib.import_module(name)
    _install_stubs(EXAMPLES[example]["stubs"])
    for name in [f[:-3] for f in EXAMPLES[example]["files"] if "/" not in f]:
        sys.modules.pop(name, None)
    sys.path.insert(0, folder)
    train = importlib.import_module("train")
    spec = importlib.util.spec_from_file_location(
        "flax_%s_default_config" % example, os.path.join(folder, "configs", "default.py"))
    default = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(default)
    config = default.get_config()
    config.update(SMALL)
    return train, config


# --- Random draws, counted from the examples' source -------------------------------------------
#
# Every nn.Dropout and every attention-weights dropout that runs in the train step's forward
# pass (config.deterministic=False, rates > 0): one `jax.random.bernoulli(key, 0.9, shape)`
# each, i.e. uniform float32 bits (u32) of the dropped array's shape. flax 0.12.12 (the venv):
# nn.Dropout draws in flax/linen/stochastic.py:105 (`random.bernoulli(rng, p=keep_prob,
# shape=broadcast_shape)`; broadcast_dims=() so the shape is the input's); the attention
# dropout in flax/linen/attention.py:159 (`random.bernoulli(dropout_rng, keep_prob,
# attn_weights.shape)`, broadcast_dropout=False in both examples), attn_weights being
# [batch, heads, q_len, kv_len]. Nothing is rematerialized (no nn.remat in either example), so
# the backward pass draws nothing again; no draw is in a loop (layers are a Python for loop),
# so each site runs once per step. Key derivations (fold_in(dropout_rng, state.step) in
# train.py, flax's make_rng per module) hash keys only and are not bits draws.
#
# examples/wmt/models.py (flax 18f8f311), Transformer = Encoder + Decoder, L = num_layers:
#   Encoder embedding dropout ..................... models.py:357  [B, S_in, emb]     1
#   per Encoder1DBlock:
#     self-attention weights dropout .............. models.py:221  [B, H, S_in, S_in] L
#     dropout after self-attention ................ models.py:233  [B, S_in, emb]     L
#     MlpBlock dropout after relu ................. models.py:181  [B, S_in, mlp]     L
#     MlpBlock dropout after the output Dense ..... models.py:190  [B, S_in, emb]     L
#   Decoder embedding dropout ..................... models.py:428  [B, S_t, emb]      1
#   per EncoderDecoder1DBlock:
#     self-attention weights dropout .............. models.py:274  [B, H, S_t, S_t]   L
#     dropout after self-attention ................ models.py:286  [B, S_t, emb]      L
#     encoder-decoder attention weights dropout ... models.py:293  [B, H, S_t, S_in]  L
#     dropout after encoder-decoder attention ..... models.py:305  [B, S_t, emb]      L
#     MlpBlock dropouts ........................... models.py:181, models.py:190      2L
#   total 2 + 10 L sites (22 for L = 2), each run once per step.
#   train.py:train_step (train.py:211: dropout_rng = fold_in(dropout_rng, state.step); :223
#   apply(..., rngs={"dropout": dropout_rng})) runs under jax.pmap (train.py:582), so
#   B is the per-device batch and every device draws its own arrays from its own key
#   (train.py:616: dropout_rngs = jax.random.split(rng, jax.local_device_count())).
#
# examples/lm1b/models.py (flax 18f8f311), TransformerLM = Decoder only:
#   Decoder embedding dropout ..................... models.py:336  [B, S, emb]        1
#   per EncoderDecoder1DBlock (self-attention only):
#     self-attention weights dropout .............. models.py:247  [B, H, S, S]       L
#     dropout after self-attention ................ models.py:261  [B, S, emb]        L
#     MlpBlock dropout after relu ................. models.py:196  [B, S, mlp]        L
#     MlpBlock dropout after the output Dense ..... models.py:207  [B, S, emb]        L
#   total 1 + 4 L sites (9 for L = 2), each run once per step.
#   train.py:train_step (train.py:191 fold_in, :200 rngs) runs under jax.jit with the global
#   batch B sharded over the mesh's 'data' axis (train.py:470); one key for all devices
#   (train.py:522: dropout_rngs = rng, a jax.random.PRNGKey, uint32[2]).

def _draw(scope, shape, source, what, per_device_batch_divisor):
    per_device = [shape[0] // per_device_batch_divisor] + list(shape[1:])
    return {"scope": scope, "shape": list(shape), "bits": 32, "kind": "bits",
            "executions_per_step": 1, "source": source, "what": what,
            "shape_per_device": per_device}


def wmt_draws(cfg, batch):
    """WMT's draws in forward order; shapes as train_step draws them (per device under pmap)."""
    L, H, S, E, M = (cfg["num_layers"], cfg["num_heads"], cfg["max_target_length"],
                     cfg["emb_dim"], cfg["mlp_dim"])
    f = "examples/wmt/models.py:"
    out = [_draw("encoder/Dropout_0", [batch, S, E], f + "357", "embedding dropout", 1)]
    for i in range(L):
        p = "encoder/encoderblock_%d/" % i
        out += [
            _draw(p + "MultiHeadDotProductAttention_0", [batch, H, S, S], f + "221",
                  "self-attention weights dropout", 1),
            _draw(p + "Dropout_0", [batch, S, E], f + "233", "dropout after self-attention", 1),
            _draw(p + "MlpBlock_0/Dropout_0", [batch, S, M], f + "181", "MLP dropout after relu", 1),
            _draw(p + "MlpBlock_0/Dropout_1", [batch, S, E], f + "190", "MLP output dropout", 1),
        ]
    out.append(_draw("decoder/Dropout_0", [batch, S, E], f + "428", "embedding dropout", 1))
    for i in range(L):
        p = "decoder/encoderdecoderblock_%d/" % i
        out += [
            _draw(p + "MultiHeadDotProductAttention_0", [batch, H, S, S], f + "274",
                  "self-attention weights dropout", 1),
            _draw(p + "Dropout_0", [batch, S, E], f + "286", "dropout after self-attention", 1),
            _draw(p + "MultiHeadDotProductAttention_1", [batch, H, S, S], f + "293",
                  "encoder-decoder attention weights dropout", 1),
            _draw(p + "Dropout_1", [batch, S, E], f + "305",
                  "dropout after encoder-decoder attention", 1),
            _draw(p + "MlpBlock_0/Dropout_0", [batch, S, M], f + "181", "MLP dropout after relu", 1),
            _draw(p + "MlpBlock_0/Dropout_1", [batch, S, E], f + "190", "MLP output dropout", 1),
        ]
    assert len(out) == 2 + 10 * L
    return out


def lm1b_draws(cfg, batch, data_shards):
    """lm1b's draws in forward order; shapes global (jit), shape_per_device split on 'data'."""
    L, H, S, E, M = (cfg["num_layers"], cfg["num_heads"], cfg["max_target_length"],
                     cfg["emb_dim"], cfg["mlp_dim"])
    f = "examples/lm1b/models.py:"
    out = [_draw("decoder/Dropout_0", [batch, S, E], f + "336", "embedding dropout", data_shards)]
    for i in range(L):
        p = "decoder/encoderdecoderblock_%d/" % i
        out += [
            _draw(p + "MultiHeadDotProductAttention_0", [batch, H, S, S], f + "247",
                  "self-attention weights dropout", data_shards),
            _draw(p + "Dropout_0", [batch, S, E], f + "261", "dropout after self-attention",
                  data_shards),
            _draw(p + "MlpBlock_0/Dropout_0", [batch, S, M], f + "196", "MLP dropout after relu",
                  data_shards),
            _draw(p + "MlpBlock_0/Dropout_1", [batch, S, E], f + "207", "MLP output dropout",
                  data_shards),
        ]
    assert len(out) == 1 + 4 * L
    return out


class SourceCountedDraws:
    """models.Draws' interface; the draws are counted from the source, not while tracing (the
    worker clears `sites` before lowering each function; summary() does not read it)."""

    def __init__(self, draws):
        self.sites = []
        self._draws = draws

    def summary(self):
        return {"sites": len(self._draws),
                "per_step": sum(d["executions_per_step"] for d in self._draws),
                "redrawn_by_remat": 0,
                "counted_from": "source (tools/corpus/thirdparty/flax_examples.py)",
                "draws": [dict(d) for d in self._draws]}


def _thirdparty_info(example, entry):
    ex = EXAMPLES[example]
    return dict(FLAX, example=ex["dir"], entry=entry,
                files=[ex["dir"] + "/" + f for f in sorted(ex["files"])],
                stubbed_modules=ex["stubs"],
                config_overrides=dict(SMALL, use_mixed_precision=False, use_bfloat16=False))


# --- Programs ----------------------------------------------------------------------------------

def _abstract(tree):
    import jax
    return jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), tree)


class _KwargLowering:
    """worker.py lowers `fn.lower(*args)`; the wmt train loop passes dropout_rng by keyword
    (`p_train_step(state, batch, dropout_rng=dropout_rngs)`), so does this."""

    def __init__(self, fn):
        self.fn = fn

    def lower(self, state, batch, dropout_rngs):
        return self.fn.lower(state, batch, dropout_rng=dropout_rngs)


def build_wmt(prog, mesh):
    import functools
    import jax
    import jax.numpy as jnp
    import optax
    from flax import linen as nn

    train, config = load_example("wmt")
    models = train.models
    config.use_mixed_precision = False
    devices = list(mesh.devices.flat)
    n = len(devices)
    # As train.train_and_evaluate builds them (train.py:508-595): vocab from the tokenizer
    # there (config.vocab_size here), dtype = preferred_dtype(config) = float32.
    vocab_size = config.vocab_size
    train_config = models.TransformerConfig(
        vocab_size=vocab_size,
        output_vocab_size=vocab_size,
        share_embeddings=config.share_embeddings,
        logits_via_embedding=config.logits_via_embedding,
        dtype=jnp.float32,
        emb_dim=config.emb_dim,
        num_heads=config.num_heads,
        num_layers=config.num_layers,
        qkv_dim=config.qkv_dim,
        mlp_dim=config.mlp_dim,
        max_len=max(config.max_target_length, config.max_eval_target_length),
        dropout_rate=config.dropout_rate,
        attention_dropout_rate=config.attention_dropout_rate,
        deterministic=False,
        decode=False,
        kernel_init=nn.initializers.xavier_uniform(),
        bias_init=nn.initializers.normal(stddev=1e-6),
    )
    eval_config = train_config.replace(deterministic=True)
    input_shape = (config.per_device_batch_size, config.max_target_length)
    target_shape = (config.per_device_batch_size, config.max_target_length)
    m = models.Transformer(eval_config)
    learning_rate_fn = train.create_learning_rate_schedule(
        learning_rate=config.learning_rate, warmup_steps=config.warmup_steps)
    tx = optax.adamw(learning_rate=learning_rate_fn, b1=0.9, b2=0.98, eps=1e-9,
                     weight_decay=config.weight_decay)

    def make_state(init_rng):
        initial_variables = m.init(init_rng, jnp.ones(input_shape, jnp.float32),
                                   jnp.ones(target_shape, jnp.float32))
        return train.TrainState.create(apply_fn=m.apply, params=initial_variables["params"],
                                       tx=tx, dynamic_scale=None)

    state = jax.eval_shape(make_state, jax.random.key(config.seed))
    # jax_utils.replicate(state): a leading device axis on every leaf.
    state = jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct((n,) + x.shape, x.dtype), state)
    p_train_step = jax.pmap(
        functools.partial(train.train_step, config=train_config,
                          learning_rate_fn=learning_rate_fn,
                          label_smoothing=config.label_smoothing),
        axis_name="batch", donate_argnums=(0,), devices=devices)
    # common_utils.shard(next(train_iter)): the packed training batch of input_pipeline
    # (inputs, targets and their _position / _segmentation), int32 [n, per_device, length].
    tok = jax.ShapeDtypeStruct((n, config.per_device_batch_size, config.max_target_length),
                               jnp.int32)
    batch = {k: tok for k in ("inputs", "targets", "inputs_position", "targets_position",
                              "inputs_segmentation", "targets_segmentation")}
    dropout_rngs = jax.eval_shape(lambda: jax.random.split(jax.random.key(config.seed), n))
    params = jax.tree_util.tree_leaves(state.params)
    draws = wmt_draws(config, config.per_device_batch_size)
    for d in draws:
        d["shape_global"] = [d["shape"][0] * n] + d["shape"][1:]
        # Under pmap each device draws its own array from its own key (the stacked
        # "global" array is the devices' draws side by side, never one partitioned draw).
        d["drawn_on_each_device"] = True
    facts = _facts(config, n * config.per_device_batch_size, params, n, draws, dropout_rngs,
                   global_is_stacked=True)
    facts["program_json"] = {
        "thirdparty": _thirdparty_info("wmt", "jax.pmap(functools.partial(train.train_step, "
                                       "config, learning_rate_fn, label_smoothing), "
                                       "axis_name='batch', donate_argnums=(0,))"),
        "mesh": {"shape": [n], "axes": ["batch"], "how": "jax.pmap over every device "
                 "(JAX 0.12: jit of shard_map over Mesh(devices, ('batch',)))"},
        "optimizer": "optax.adamw(rsqrt schedule, b1=0.9, b2=0.98, eps=1e-9, weight_decay=%g)"
                     % config.weight_decay,
        "donate_argnums": [0],
    }
    # JAX 0.12's pmap is jax.jit(shard_map(_fun)): the module is jit__fun.
    return ([("jit__fun", _KwargLowering(p_train_step), (state, batch, dropout_rngs), "train")],
            SourceCountedDraws(draws), facts)


def build_lm1b(prog, mesh):
    import jax
    import jax.numpy as jnp
    import optax
    from flax import linen as nn
    from flax.linen import partitioning as nn_partitioning
    from jax.experimental import mesh_utils
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    train, config = load_example("lm1b")
    models, utils = train.models, train.utils
    config.use_bfloat16 = False
    # Data parallel x FSDP with the example's own mesh axes and logical axis rules: ICI data
    # parallelism auto-sized (-1), fsdp 2 (the example's default puts every device on fsdp
    # and replicates the batch; with data auto-sized the batch is split as well).
    config.ici_data_parallelism = -1
    config.ici_fsdp_parallelism = 2
    devices = list(mesh.devices.flat)
    n = len(devices)
    # utils.create_device_mesh(config) (train.py:430) on the target's devices (it reads
    # jax.devices(), the host's CPU here): one slice, so DCN parallelism is 1 everywhere.
    ici = utils.fill_unspecified_mesh_axes(
        [config.ici_data_parallelism, config.ici_fsdp_parallelism,
         config.ici_tensor_parallelism], n, "ICI")
    devices_array = mesh_utils.create_device_mesh(ici, devices=devices,
                                                  allow_split_physical_axes=True)
    mesh = Mesh(devices_array, config.mesh_axes)
    vocab_size = config.vocab_size
    # As train.train_and_evaluate builds them (train.py:408-480).
    train_config = models.TransformerConfig(
        vocab_size=vocab_size,
        output_vocab_size=vocab_size,
        logits_via_embedding=config.logits_via_embedding,
        dtype=jnp.float32,
        emb_dim=config.emb_dim,
        num_heads=config.num_heads,
        num_layers=config.num_layers,
        qkv_dim=config.qkv_dim,
        mlp_dim=config.mlp_dim,
        max_len=max(config.max_target_length, config.max_eval_target_length),
        dropout_rate=config.dropout_rate,
        attention_dropout_rate=config.attention_dropout_rate,
        deterministic=False,
        decode=False,
        kernel_init=nn.initializers.xavier_uniform(),
        bias_init=nn.initializers.normal(stddev=1e-6),
    )
    eval_config = train_config.replace(deterministic=True)
    rng = jax.random.PRNGKey(config.seed)
    rng, init_rng = jax.random.split(rng)
    rng, _inference_rng = jax.random.split(rng)
    m = models.TransformerLM(eval_config)
    learning_rate_fn = train.create_learning_rate_schedule(
        learning_rate=config.learning_rate, warmup_steps=config.warmup_steps)
    optimizer = optax.adamw(learning_rate_fn, b1=0.9, b2=0.98, eps=1e-9,
                            weight_decay=config.weight_decay)
    # utils.setup_initial_state(m, optimizer, config, init_rng, mesh) without running the
    # initialization: its abstract state and mesh annotations (utils.py).
    import functools
    init_partial = functools.partial(utils.init_train_state, m, optimizer, config)
    abstract_state = jax.eval_shape(init_partial, init_rng)
    state_logical_annotations = nn.get_partition_spec(abstract_state)
    with jax.set_mesh(mesh), nn_partitioning.axis_rules(config.logical_axis_rules):
        state_mesh_annotations = nn.logical_to_mesh_sharding(
            state_logical_annotations, mesh, config.logical_axis_rules)
    state = _abstract(utils.unbox_logicallypartioned_trainstate(abstract_state))
    data_sharding = NamedSharding(mesh, P(config.data_sharding))
    jit_train_step = jax.jit(
        train.train_step,
        in_shardings=(state_mesh_annotations, data_sharding, None),
        out_shardings=(state_mesh_annotations, None),
        static_argnums=(2, 3, 4),
        donate_argnums=0,
    )
    # input_pipeline's packed training batch: global batch per_device_batch_size * devices.
    global_batch = config.per_device_batch_size * n
    tok = jax.ShapeDtypeStruct((global_batch, config.max_target_length), jnp.int32)
    batch = {k: tok for k in ("inputs", "inputs_position", "inputs_segmentation")}
    dropout_rngs = jax.ShapeDtypeStruct(rng.shape, rng.dtype)
    data_shards = dict(zip(config.mesh_axes, ici))["data"]
    draws = lm1b_draws(config, global_batch, data_shards)
    for d in draws:
        d["shape_global"] = list(d["shape"])
    params = jax.tree_util.tree_leaves(state.params)
    facts = _facts(config, global_batch, params, data_shards, draws, dropout_rngs,
                   global_is_stacked=False)
    facts["program_json"] = {
        "thirdparty": _thirdparty_info("lm1b", "jax.jit(train.train_step, in_shardings="
                                       "(state_mesh_annotations, data_sharding, None), "
                                       "out_shardings=(state_mesh_annotations, None), "
                                       "static_argnums=(2, 3, 4), donate_argnums=0)"),
        "mesh": {"shape": [int(x) for x in ici], "axes": list(config.mesh_axes),
                 "how": "the example's utils.create_device_mesh axes with ici_data_parallelism"
                        "=-1, ici_fsdp_parallelism=2; logical_axis_rules %s" % (
                            config.logical_axis_rules,)},
        "optimizer": "optax.adamw(rsqrt schedule, b1=0.9, b2=0.98, eps=1e-9, weight_decay=%g)"
                     % config.weight_decay,
        "donate_argnums": [0],
    }
    args = (state, batch, train_config, learning_rate_fn, 0.0, dropout_rngs)
    return [("jit_train_step", jit_train_step, args, "train")], SourceCountedDraws(draws), facts


def _facts(config, global_batch, params, batch_shards, draws, key, global_is_stacked):
    """program.json's "model" additions: the example's config and what the manifest reads."""
    import numpy as np
    emb = [d for d in draws if d["what"] == "embedding dropout"][0]
    return {
        "num_params": int(sum(int(np.prod(p.shape[1:] if global_is_stacked else p.shape))
                              for p in params)),
        "global_batch": global_batch,
        "key_shape": list(key.shape),
        "key_dtype": str(key.dtype),
        # The residual stream's dropout (embedding, after attention, MLP output): the most
        # frequent draw shape; the other shapes are in random_draws.draws.
        "dropout_shape_global": emb["shape_global"],
        "dropout_shape_per_device": emb["shape_per_device"],
        "dropout_shapes_distinct": sorted({tuple(d["shape_global"]) for d in draws}),
        "batch_shards": batch_shards,
        "example_config": {k: (v if isinstance(v, (int, float, str, bool, list)) or v is None
                               else str(v)) for k, v in sorted(config.items())},
    }


def build_program(prog, mesh):
    example = prog["thirdparty"]["example"]
    if example == "wmt":
        return build_wmt(prog, mesh)
    if example == "lm1b":
        return build_lm1b(prog, mesh)
    raise ValueError("unknown flax example %r" % example)
