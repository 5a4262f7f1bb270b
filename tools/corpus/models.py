"""The programs of the corpus: transformer training steps as users write them.

Two model families, both trained with softmax cross-entropy, value_and_grad and optax.adam:
  * "plain": plain JAX (no flax), the model the corpus started with. Layers unrolled in Python
    or stacked and run by lax.scan (a while loop in HLO); jax.checkpoint with a policy.
  * "flax": flax.linen with nn.Dropout (the seed user's model), nn.remat, optionally nn.scan.

Every function here runs inside the worker subprocess (tools/corpus/worker.py), after the jax
config flags are set. build_program() returns the jitted functions to compile with their
abstract arguments, and the random draws traced (cells.train_draws counts them by construction).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import NamedSharding, PartitionSpec as P

REMAT_POLICIES = {
    None: None,
    "default": None,  # jax.checkpoint's own default: nothing saveable, prevent_cse=True
    "nothing_saveable": "nothing_saveable",
    "dots_saveable": "dots_saveable",
}


def _policy(name):
    key = REMAT_POLICIES[name]
    return None if key is None else getattr(jax.checkpoint_policies, key)


class Draws:
    """Random draws the program makes, recorded while tracing.

    `sites` are the static draws (a draw inside a scanned layer is one site); `per_step` is how
    many times the forward pass executes them in one call of the function."""

    def __init__(self):
        self.sites = []
        self.multiplier = 1

    def record(self, scope, shape, bits, kind="bits"):
        self.sites.append({"scope": scope, "shape": list(shape), "bits": bits, "kind": kind,
                           "executions_per_step": self.multiplier})

    def summary(self):
        return {"sites": len(self.sites),
                "per_step": sum(s["executions_per_step"] for s in self.sites),
                "draws": self.sites}


def _spec_for(shape, style, mesh_axes, role, mesh_sizes):
    """PartitionSpec of a parameter under a sharding style (role: the parameter's place)."""
    data_size = mesh_sizes.get("data", 1)
    if style in ("megatron", "seqpar"):
        col = {"wq", "wk", "wv", "w1"}
        row = {"wo", "w2"}
        lead = [None] * (len(shape) - 2)
        if role in col:
            return P(*lead, None, "model")
        if role in row:
            return P(*lead, "model", None)
        if role == "b1":
            return P(*([None] * (len(shape) - 1)), "model")
        return P()
    if style == "fsdp":
        # Shard the largest dimension that data divides (ZeRO-3 / FSDP).
        dims = sorted(range(len(shape)), key=lambda d: -shape[d])
        for d in dims:
            if shape[d] % data_size == 0 and shape[d] >= data_size:
                spec = [None] * len(shape)
                spec[d] = "data"
                return P(*spec)
        return P()
    return P()


# --------------------------------------------------------------------------------------
# Plain JAX model
# --------------------------------------------------------------------------------------

def _plain(cfg, prog, mesh, draws):
    L, D, H, F = cfg["num_layers"], cfg["d_model"], cfg["num_heads"], cfg["d_ff"]
    S, V = cfg["seq_len"], cfg["vocab"]
    Dh = D // H
    pdtype = jnp.float32
    cdtype = jnp.dtype(cfg["dtype"])
    keep_prob = 1.0 - cfg["dropout_rate"]
    style = prog["sharding"]
    scanned = prog["layers"] == "scan"
    sizes = dict(zip(mesh.axis_names, mesh.devices.shape))

    def ns(spec):
        return NamedSharding(mesh, spec)

    block_shapes = {
        "ln1_scale": (D,), "ln1_bias": (D,), "wq": (D, D), "wk": (D, D), "wv": (D, D),
        "wo": (D, D), "bo": (D,), "ln2_scale": (D,), "ln2_bias": (D,),
        "w1": (D, F), "b1": (F,), "w2": (F, D), "b2": (D,),
    }

    def leaf(shape, role):
        return jax.ShapeDtypeStruct(shape, pdtype,
                                    sharding=ns(_spec_for(shape, style, mesh.axis_names, role, sizes)))

    if scanned:
        blocks = {k: leaf((L,) + s, k) for k, s in block_shapes.items()}
    else:
        blocks = [{k: leaf(s, k) for k, s in block_shapes.items()} for _ in range(L)]
    params = {"embed": leaf((V, D), "embed"), "blocks": blocks,
              "lnf_scale": leaf((D,), "lnf"), "lnf_bias": leaf((D,), "lnf"),
              "head": leaf((D, V), "head")}

    def layernorm(x, scale, bias):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-6) * scale.astype(x.dtype) + bias.astype(x.dtype)

    def dropout_plain(x, key, scope):
        # Exactly flax.linen.Dropout: bernoulli mask, select(mask, x / keep_prob, 0).
        draws.record(scope, x.shape, 32)
        keep = jax.random.bernoulli(key, keep_prob, x.shape)
        return jnp.where(keep, x / keep_prob, jnp.zeros_like(x))

    if prog.get("shard_map_key"):
        def dropout(x, key, scope):
            def local(x_local, k):
                k = jax.random.fold_in(k, jax.lax.axis_index("data"))
                return dropout_plain(x_local, k, scope)
            return jax.shard_map(local, mesh=mesh, in_specs=(P("data"), P()),
                                 out_specs=P("data"))(x, key)
    else:
        dropout = dropout_plain

    def act_constraint(x):
        if style == "seqpar":  # Megatron sequence parallelism: activations split on seq
            return jax.lax.with_sharding_constraint(x, ns(P("data", "model", None)))
        return x

    def attention(x, p):
        b, s, _ = x.shape
        q = (x @ p["wq"].astype(x.dtype)).reshape(b, s, H, Dh)
        k = (x @ p["wk"].astype(x.dtype)).reshape(b, s, H, Dh)
        v = (x @ p["wv"].astype(x.dtype)).reshape(b, s, H, Dh)
        logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(Dh)
        causal = jnp.tril(jnp.ones((s, s), dtype=bool))
        logits = jnp.where(causal[None, None], logits, jnp.finfo(logits.dtype).min)
        w = jax.nn.softmax(logits, axis=-1)
        o = jnp.einsum("bhqk,bkhd->bqhd", w, v).reshape(b, s, D)
        return o @ p["wo"].astype(x.dtype) + p["bo"].astype(x.dtype)

    def block(x, p, key):
        att_key = jax.random.fold_in(key, 0)
        mlp_key = jax.random.fold_in(key, 1)
        with jax.named_scope("attention"):
            h = attention(layernorm(x, p["ln1_scale"], p["ln1_bias"]), p)
        with jax.named_scope("att_dropout"):
            h = dropout(act_constraint(h), att_key, "att_dropout")
        x = x + h
        with jax.named_scope("mlp"):
            h = layernorm(x, p["ln2_scale"], p["ln2_bias"])
            h = jax.nn.gelu(h @ p["w1"].astype(x.dtype) + p["b1"].astype(x.dtype))
            h = h @ p["w2"].astype(x.dtype) + p["b2"].astype(x.dtype)
        with jax.named_scope("mlp_dropout"):
            h = dropout(act_constraint(h), mlp_key, "mlp_dropout")
        return act_constraint(x + h)

    if prog["remat"]:
        block_fn = jax.checkpoint(block, policy=_policy(prog["remat"]))
    else:
        block_fn = block

    def model(params, tokens, key):
        with jax.named_scope("TransformerModel"), jax.named_scope("_transformer"):
            x = act_constraint(params["embed"][tokens].astype(cdtype))
            if scanned:
                def body(x, xs):
                    p, i = xs
                    return block_fn(x, p, jax.random.fold_in(key, i)), None
                draws.multiplier = L
                with jax.named_scope("layers"):
                    x, _ = jax.lax.scan(body, x, (params["blocks"], jnp.arange(L)))
                draws.multiplier = 1
            else:
                for i in range(L):
                    with jax.named_scope(f"block_{i}"):
                        x = block_fn(x, params["blocks"][i], jax.random.fold_in(key, i))
            x = layernorm(x, params["lnf_scale"], params["lnf_bias"])
            return (x @ params["head"].astype(x.dtype)).astype(jnp.float32)

    def loss_fn(params, batch, key):
        logits = model(params, batch["tokens"], key)
        return optax.softmax_cross_entropy_with_integer_labels(logits, batch["targets"]).mean()

    return params, loss_fn, None


