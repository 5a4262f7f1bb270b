#!/usr/bin/env python3
"""Write the JAX RNG answer tables that spmdsim's threefry implementation is tested against.

For each counter mode (jax_threefry_partitionable True / False) this records, from the pinned JAX
(tools/requirements/jax0.10.2.txt) on CPU:
  bits      jax.random.bits for bit widths 8/16/32/64 over several keys and shapes: an odd element
            count (replicated mode pads odd counter arrays), a multi-dimensional shape
            (partitionable mode builds counters from per-dimension iotas), small, scalar and empty
            shapes; at least 1,000 values per mode and width.
  split     jax.random.split for several counts, up to 1,000 keys.
  fold_in   jax.random.fold_in for several data values.
  uniform   jax.random.uniform(float32), stored as the IEEE bit pattern of each value.
  bernoulli jax.random.bernoulli with a float32 p (a dropout keep mask), stored as a 0/1 string;
            cuda_validate's lowerings are checked against it.
and, in seeds.json, the key jax.random.key(seed) makes with and without jax_enable_x64.

Files: testdata/rng_tables/{partitionable,replicated,seeds}.json, one case per line so that a
regeneration reads as a diff. Deterministic: the same JAX writes the same bytes.

Usage:
  tools/setup_python.sh && .venv/bin/python tools/gen_rng_tables.py [--out DIR]
"""

import argparse
import json
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "testdata", "rng_tables")

# (seed, shape): every shape for every bit width. 1001 is odd (and so are the replicated counter
# word counts for 8/16/32 bits: 251, 501, 1001); (4, 5, 67) has 1340 elements.
BITS_CASES = [
    (1701, (3,)),
    (0, (3,)),
    (42, (1001,)),
    (1701, (4, 5, 67)),
    (2**40 + 7, (2, 3, 7)),
    (-3, (5, 1)),
    (7, ()),
    (7, (0,)),
    (7, (2, 0, 3)),
]
BIT_WIDTHS = (8, 16, 32, 64)
SPLIT_CASES = [(0, 1), (0, 2), (0, 3), (0, 4), (1701, 7), (99, 1000)]
FOLD_IN_CASES = [(0, 0), (0, 4), (0, 1), (1701, 2**31), (1701, 2**32 - 1), (123456789, 1000)]
UNIFORM_CASES = [(0, ()), (0, (1001,)), (1701, (6, 7))]
# (seed, shape, keep probability): a [B, S, D] activation's dropout mask, and an odd count.
BERNOULLI_CASES = [(1701, (8, 5, 27), 0.9), (3, (1001,), 0.5)]
SEEDS = [0, 1, 42, 1701, -1, -5, 2**31 - 1, 2**31, -(2**31), 2**32, 2**32 + 5, 2**40 + 7,
         2**63 - 1, -(2**63)]

UINT = {8: jnp.uint8, 16: jnp.uint16, 32: jnp.uint32, 64: jnp.uint64}


def key_data(key):
    return [int(v) for v in np.asarray(jax.random.key_data(key)).reshape(-1)]


def flat(array):
    return [int(v) for v in np.asarray(array).reshape(-1)]


def mode_table(partitionable):
    jax.config.update("jax_threefry_partitionable", partitionable)
    bits = []
    for seed, shape in BITS_CASES:
        key = jax.random.key(seed)
        for width in BIT_WIDTHS:
            values = jax.random.bits(key, shape, dtype=UINT[width])
            bits.append({"seed": seed, "key": key_data(key), "shape": list(shape),
                         "bit_width": width, "values": flat(values)})
    split = []
    for seed, num in SPLIT_CASES:
        key = jax.random.key(seed)
        keys = jax.random.key_data(jax.random.split(key, num))
        split.append({"seed": seed, "key": key_data(key), "num": num,
                      "keys": [[int(a), int(b)] for a, b in np.asarray(keys)]})
    fold_in = []
    for seed, data in FOLD_IN_CASES:
        key = jax.random.key(seed)
        fold_in.append({"seed": seed, "key": key_data(key), "data": data,
                        "result": key_data(jax.random.fold_in(key, data))})
    uniform = []
    for seed, shape in UNIFORM_CASES:
        key = jax.random.key(seed)
        values = np.asarray(jax.random.uniform(key, shape, dtype=jnp.float32))
        uniform.append({"seed": seed, "key": key_data(key), "shape": list(shape),
                        "f32_bits": flat(values.view(np.uint32))})
    bernoulli = []
    for seed, shape, p in BERNOULLI_CASES:
        key = jax.random.key(seed)
        p32 = np.float32(p)
        mask = np.asarray(jax.random.bernoulli(key, jnp.float32(p32), shape)).reshape(-1)
        bernoulli.append({"seed": seed, "key": key_data(key), "shape": list(shape),
                          "p_f32_bits": int(p32.view(np.uint32)),
                          "mask": "".join("1" if m else "0" for m in mask)})
    return {"bits": bits, "split": split, "fold_in": fold_in, "uniform_f32": uniform,
            "bernoulli": bernoulli}


