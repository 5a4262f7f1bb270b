"""The seed user's step (docs/PYTHON.md): a flax transformer decoder with dropout, trained
data-parallel under jit with one PRNG key. `make_step(target)` returns the jitted step and its
abstract arguments, as `python -m spmdsim compile` takes it:

    python -m spmdsim compile docs/examples/seed_step.py:make_step --target h100x8
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from jax.sharding import NamedSharding, PartitionSpec as P

# The seed's shapes: d_model 768 over a sequence of 1024, [128,1024,768] per device per dropout.
SIZES = dict(layers=4, d_model=768, heads=12, d_ff=3072, seq=1024, vocab=16384)
DROPOUT = 0.1


class Block(nn.Module):
    heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x, train):
        h = nn.LayerNorm()(x)
        h = nn.SelfAttention(num_heads=self.heads, deterministic=not train)(h)
        x = x + nn.Dropout(DROPOUT, deterministic=not train, name="att_dropout")(h)
        h = nn.LayerNorm()(x)
        h = nn.Dense(self.d_ff)(h)
        h = nn.Dense(x.shape[-1])(nn.gelu(h))
        return x + nn.Dropout(DROPOUT, deterministic=not train, name="mlp_dropout")(h)


class Decoder(nn.Module):
    layers: int
    d_model: int
    heads: int
    d_ff: int
    vocab: int

    @nn.compact
    def __call__(self, tokens, train=True):
        x = nn.Embed(self.vocab, self.d_model)(tokens)
        for i in range(self.layers):
            # Each block recomputed in the backward pass (flax's nn.remat).
            block = nn.remat(Block, static_argnums=(2,))
            x = block(self.heads, self.d_ff, name="block_%d" % i)(x, train)
        return nn.Dense(self.vocab)(nn.LayerNorm()(x))


def make_step(target, batch_per_device=128, **sizes):
    """The jitted train step for `target` and its abstract arguments; `sizes` override SIZES."""
    cfg = dict(SIZES, **sizes)
    seq, vocab = cfg.pop("seq"), cfg["vocab"]
    model = Decoder(**cfg)
    tx = optax.adam(1e-4)
    mesh = target.mesh((target.num_devices,), ("data",))
    replicated = NamedSharding(mesh, P())
    batch_sharded = NamedSharding(mesh, P("data"))

    def loss_fn(params, tokens, rng):
        logits = model.apply(params, tokens, rngs={"dropout": rng})
        labels = jax.nn.one_hot(tokens, vocab)
        return optax.softmax_cross_entropy(logits, labels).mean()

    def train_step(params, opt_state, tokens, rng):
        rng, step_rng = jax.random.split(rng)
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, step_rng)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, rng, loss

    tokens = jax.ShapeDtypeStruct((batch_per_device * target.num_devices, seq), jnp.int32,
                                  sharding=batch_sharded)
    # The key's shape is the default PRNG implementation's ((2,) threefry, (4,) rbg).
    key_shape = jax.eval_shape(lambda: jax.random.PRNGKey(0))
    key = jax.ShapeDtypeStruct(key_shape.shape, key_shape.dtype, sharding=replicated)
    params = jax.eval_shape(lambda: model.init(jax.random.PRNGKey(0), tokens, train=False))
    opt_state = jax.eval_shape(tx.init, params)
    with_sharding = lambda tree: jax.tree_util.tree_map(
        lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=replicated), tree)
    args = (with_sharding(params), with_sharding(opt_state), tokens, key)
    return jax.jit(train_step, donate_argnums=(0, 1)), args