# --------------------------------------------------------------------------------------
# flax.linen model
# --------------------------------------------------------------------------------------

def _flax(cfg, prog, mesh, draws):
    import flax.linen as nn

    L, D, H, F = cfg["num_layers"], cfg["d_model"], cfg["num_heads"], cfg["d_ff"]
    S, V = cfg["seq_len"], cfg["vocab"]
    rate = cfg["dropout_rate"]
    cdtype = jnp.dtype(cfg["dtype"])
    scanned = prog["layers"] == "scan"
    style = prog["sharding"]
    sizes = dict(zip(mesh.axis_names, mesh.devices.shape))

    class CountedDropout(nn.Dropout):
        """nn.Dropout, recording each draw at trace time (the draw itself is flax's)."""

        @nn.compact
        def __call__(self, inputs, deterministic=None, rng=None):
            if not nn.merge_param("deterministic", self.deterministic, deterministic):
                draws.record(self.name, inputs.shape, 32)
            return super().__call__(inputs, deterministic=deterministic, rng=rng)

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x, deterministic):
            h = nn.LayerNorm(dtype=cdtype)(x)
            h = nn.MultiHeadDotProductAttention(num_heads=H, dtype=cdtype, deterministic=True,
                                                name="attention")(h, h, mask=nn.make_causal_mask(
                                                    jnp.ones(x.shape[:2], jnp.int32)))
            h = CountedDropout(rate, name="att_dropout")(h, deterministic=deterministic)
            x = x + h
            h = nn.LayerNorm(dtype=cdtype)(x)
            h = nn.Dense(F, dtype=cdtype, name="mlp_in")(h)
            h = nn.gelu(h)
            h = nn.Dense(D, dtype=cdtype, name="mlp_out")(h)
            h = CountedDropout(rate, name="mlp_dropout")(h, deterministic=deterministic)
            return x + h

    class ScannedBlock(nn.Module):
        @nn.compact
        def __call__(self, x, deterministic):
            return Block(name="block")(x, deterministic), None

    remat_kwargs = {}
    if prog["remat"] and _policy(prog["remat"]) is not None:
        remat_kwargs["policy"] = _policy(prog["remat"])

    class TransformerModel(nn.Module):
        @nn.compact
        def __call__(self, tokens, deterministic):
            x = nn.Embed(V, D, dtype=cdtype, name="embed")(tokens)
            if scanned:
                body = nn.remat(ScannedBlock, static_argnums=(2,), **remat_kwargs) \
                    if prog["remat"] else ScannedBlock
                draws.multiplier = L
                x, _ = nn.scan(body, variable_axes={"params": 0},
                               split_rngs={"params": True, "dropout": True}, length=L,
                               in_axes=nn.broadcast)(name="layers")(x, deterministic)
                draws.multiplier = 1
            else:
                blk = nn.remat(Block, static_argnums=(2,), **remat_kwargs) if prog["remat"] \
                    else Block
                for i in range(L):
                    x = blk(name=f"block_{i}")(x, deterministic)
            x = nn.LayerNorm(dtype=cdtype, name="ln_f")(x)
            return nn.Dense(V, dtype=cdtype, name="head")(x).astype(jnp.float32)

    module = TransformerModel()
    tokens = jax.ShapeDtypeStruct((cfg["global_batch"], S), jnp.int32)
    shapes = jax.eval_shape(lambda k: module.init(k, jnp.zeros(tokens.shape, jnp.int32), True),
                            jax.random.PRNGKey(0))
    draws.sites.clear()

    def with_sharding(path, a):
        role = "w1" if "mlp_in" in str(path) and a.ndim >= 2 else \
               "w2" if "mlp_out" in str(path) and a.ndim >= 2 else ""
        spec = _spec_for(a.shape, style, mesh.axis_names, role, sizes)
        return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=NamedSharding(mesh, spec))

    params = jax.tree_util.tree_map_with_path(with_sharding, shapes)

    def loss_fn(params, batch, key):
        logits = module.apply(params, batch["tokens"], False, rngs={"dropout": key})
        return optax.softmax_cross_entropy_with_integer_labels(logits, batch["targets"]).mean()

    def eval_fn(params, batch):
        logits = module.apply(params, batch["tokens"], True)
        return optax.softmax_cross_entropy_with_integer_labels(logits, batch["targets"]).mean()

    def init_fn(key):
        return module.init(key, jnp.zeros(tokens.shape, jnp.int32), True)

    return params, loss_fn, (eval_fn, init_fn, jax.tree.map(lambda a: a.sharding, params))


