"""Compile one dropout for XLA:TPU v5e deviceless, jax_threefry_partitionable=False.
usage: dropout.py NAME NDEV MESH(e.g. 16 or 8x2) AXES(e.g. data or data,model) SHAPE(e.g. 16,32,64) SPEC(e.g. data,,  or data,,model) [partitionable]
Consumer variants (../tpu_mask_copy/): `dot` (the dropout feeds a matmul), `dotin` (a matmul feeds
it), `mlp` (Megatron: column- then row-parallel matmuls, all-reduced, then the dropout).
"""
import os, sys, json
name, ndev, mesh_s, axes_s, shape_s, spec_s = sys.argv[1:7]
opts = sys.argv[7:]
part = "partitionable" in opts
nsites = int(([o[6:] for o in opts if o.startswith("sites=")] or ["1"])[0])
mode = ([o[5:] for o in opts if o.startswith("mode=")] or ["sum"])[0]
# Dumps go to $DUMPS/NAME (default: dumps/ beside this script).
out = os.path.join(os.environ.get("DUMPS", os.path.join(os.path.dirname(os.path.abspath(__file__)), "dumps")), name)
os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["TPU_SKIP_MDS_QUERY"] = "1"
os.environ["XLA_FLAGS"] = "--xla_dump_to=%s --xla_dump_hlo_as_text" % out + (" --xla_dump_hlo_pass_re=sharding-propagation|spmd-partitioning" if "passes" in opts else "")
import jax, jax.numpy as jnp, numpy as np
from jax.experimental import topologies, mesh_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
jax.config.update("jax_threefry_partitionable", part)
ndev = int(ndev)
topo_name = {4: "v5e:2x2", 8: "v5e:2x4", 16: "v5e:4x4", 32: "v5e:4x8", 64: "v5e:8x8"}[ndev]
topo = topologies.get_topology_desc(topology_name=topo_name, platform="tpu", chip_config_name="default",
                                    chips_per_host_bounds=(2, 2, 1), num_slices=1)
assert len(topo.devices) == ndev, len(topo.devices)
mshape = tuple(int(v) for v in mesh_s.split("x"))
axes = tuple(axes_s.split(","))
devs = mesh_utils.create_device_mesh(mshape, devices=topo.devices, allow_split_physical_axes=True)
mesh = Mesh(devs, axes)
shape = tuple(int(v) for v in shape_s.split(","))
spec = P(*[(s if s else None) for s in spec_s.split(",")])
xs = NamedSharding(mesh, spec)
ks = NamedSharding(mesh, P())

def drop(key, x):
    keep = jax.random.bernoulli(key, 0.9, x.shape)
    return jnp.where(keep, x / 0.9, 0.0)

W = jnp.asarray(np.random.RandomState(0).randn(shape[-1], shape[-1]).astype(np.float32))

def g(key, x):
    if "mlp" in opts:  # Megatron: column- then row-parallel matmuls (all-reduce), then the dropout
        W1 = jax.lax.with_sharding_constraint(jnp.ones((shape[-1], 4 * shape[-1])), NamedSharding(mesh, P(None, "model")))
        W2 = jax.lax.with_sharding_constraint(jnp.ones((4 * shape[-1], shape[-1])), NamedSharding(mesh, P("model", None)))
        h = jnp.tanh(jnp.einsum("...d,df->...f", x, W1))
        return drop(key, jnp.einsum("...f,fd->...d", h, W2)) + x
    if "dot" in opts:  # the dropout feeds a matmul
        return jnp.einsum("...d,de->...e", drop(key, x), W)
    if "dotin" in opts:  # a matmul feeds the dropout
        return drop(key, jnp.einsum("...d,de->...e", x, W))
    if mode == "sum":   # nsites dropouts of the same x, summed
        return sum(drop(jax.random.fold_in(key, i), x) for i in range(nsites)) if nsites > 1 else drop(key, x)
    for i in range(nsites):  # chain
        x = jnp.tanh(drop(jax.random.fold_in(key, i), x))
    return x

if "grad" in opts:
    def f(key, x):
        gg = g if "nockpt" in opts else jax.checkpoint(g)
        return jax.grad(lambda x: jnp.sum(gg(key, x) ** 2))(x)
else:
    f = g

key = jax.ShapeDtypeStruct((2,), jnp.uint32, sharding=ks)
x = jax.ShapeDtypeStruct(shape, jnp.float32, sharding=xs)
c = jax.jit(f, out_shardings=xs).lower(key, x).compile()
ma = c.memory_analysis()
info = dict(name=name, ndev=ndev, topology=topo_name, mesh=dict(zip(axes, mshape)), shape=shape, spec=spec_s,
            partitionable=part, opts=opts, device_ids=[[int(d.id) for d in np.ravel(devs)]],
            temp=ma.temp_size_in_bytes, args=ma.argument_size_in_bytes, out=ma.output_size_in_bytes,
            jax=jax.__version__)
json.dump(info, open(out + "/info.json", "w"), indent=1)
print(json.dumps(info))
