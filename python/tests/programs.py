"""Two training steps with dropout for the package's tests, each `make_step(target, **levers)`
returning (jitted, abstract_args): the walk-through's flax decoder at a small size, and a plain
JAX MLP whose layers are a scanned, rematerialized loop drawing one mask per layer."""

import os
import sys

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "docs", "examples"))

SMALL = dict(layers=2, d_model=64, heads=4, d_ff=256, seq=32, vocab=256)


def flax_decoder(target, batch_per_device=4):
    from seed_step import make_step
    return make_step(target, batch_per_device=batch_per_device, **SMALL)


def plain_scan(target, batch_per_device=4, layers=3, width=128):
    mesh = target.mesh((target.num_devices,), ("data",))
    rep, data = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))

    def layer(x, wk):
        w, key = wk
        h = jnp.tanh(x @ w)
        keep = jax.random.bernoulli(key, 0.9, h.shape)
        return jnp.where(keep, h / 0.9, 0.0), None

    def loss(w, x, key):
        keys = jax.random.split(key, layers)
        y, _ = jax.lax.scan(jax.checkpoint(layer), x, (w, keys))
        return jnp.mean(y ** 2)

    def step(w, x, key):
        key, sub = jax.random.split(key)
        g = jax.grad(loss)(w, x, sub)
        return w - 1e-3 * g, key

    w = jax.ShapeDtypeStruct((layers, width, width), jnp.float32, sharding=rep)
    x = jax.ShapeDtypeStruct((batch_per_device * target.num_devices, width), jnp.float32,
                             sharding=data)
    raw_key = jax.eval_shape(lambda: jax.random.PRNGKey(0))  # (2,) threefry, (4,) rbg
    key = jax.ShapeDtypeStruct(raw_key.shape, raw_key.dtype, sharding=rep)
    return jax.jit(step, donate_argnums=(0,)), (w, x, key)


PROGRAMS = {"flax_decoder": flax_decoder, "plain_scan": plain_scan}
