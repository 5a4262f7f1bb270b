"""MaxText's own training step as corpus programs: a small llama2 decoder, compiled the way
MaxText's train_compile.py compiles it (AI-Hypercomputer/maxtext, pip package maxtext==0.2.5).

The point: the RNG analysis was fitted to our own generator's programs (tools/corpus/models.py);
this is a training step someone else wrote, for real LLM training: MaxText's NNX Transformer with
its llama2 decoder layers (maxtext/models/llama2.py), its nnx-RngStream dropout, its scan over
layers wrapped in jax.checkpoint, its FSDP mesh and logical axis rules, its AdamW, its
`train.train_step`. Nothing of MaxText is copied here: the venv of tools/requirements/
maxtext0.2.5.txt holds the package (pinned) and this module imports it.

How (read maxtext/trainers/pre_train/train_compile.py main(), which this follows step by step):
  config = pyconfig.initialize([_, maxtext/configs/base.yml, overrides...])  (config_overrides)
  mesh   = Mesh(maxtext_utils.create_device_mesh(config, devices), config.mesh_axes, Auto)
           (train_compile.get_topology_mesh; the devices are the deviceless topology of our
           platform, tools/corpus/platforms.py: the same v5e 2x2 slice MaxText's "v5e-4" names,
           and the 8 x H100 target instead of MaxText's GPU path, which asks jax.devices() for
           real or mocked GPUs)
  shaped_train_args, ... = train_compile.get_shaped_inputs(mesh, config)
  sharding.maybe_update_params_sharding_with_opt / build_zero1_input_state_mesh_shardings /
  get_input_data_sharding, maxtext_utils.get_functional_train_with_signature(train.train_step, ...)
  jax.jit(...) and .lower(...) under jax.set_mesh(mesh) and the logical axis rules, then
  .compile(compiler_options=...) (train_compile.jit_and_compile).
The worker lowers and compiles (tools/corpus/worker.py): `_MaxTextJit` carries jit_and_compile's
context managers and compiler options into the worker's fn.lower(*args).compile().

MaxText's train_compile.main() sets jax_default_prng_impl="unsafe_rbg" and the libtpu flag
--xla_tpu_spmd_rng_bit_generator_unsafe=true: that is the PRNG MaxText ships. The cells with
prng_impl "unsafe_rbg" do the same (the flag as a compiler option, as jit_and_compile passes
config.compile_xla_flags; on GPU the flag does not exist and is not passed); the threefry
cells set jax_threefry_partitionable both ways with MaxText's PRNG replaced by threefry2x32.
The flag matters: with it XLA:TPU partitions each dropout's rng-bit-generator (per-device
u32[4,1,128] on tpu4); without it every chip generates the global u32[16,1,128] (checked by
compiling the unsafe_rbg cell without the option).

DECOUPLE_GCLOUD=TRUE (maxtext/common/gcloud_stub.py) makes MaxText stub its Google Cloud,
JetStream and diagnostics imports; nothing needs tensorflow.
"""

import os

MAXTEXT_VERSION = "0.2.5"

# The model is the cell's (cells.py _maxtext: program()'s model dict); config_overrides maps it
# to MaxText's keys. MaxText's per_device_batch_size = global_batch / devices.

# Our platforms -> MaxText's compile_topology names (maxtext/utils/accelerator_to_spec_map.py:
# "v5e-4" = v5e:2x2, "a3" = 8 x H100 per slice).
COMPILE_TOPOLOGY = {("tpu", 4): "v5e-4", ("gpu", 8): "a3"}


