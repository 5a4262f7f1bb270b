import os, sys, re, collections
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"
import jax
import jax.numpy as jnp
import jaxlib
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.config.update("jax_threefry_partitionable", False)

shardy_arg = sys.argv[1] if len(sys.argv) > 1 else "default"
shardy_note = "default"
if shardy_arg in ("on", "off"):
    try:
        jax.config.update("jax_use_shardy_partitioner", shardy_arg == "on")
        shardy_note = "set " + shardy_arg
    except Exception as e:
        shardy_note = "option unavailable (%s: %s)" % (type(e).__name__, e)
try:
    shardy_val = jax.config.jax_use_shardy_partitioner
except Exception as e:
    shardy_val = "n/a (%s)" % type(e).__name__

import numpy as np
mesh = Mesh(np.array(jax.devices()[:8]), ("data",))
rep = NamedSharding(mesh, P())
dat = NamedSharding(mesh, P("data"))

def f(key, x):
    return x * jax.random.bernoulli(key, 0.9, x.shape)

key = jax.random.PRNGKey(0)
x = jnp.ones((16, 32, 64), jnp.float32)
key = jax.device_put(key, rep)
x = jax.device_put(x, dat)
txt = jax.jit(f, in_shardings=(rep, dat), out_shardings=dat).lower(key, x).compile().as_text()

print("jax", jax.__version__, "jaxlib", jaxlib.__version__)
print("threefry_partitionable", jax.config.jax_threefry_partitionable)
print("shardy arg:", shardy_arg, "|", shardy_note, "| jax_use_shardy_partitioner =", shardy_val)

ops = ["all-reduce(", "all-gather(", "collective-permute(", "dynamic-update-slice("]
counts = collections.Counter()
shapes = collections.defaultdict(collections.Counter)
all_counts = collections.Counter()
for line in txt.splitlines():
    for op in ops:
        if op in line:
            # shape is the type right after "= "
            m = re.search(r"=\s*(\(?[a-z0-9]+\[[^\]]*\][^ ]*)\s+" + re.escape(op), line)
            shp = m.group(1) if m else "?"
            all_counts[op] += 1
            if shp.startswith("u32") or shp.startswith("(u32"):
                counts[op] += 1
                shapes[op][shp] += 1
for op in ops:
    print("u32 %-22s count=%d shapes=%s   (all dtypes: %d)" % (op, counts[op], dict(shapes[op]), all_counts[op]))
if "--dump" in sys.argv:
    print(txt)