def check_known_answers(tables):
    """REFERENCE.md section 2's JAX known answers, so a table from a misconfigured JAX is refused."""
    rep, part = tables["replicated"], tables["partitionable"]

    def bits(table, seed, width):
        return next(c["values"] for c in table["bits"]
                    if c["seed"] == seed and c["shape"] == [3] and c["bit_width"] == width)

    def split(table, seed, num):
        return next(c["keys"] for c in table["split"] if c["seed"] == seed and c["num"] == num)

    expect = [
        (split(rep, 0, 4), [[2285895361, 1501764800], [1518642379, 4090693311],
                            [433833334, 4221794875], [839183663, 3740430601]]),
        (bits(rep, 1701, 8), [216, 115, 43]),
        (bits(rep, 1701, 16), [41682, 1300, 55017]),
        (bits(rep, 1701, 32), [56197195, 4200222568, 961309823]),
        (bits(rep, 1701, 64), [3982329540505020460, 16822122385914693683, 7882654074788531506]),
        (bits(part, 0, 32), [0xF29A4FA7, 0xFA843692, 0x55110E28]),
        (bits(part, 0, 64), [0x6B20015999BA4EFE, 0x375F238FCDDB151D, 0xF71F4EA9A20E4081]),
        (split(part, 0, 2), [[1797259609, 2579123966], [928981903, 3453687069]]),
    ]
    fold = next(c["result"] for c in rep["fold_in"] if c["seed"] == 0 and c["data"] == 4)
    expect.append((fold, [2285895361, 433833334]))
    for got, want in expect:
        if got != want:
            sys.exit("gen_rng_tables: JAX disagrees with a REFERENCE known answer: %r != %r"
                     % (got, want))


def seeds_table():
    rows = []
    for x64 in (True, False):
        jax.config.update("jax_enable_x64", x64)
        for seed in SEEDS:
            rows.append({"seed": seed, "x64": x64, "key": key_data(jax.random.key(seed))})
    jax.config.update("jax_enable_x64", True)
    return {"seeds": rows}


def write(path, header, table):
    """One top-level key per line group, one case per line: stable bytes and readable diffs."""
    lines = ["{"]
    items = list(header.items()) + list(table.items())
    for index, (name, value) in enumerate(items):
        comma = "," if index + 1 < len(items) else ""
        if isinstance(value, list):
            lines.append("  %s: [" % json.dumps(name))
            for i, case in enumerate(value):
                lines.append("    %s%s" % (json.dumps(case, separators=(",", ":")),
                                          "," if i + 1 < len(value) else ""))
            lines.append("  ]%s" % comma)
        else:
            lines.append("  %s: %s%s" % (json.dumps(name), json.dumps(value), comma))
    lines.append("}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory (default %(default)s)")
    args = ap.parse_args()
    # uint64 bits and 64-bit seeds need x64; the seeds table also records the x32 behaviour.
    jax.config.update("jax_enable_x64", True)
    tables = {"partitionable": mode_table(True), "replicated": mode_table(False)}
    check_known_answers(tables)
    os.makedirs(args.out, exist_ok=True)
    common = {"schema_version": 1, "generator": "tools/gen_rng_tables.py",
              "jax_version": jax.__version__, "jax_enable_x64": True}
    for mode, table in tables.items():
        header = dict(common, mode=mode, jax_threefry_partitionable=(mode == "partitionable"))
        write(os.path.join(args.out, mode + ".json"), header, table)
    write(os.path.join(args.out, "seeds.json"), dict(common, jax_enable_x64="per row"),
          seeds_table())
    total = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print("gen_rng_tables: wrote %s (%d bytes)" % (args.out, total))


if __name__ == "__main__":
    main()