def config_overrides(model, compile_topology, per_device_batch):
    """MaxText config overrides (key=value, as on train_compile.py's command line) on top of
    maxtext/configs/base.yml. Everything not listed is base.yml's default: dtype bfloat16
    activations with float32 weights, opt_type adamw, ici_fsdp_parallelism -1 (FSDP over every
    device), decoder_block llama2, enable_dropout true, scan_layers true, remat_policy full."""
    return [
        "run_name=spmdsim_corpus",
        "compile_topology=%s" % compile_topology,
        "compile_topology_num_slices=1",
        "decoder_block=llama2",
        "base_num_decoder_layers=%d" % model["num_layers"],
        "base_emb_dim=%d" % model["d_model"],
        "base_num_query_heads=%d" % model["num_heads"],
        "base_num_kv_heads=%d" % model["num_heads"],
        "head_dim=%d" % (model["d_model"] // model["num_heads"]),
        "base_mlp_dim=%d" % model["d_ff"],
        "vocab_size=%d" % model["vocab"],
        "max_target_length=%d" % model["seq_len"],
        "per_device_batch_size=%d" % per_device_batch,
        "dropout_rate=%s" % model["dropout_rate"],
        "enable_dropout=true",
        "scan_layers=true",
        "remat_policy=full",
        "ici_fsdp_parallelism=-1",
        # What base.yml's "autoselected" picks anyway at length < 128 (attention_op.py:1657),
        # spelled out: XLA's own dot-product attention, no Pallas / cuDNN kernel. It draws no
        # attention dropout (only the cudnn_flash_te kernel does, attention_op.py:710-712).
        "attention=dot_product",
        "dataset_type=synthetic",
        "enable_checkpointing=false",
    ]


# --- The random draws, counted from MaxText's source ----------------------------------------
#
# Paths are relative to site-packages of the maxtext0.2.5 venv; build_program checks that each
# line still says what is quoted (SOURCE_LINES), so a different MaxText fails loudly.
#
# One train step (maxtext/trainers/pre_train/train.py train_step, NNX): value_and_grad of
# diff_wrapper (train.py:552-565) -> loss_fn(..., is_train=True) -> the Transformer with
# enable_dropout=config.enable_dropout (train.py:189) -> deterministic=False everywhere.
# Every dropout is MaxText's linears.Dropout (a fork of flax.nnx.Dropout, linears.py:587):
# key = fold_in(stream.key, stream.count); count += 1 (flax/nnx/rnglib.py:122), then
# jax.random.bernoulli(key, 0.9, broadcast_shape) (flax/nnx/nn/stochastic.py:162): 32 random
# bits per element (uniform float32) of the input's shape with the broadcast_dims set to 1.
# All of MaxText's dropouts here use broadcast_dims=(-2,): the mask is shared along the
# sequence, so each draw is [batch, 1, features], not [batch, seq, features].
#
# Forward draws in order:
#  1. Decoder embedding dropout, nnx_decoders.py:1543 (Decoder._apply_embedding; the module is
#     nnx_decoders.py:463), on [B, S, emb] -> draws [B, 1, emb]. Outside the scan, not remat'ed.
#  2. Per layer (the scanned body, a single site each; `jax.lax.scan` nnx_decoders.py:1195 over
#     `jax.checkpoint(layer_fn, policy=None)` nnx_decoders.py:1159: remat_policy "full" ->
#     policy None, nnx_decoders.py:1385-1386), LlamaDecoderLayer (models/llama2.py):
#     a. MlpBlock's dropout on the gated activations [B, S, mlp] (linears.py:825, module
#        linears.py:730) -> [B, 1, mlp];
#     b. the layer-output dropout after the MLP residual (llama2.py:202, module llama2.py:130)
#        -> [B, 1, emb].
#     Attention draws nothing: Attention gets dropout_rate, but only the cudnn_flash_te kernel
#     uses it (attention_op.py:712 keeps rngs only for it); attention=dot_product.
#     No dropout before attention or after it: llama2's layer has one at its output only.
#  3. Decoder output-head dropout after the final RMSNorm, nnx_decoders.py:1583
#     (apply_output_head) -> [B, 1, emb]. Outside the scan, not remat'ed.
# So: 4 static forward sites (1, 2a, 2b, 3), executed 2 + 2*L times per step; remat recomputes
# the scanned body in the backward pass (jax.checkpoint around layer_fn), drawing 2a and 2b
# again from the same keys: redrawn_by_remat = 2 static sites (2*L executions). The draws of
# 1 and 3 are not redone (no checkpoint around them).
# Confirmed on the dumps: before_optimizations of every cell calls _bernoulli computations
# 6 times: 4 forward (pred[16,1,128] x3 with op_names jit(train_step)/jvp(jit(_bernoulli)) and
# .../jvp()/while/body/eval_jaxpr/jit(_bernoulli), pred[16,1,256] x1 in the while body) and 2
# under .../transpose(jvp())/while/body/eval_jaxpr/checkpoint/rematted_computation/ (one of each
# shape). MaxText's NNX modules push no name scopes: no op_name says "dropout".
#
# Aside (not needed for the count): the scan returns each layer's updated state but drops its
# RngState (nnx_decoders.py:1210 filters nnx.Not(nnx.RngState)), so a train step does not
# advance the scanned layers' dropout stream counts: the lowered train step returns
# decoder/layers/dropout and decoder/layers/mlp/dropout's rngs.dropout.count as its input
# parameters unchanged, while the decoder's own stream (draws 1 and 3) comes back advanced by
# 2 (via non_param_rest, train.py:558-566). Read literally, the layers' dropout keys
# (fold_in(key_l, count_l)) are the same at every step of a training loop that feeds the state
# back.
SOURCE_LINES = {
    "maxtext/layers/nnx_decoders.py:1543": "y = self.dropout(y, deterministic=deterministic)",
    "maxtext/layers/nnx_decoders.py:1583": "y = self.dropout(y, deterministic=deterministic)",
    "maxtext/layers/nnx_decoders.py:463": "self.dropout = linears.Dropout(rate=config.dropout_rate, "
                                          "rngs=rngs, broadcast_dims=(-2,))",
    "maxtext/layers/nnx_decoders.py:1159": "layer_fn_wrapped = jax.checkpoint(layer_fn, "
                                           "policy=policy, prevent_cse=prevent_cse)",
    "maxtext/layers/nnx_decoders.py:1195": "final_carry, scanned_state = jax.lax.scan(",
    "maxtext/layers/nnx_decoders.py:1210": "clean_state = nnx.filter_state(scanned_state, "
                                           "nnx.Not(nnx.RngState))",
    "maxtext/layers/nnx_decoders.py:1386": "policy = None",
    "maxtext/layers/linears.py:730": "self.dropout = Dropout(rate=self.intermediate_dropout_rate, "
                                     "broadcast_dims=(-2,), rngs=rngs)",
    "maxtext/layers/linears.py:825": "x = self.dropout(x, deterministic=deterministic)",
    "maxtext/models/llama2.py:130": "self.dropout = Dropout(rate=config.dropout_rate, "
                                    "broadcast_dims=(-2,), rngs=rngs)",
    "maxtext/models/llama2.py:202": "layer_output = self.dropout(layer_output, "
                                    "deterministic=deterministic)",
    "maxtext/layers/attention_op.py:712": "self.rngs = rngs if dropout_rate > 0.0 else None",
    "maxtext/trainers/pre_train/train.py:189": "enable_dropout=config.enable_dropout if is_train "
                                               "else False,",
    "maxtext/trainers/pre_train/train_compile.py:300": 'jax.config.update("jax_default_prng_impl", '
                                                       '"unsafe_rbg")',
    "flax/nnx/rnglib.py:122": "key = random.fold_in(self.key[...], self.count[...])",
    "flax/nnx/nn/stochastic.py:162": "mask = random.bernoulli(",
}


def _draw(scope, shape, source, what, executions, remat, batch_shards):
    return {"scope": scope, "shape": list(shape), "bits": 32, "kind": "bits",
            "executions_per_step": executions, "source": source, "what": what,
            "redrawn_by_remat": remat,
            "shape_per_device": [shape[0] // batch_shards] + list(shape[1:])}


def maxtext_draws(model, batch_shards):
    """The forward draws of one train step, in order (see the comment above)."""
    L, B, E, M = model["num_layers"], model["global_batch"], model["d_model"], model["d_ff"]
    dec = "maxtext/layers/nnx_decoders.py:"
    return [
        _draw("decoder/dropout", [B, 1, E], dec + "1543",
              "embedding dropout (Decoder._apply_embedding), mask broadcast over length", 1, False,
              batch_shards),
        _draw("decoder/layers/mlp/dropout", [B, 1, M], "maxtext/layers/linears.py:825",
              "MlpBlock intermediate dropout, in the scanned remat'ed layer", L, True,
              batch_shards),
        _draw("decoder/layers/dropout", [B, 1, E], "maxtext/models/llama2.py:202",
              "LlamaDecoderLayer output dropout, in the scanned remat'ed layer", L, True,
              batch_shards),
        _draw("decoder/dropout", [B, 1, E], dec + "1583",
              "output-head dropout after the final norm (Decoder.apply_output_head)", 1, False,
              batch_shards),
    ]


class SourceCountedDraws:
    """models.Draws' interface; the draws are counted from MaxText's source, not while tracing
    (the worker clears `sites` before lowering; summary() does not read it)."""

    def __init__(self, draws):
        self.sites = []
        self._draws = draws

    def summary(self):
        return {"sites": len(self._draws),
                "per_step": sum(d["executions_per_step"] for d in self._draws),
                "redrawn_by_remat": sum(1 for d in self._draws if d["redrawn_by_remat"]),
                "counted_from": "source (tools/corpus/thirdparty/maxtext_decoder.py)",
                "draws": [dict(d) for d in self._draws]}


def check_source_lines():
    """Fail if the installed MaxText/flax do not say, at the quoted lines, what the count
    above relies on."""
    import importlib.util
    site = os.path.dirname(os.path.dirname(importlib.util.find_spec("maxtext").origin))
    bad = []
    for ref, text in SOURCE_LINES.items():
        path, line = ref.rsplit(":", 1)
        with open(os.path.join(site, path)) as f:
            got = f.read().splitlines()[int(line) - 1].strip()
        if not got.startswith(text):
            bad.append("%s: %r (expected %r)" % (ref, got, text))
    if bad:
        raise RuntimeError("MaxText source differs from what the draw count was read from:\n  "
                           + "\n  ".join(bad))


class _Lowered:
    def __init__(self, lowered, options):
        self._lowered, self._options = lowered, options

    def compile(self):
        # train_compile.jit_and_compile: lowered.compile(compiler_options=...)
        return self._lowered.compile(compiler_options=self._options or None)


class _MaxTextJit:
    """jax.jit(func) lowered as train_compile.jit_and_compile lowers it: under jax.set_mesh
    and MaxText's logical axis rules, compiled with its compiler options."""

    def __init__(self, jitted, mesh, axis_rules, options):
        self._jitted, self._mesh, self._rules, self._options = jitted, mesh, axis_rules, options

    def lower(self, *args):
        import jax
        from flax.core.spmd import logical_axis_rules
        with jax.set_mesh(self._mesh), logical_axis_rules(self._rules):
            return _Lowered(self._jitted.lower(*args), self._options)


def build_program(prog, mesh):
    os.environ["DECOUPLE_GCLOUD"] = "TRUE"  # before maxtext is imported (gcloud_stub.py)
    import importlib.metadata
    import importlib.util
    import tempfile

    import jax
    import numpy as np
    from flax.core.spmd import logical_axis_rules
    from jax.sharding import AxisType, Mesh

    import maxtext
    from maxtext.configs import pyconfig
    from maxtext.trainers.pre_train import train, train_compile
    from maxtext.utils import maxtext_utils, sharding

    version = importlib.metadata.version("maxtext")
    if version != MAXTEXT_VERSION:
        raise RuntimeError("maxtext %s installed, %s expected" % (version, MAXTEXT_VERSION))
    check_source_lines()
    assert prog["layers"] == "scan" and prog["remat"] == "full" and prog["sharding"] == "fsdp"

    model = prog["model"]
    devices = list(mesh.devices.flat)
    kind = "tpu" if devices[0].platform == "tpu" else "gpu"
    topology = COMPILE_TOPOLOGY[(kind, len(devices))]
    assert model["global_batch"] % len(devices) == 0
    overrides = config_overrides(model, topology, model["global_batch"] // len(devices))
    base = os.path.join(os.path.dirname(maxtext.__file__), "configs", "base.yml")
    out_dir = os.path.join(tempfile.gettempdir(), "spmdsim_maxtext_out")  # nothing is written
    config = pyconfig.initialize([None, base, "base_output_directory=" + out_dir] + overrides)
    train_compile.validate_config(config)
    assert config.global_batch_size_to_train_on == model["global_batch"]
    assert config.dropout_rate == model["dropout_rate"] and config.enable_dropout

    # train_compile.get_topology_mesh, with our platform's deviceless devices.
    jax.config.update("jax_remove_size_one_mesh_axis_from_type",
                      config.remove_size_one_mesh_axis_from_type)
    device_mesh = maxtext_utils.create_device_mesh(config, devices)
    mt_mesh = Mesh(device_mesh, config.mesh_axes,
                   axis_types=(AxisType.Auto,) * len(config.mesh_axes))

    # train_compile.main, as written there.
    (shaped_train_args, shaped_train_kwargs, state_mesh_shardings, _,
     graphdef) = train_compile.get_shaped_inputs(mt_mesh, config)
    assert not shaped_train_kwargs
    params_shardings, state_mesh_shardings = sharding.maybe_update_params_sharding_with_opt(
        config, state_mesh_shardings)
    input_state_mesh_shardings = sharding.build_zero1_input_state_mesh_shardings(
        config, state_mesh_shardings, params_shardings)
    data_sharding = sharding.get_input_data_sharding(config, mt_mesh)
    (func, in_shard, out_shard, static_argnums,
     donate_argnums) = maxtext_utils.get_functional_train_with_signature(
        train.train_step, data_sharding, input_state_mesh_shardings, graphdef, config,
        params_shardings)
    with jax.set_mesh(mt_mesh), logical_axis_rules(config.logical_axis_rules):
        jitted = jax.jit(func, in_shardings=in_shard, out_shardings=out_shard,
                         static_argnums=static_argnums, donate_argnums=donate_argnums)
    from maxtext.utils import max_utils
    options = max_utils.parse_libtpu_flags_to_dict(config.compile_xla_flags)
    if prog["prng_impl"] == "unsafe_rbg" and kind == "tpu":
        # train_compile.main's LIBTPU_INIT_ARGS flag (libtpu is already initialized by the
        # topology here, so it goes in as a compiler option, as compile_xla_flags would).
        options["xla_tpu_spmd_rng_bit_generator_unsafe"] = True
    fn = _MaxTextJit(jitted, mt_mesh, config.logical_axis_rules, options)

    sizes = dict(zip(config.mesh_axes, (int(n) for n in device_mesh.shape)))
    batch_shards = int(np.prod([sizes[a] for a in config.mesh_axes
                                if a in ("data", "fsdp", "fsdp_transpose", "expert")]))
    assert batch_shards == len(devices)
    draws = maxtext_draws(model, batch_shards)
    state = shaped_train_args[0]
    leaves = jax.tree_util.tree_leaves_with_path(state)
    paths = [(jax.tree_util.keystr(p), l) for p, l in leaves]
    params = [l for p, l in paths if p.startswith("['model']") and "['rngs']" not in p]
    # The dropout streams' state in the train state (every Dropout module forks all of the
    # model's streams; only "dropout" is drawn from): keys stacked per layer inside the scan.
    rng_state = [{"path": p, "shape": list(l.shape), "dtype": str(l.dtype)}
                 for p, l in paths if "['rngs']['dropout']" in p]
    resid = draws[0]
    facts = {
        "num_params": int(sum(int(np.prod(l.shape)) for l in params)),
        "head_dim": model["d_model"] // model["num_heads"],
        "weight_dtype": str(config.weight_dtype),
        # The residual stream's dropout (embedding, layer output, output head): the most frequent
        # draw shape; the MLP's [B, 1, mlp] is in random_draws.draws.
        "dropout_shape_global": resid["shape"],
        "dropout_shape_per_device": resid["shape_per_device"],
        "dropout_shapes_distinct": sorted({tuple(d["shape"]) for d in draws}),
        "dropout_broadcast_dims": [-2],
        "batch_shards": batch_shards,
        "rng_state": rng_state,
    }
    facts["program_json"] = {
        "thirdparty": {
            "name": "MaxText",
            "repo": "AI-Hypercomputer/maxtext",
            "url": "https://github.com/AI-Hypercomputer/maxtext",
            "package": "maxtext==%s" % version,
            "license": "Apache-2.0",
            "entry": "maxtext/trainers/pre_train/train_compile.py main(): get_shaped_inputs, "
                     "maxtext_utils.get_functional_train_with_signature(train.train_step, ...), "
                     "jit_and_compile (jax.jit + lower under jax.set_mesh and the logical axis "
                     "rules, compile with compiler_options)",
            "config": "maxtext/configs/base.yml",
            "config_overrides": overrides,
            "compiler_options": {k: str(v) for k, v in sorted(options.items())},
            "environment": {"DECOUPLE_GCLOUD": "TRUE"},
            "devices": "tools/corpus/platforms.py's deviceless %s topology (MaxText's "
                       "compile_topology=%s)" % (kind.upper(), topology),
        },
        "mesh": {"shape": [int(n) for n in device_mesh.shape], "axes": list(config.mesh_axes),
                 "how": "maxtext_utils.create_device_mesh(config, devices) with "
                        "ici_fsdp_parallelism=-1 (MaxText's 12 mesh axes, fsdp = every device)"},
        "optimizer": "MaxText optimizers.get_optimizer: %s (lr %g, b1 %g, b2 %g, weight decay %g, "
                     "MaxText's schedule)" % (getattr(config.opt_type, "value", config.opt_type),
                                              config.learning_rate,
                                              config.adam_b1, config.adam_b2,
                                              config.adam_weight_decay),
        "donate_argnums": [donate_argnums] if isinstance(donate_argnums, int)
        else list(donate_argnums),
    }
    args = tuple(shaped_train_args)
    return [("jit_train_step", fn, args, "train")], SourceCountedDraws(draws), facts
