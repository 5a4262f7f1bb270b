"""docs/PYTHON.md's walk-through, as one script: the seed user's flax step with dropout on 8 H100s
(none needed), the peak and whether it fits, what is live there, the random bits held into the
backward, and the fixes, checked by compiling each.

    python docs/examples/seed_walkthrough.py [--json FILE]

python/tests/test_walkthrough.py runs it and checks every figure against XLA's memory_analysis()
of the same compiles.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # GPU targets compile deviceless

import jax  # noqa: E402

import spmdsim  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seed_step import make_step  # noqa: E402


def gib(n):
    return "%.2f GiB" % (n / 2**30)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", help="write the figures here (the test reads them)")
    args = parser.parse_args(argv)

    # The seed user's settings: partitionable threefry with XLA:GPU's threefry kernel.
    jax.config.update("jax_threefry_partitionable", True)
    jax.config.update("jax_threefry_gpu_kernel_lowering", True)

    # 1. Compile for 8 H100s and ask whether the step fits.
    target = spmdsim.Target("h100", devices=8)
    step, abstract_args = make_step(target)
    analysis = target.compile(step, *abstract_args)
    m = analysis.step
    print("1. %s: peak %s per device; %s can give XLA %s: %s" % (
        m.name, gib(m.memory.peak_bytes), m.fit.device_name, gib(m.fit.usable_bytes),
        "fits" if m.fit.fits else "over by %s" % gib(-m.fit.margin_bytes)))
    print("   XLA's memory_analysis(): peak %s" % gib(m.memory.xla.peak_bytes))

    # 2. What is live at the peak.
    print("2. live at the peak (largest first):")
    for b in m.memory.live_at_peak[:5]:
        print("   %9s  %-22s %s" % (gib(b.size_bytes), b.shape, b.op_name[-70:]))

    # 3. The random numbers: draws, the bits held into the backward, what they are of the peak.
    bits = m.rng.bits_sites
    held = [f for f in m.findings if f.kind == "rng-key-residual"]
    print("3. %d random draws; %s of random bits held into the backward (%d findings); "
          "%s of the peak is random bits" % (len(bits), gib(sum(f.bytes for f in held)),
                                            len(held), gib(m.fit.random_bits_at_peak_bytes)))

    # 4. The fixes spmdsim ranks from this one dump, by the peak each gives.
    print("4. fixes, ranked by the peak each gives (from the dump alone):")
    for f in m.fit.fixes:
        print("   %-20s %s  %s" % (f.fix, gib(f.peak_bytes), "fits" if f.fits else "does not fit"))

    # 5. Checked by compiling each: the JAX levers and a smaller batch.
    whatif = target.whatif(lambda **kw: make_step(target, **kw),
                           jax_threefry_partitionable=[False],
                           jax_threefry_gpu_kernel_lowering=[False],
                           jax_default_prng_impl=["rbg"],
                           batch_per_device=[64])
    print("5. " + whatif.table())

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"peak_bytes": m.memory.peak_bytes,
                       "xla_memory_analysis": analysis.xla_memory_analysis,
                       "fits": m.fit.fits, "usable_bytes": m.fit.usable_bytes,
                       "whatif": whatif.to_json()}, f, indent=1, default=str)
    return analysis, whatif


if __name__ == "__main__":
    main()