# --------------------------------------------------------------------------------------
# Training step and the functions to compile
# --------------------------------------------------------------------------------------

def build_program(prog, mesh):
    """Returns (functions, draws): functions is a list of (jit_name, jitted, abstract_args)."""
    cfg = prog["model"]
    draws = Draws()
    family = _flax if prog["family"] == "flax" else _plain
    params, loss_fn, extra = family(cfg, prog, mesh, draws)

    def ns(*spec):
        return NamedSharding(mesh, P(*spec))

    param_shardings = jax.tree.map(lambda a: a.sharding, params)
    opt = optax.adam(1e-3)
    abstract_opt = jax.eval_shape(opt.init, params)
    adam_state = abstract_opt[0]
    opt_shardings = (adam_state._replace(count=ns(), mu=param_shardings, nu=param_shardings),
                     jax.tree.map(lambda _: ns(), abstract_opt[1]))
    abstract_opt = jax.tree.map(lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s),
                                abstract_opt, opt_shardings)

    B, S = cfg["global_batch"], cfg["seq_len"]
    batch_sharding = ns("data", None)
    batch = {"tokens": jax.ShapeDtypeStruct((B, S), jnp.int32, sharding=batch_sharding),
             "targets": jax.ShapeDtypeStruct((B, S), jnp.int32, sharding=batch_sharding)}
    key_aval = jax.eval_shape(lambda: jax.random.PRNGKey(0))
    rng = jax.ShapeDtypeStruct(key_aval.shape, key_aval.dtype, sharding=ns())
    grad_fn = jax.value_and_grad(loss_fn)

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
            draws.multiplier *= nmb
            (loss, grads), _ = jax.lax.scan(body, (jnp.zeros((), jnp.float32), zeros),
                                            (mbs, jnp.arange(nmb)))
            draws.multiplier //= nmb
            loss = loss / nmb
            grads = jax.tree.map(lambda g: g / nmb, grads)
        else:
            loss, grads = grad_fn(params, batch, rng)
        updates, new_opt_state = opt.update(grads, opt_state, params)
        new_params = optax.apply_updates(params, updates)
        return new_params, new_opt_state, loss, new_rng

    step = jax.jit(train_step,
                   in_shardings=(param_shardings, opt_shardings,
                                 {"tokens": batch_sharding, "targets": batch_sharding}, ns()),
                   out_shardings=(param_shardings, opt_shardings, ns(), ns()),
                   donate_argnums=(0, 1))
    functions = []
    if prog.get("modules") == "init_train_eval" and extra is not None:
        eval_fn, init_fn, shardings = extra
        init = jax.jit(init_fn, in_shardings=ns(), out_shardings=shardings)
        functions.append(("jit_init_fn", init, (rng,), "init"))
        functions.append(("jit_train_step", step, (params, abstract_opt, batch, rng), "train"))
        ev = jax.jit(eval_fn, in_shardings=(param_shardings,
                                            {"tokens": batch_sharding, "targets": batch_sharding}),
                     out_shardings=ns())
        functions.append(("jit_eval_fn", ev, (params, batch), "eval"))
    else:
        functions.append(("jit_train_step", step, (params, abstract_opt, batch, rng), "train"))
    n_params = sum(int(np.prod(a.shape)) for a in jax.tree.leaves(params))
    return functions, draws, {"num_params": n_params, "key_shape": list(key_aval.shape),
                              "key_dtype": str(key_aval.dtype)}
