"""python -m spmdsim: compile a step for a target without its hardware and analyse it.

    python -m spmdsim compile path/to/file.py:make_step --target h100x8
    python -m spmdsim compile file.py:make_step --target v5e:2x4 \\
        --whatif jax_threefry_partitionable=true,false --whatif jax_default_prng_impl=rbg

`make_step(target)` returns `(jitted, abstract_args)`: build the mesh with `target.mesh(...)`.
A lever not named jax_* is passed to `make_step(target, NAME=VALUE)`.
Exit codes as the binary's: 0 fits (or no device to judge), 1 does not fit, 2 usage or I/O.
Anything else given after `--` goes to the binary as is: `python -m spmdsim -- analyze DIR`.
"""

import argparse
import ast
import json
import os
import re
import runpy
import sys

TARGET_FORMS = "h100x8, h100x16, h200x8, a100-80gx8, a100-40gx8, b200x8, v5e:2x4, v5p:2x2x2, " \
               "v6e:2x4, cpux8"


def parse_target(text):
    """"h100x8" -> ("h100", 8); "v5e:2x4" -> ("v5e", "2x4"); "cpux8" -> ("cpu", 8)."""
    if ":" in text:
        kind, grid = text.split(":", 1)
        return kind, grid
    m = re.fullmatch(r"(.+?)x(\d+)", text)
    if not m:
        raise argparse.ArgumentTypeError("target %r: one of %s" % (text, TARGET_FORMS))
    return m.group(1), int(m.group(2))


def parse_value(text):
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_lever(text):
    if "=" not in text:
        raise argparse.ArgumentTypeError("--whatif %r: NAME=VALUE[,VALUE...]" % text)
    name, values = text.split("=", 1)
    return name.strip(), [parse_value(v) for v in values.split(",") if v.strip()]


def prepare_environment(kind, devices):
    """What XLA reads when JAX starts: set before the user's file imports jax."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")  # GPU and TPU targets compile deviceless
    if kind == "cpu":
        flag = "--xla_force_host_platform_device_count=%d" % devices
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()


def load_factory(spec):
    path, _, name = spec.rpartition(":")
    if not path or not name:
        raise SystemExit("spmdsim: %r: give FILE.py:FUNCTION" % spec)
    if not os.path.isfile(path):
        raise SystemExit("spmdsim: %s: no such file" % path)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    namespace = runpy.run_path(path, run_name="spmdsim_step")
    if name not in namespace or not callable(namespace[name]):
        raise SystemExit("spmdsim: %s has no function %s" % (path, name))
    return namespace[name]


def cmd_compile(args):
    kind, devices = args.target
    prepare_environment(kind, devices)
    import spmdsim
    try:
        target = spmdsim.Target(kind, devices, capacity=args.capacity,
                                mem_fraction=args.mem_fraction)
    except ValueError as e:
        raise spmdsim.SpmdsimError(str(e)) from None
    make_step = load_factory(args.step)
    levers = dict(args.whatif or [])
    if levers:
        factory_levers = {k: v for k, v in levers.items() if not k.startswith("jax_")}

        if factory_levers:
            def step(**kw):
                return make_step(target, **kw)
            abstract = ()
        else:
            step, abstract = make_step(target)
        result = target.whatif(step, *abstract, **levers)
        print(json.dumps(result.to_json(), indent=1, default=str) if args.format == "json"
              else result.table())
        return 0 if result.rows[0].fits is not False else 1
    jitted, abstract = make_step(target)
    analysis = target.compile(jitted, *abstract)
    extra = ["--device", target.device] if target.device else []
    if args.capacity:
        extra += ["--capacity", str(args.capacity)]
    if args.mem_fraction:
        extra += ["--mem-fraction", str(args.mem_fraction)]
    rc, out, err = spmdsim._engine.run(["analyze"] + analysis.inputs + extra +
                                       ["--stage", "after", "--format", args.format], check=True)
    sys.stdout.write(out)
    sys.stderr.write(err)
    print("spmdsim: XLA's dump is in %s" % analysis.inputs[0], file=sys.stderr)
    fits = analysis.step.fits
    return 1 if fits is False else 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--":
        from ._engine import binary_path
        os.execv(binary_path(), [binary_path()] + argv[1:])
    parser = argparse.ArgumentParser(prog="python -m spmdsim", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compile", help="compile make_step for a target and analyse it")
    c.add_argument("step", help="FILE.py:FUNCTION, where FUNCTION(target) returns "
                                "(jitted, abstract_args)")
    c.add_argument("--target", required=True, type=parse_target,
                   help="the devices: " + TARGET_FORMS)
    c.add_argument("--whatif", action="append", type=parse_lever, metavar="NAME=V1,V2",
                   help="recompile with each value (repeatable): a JAX config option or an "
                        "argument of make_step")
    c.add_argument("--capacity", help="the memory XLA may use per device (e.g. 60GiB)")
    c.add_argument("--mem-fraction", type=float, help="GPU: XLA_PYTHON_CLIENT_MEM_FRACTION")
    c.add_argument("--format", choices=["text", "json"], default="text")
    args = parser.parse_args(argv)
    try:
        return cmd_compile(args)
    except Exception as e:  # noqa: BLE001 - one line for the user, not a traceback
        from ._engine import SpmdsimError
        from .targets import TargetUnavailable
        if isinstance(e, (SpmdsimError, TargetUnavailable)):
            print("spmdsim: error: %s" % e, file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
