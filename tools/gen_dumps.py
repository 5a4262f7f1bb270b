#!/usr/bin/env python3
"""Generate the ground-truth corpus: real XLA dumps of training steps, compiled by several JAX
versions for XLA:CPU, XLA:GPU (H100) and XLA:TPU (v5e), never executed.

The matrix (cells: program x platform x JAX version) is tools/corpus/cells.py; the programs are
tools/corpus/models.py; how each platform's devices are described is tools/corpus/platforms.py.
Each cell is compiled in its own subprocess, by the python of its JAX environment (a venv made by
tools/setup_python.sh --env ENV), with XLA_FLAGS (--xla_dump_to) set before jax is imported.
From the dump directory, the files of the compiled functions' modules are kept under XLA's own
names (before/after optimizations, buffer assignment, live ranges, memory-usage report) beside
memory_analysis.json, cost_analysis.json and program.json (which also counts the random draws the
program makes, by construction). Files over 64 kB are gzipped deterministically (gzip -n -9).

This driver needs only the standard library; run it with any python3:
  python3 tools/gen_dumps.py                         # every cell whose environment is set up
  python3 tools/gen_dumps.py --env jax0.12.0.1       # the cells of one JAX version
  python3 tools/gen_dumps.py --platform gpu8         # the cells of one platform
  python3 tools/gen_dumps.py --only NAME             # one cell (repeatable)
  python3 tools/gen_dumps.py --sample                # the fixed sample CI regenerates
  python3 tools/gen_dumps.py --list
  python3 tools/gen_dumps.py --thirdparty-src flax=PATH ...  # third-party programs' source
Third-party programs (tools/corpus/thirdparty/) are read from a source tree given with
--thirdparty-src NAME=PATH (or SPMDSIM_<NAME>_SRC); their cells are skipped when it is not given.
"""

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))

from corpus import cells, platforms, thirdparty  # noqa: E402

DEFAULT_OUT = os.path.join(REPO, "testdata", "dumps")
MANIFEST = os.path.join(REPO, "testdata", "manifest.json")
GZIP_THRESHOLD = 64_000  # bytes: text above this is gzipped (the corpus stays under ~80 MB)

# One cell per (platform, JAX version) and per lowering family: CI regenerates these and
# compares them with the committed files (the whole matrix takes too long for CI's budget).
SAMPLE = [
    "dp8_partitionable_remat", "dp8_replicated_noremat", "dp8_rbg_remat",
    "jax012_cpu8_flax_dp_partitionable_remat", "jax012_gpu8_flax_dp_replicated_remat",
    "jax012_gpu8_plain_dp_partitionable_kernel_remat", "jax012_tpu4_megatron_replicated_remat",
    "jax04_cpu8_plain_dp_partitionable_remat",
    # MaxText's own train step as MaxText ships it (unsafe_rbg), env maxtext0.2.5: ~10 s.
    "jax012_tpu4_maxtext_llama_fsdp_unsafe_rbg_remat",
]

MODULE_RE = re.compile(r"^module_(\d+)\.(jit_[A-Za-z0-9_]+)\.(.+)$")
# XLA's dump files that are kept (suffix after the module's name and platform prefix).
KEEP_SUFFIXES = (
    "before_optimizations.txt",
    "after_optimizations.txt",
    "after_optimizations-buffer-assignment.txt",
    "after_optimizations-memory-usage-report.txt",
    "after_optimizations-live-range.txt",
)


def venv_python(env):
    return os.path.join(REPO, cells.ENVIRONMENTS[env]["venv"], "bin", "python")


def normalize_backend_configs(text):
    """Re-serialize every backend_config={...} JSON with sorted keys.

    compiled.as_text() and the *_after_optimizations.txt dump print the same module, but the
    dump keeps backend_config keys in proto field order while as_text() sorts them."""
    out, i = [], 0
    while True:
        j = text.find("backend_config={", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        start = j + len("backend_config=")
        depth, k = 0, start
        while k < len(text):
            if text[k] == "{":
                depth += 1
            elif text[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        blob = text[start:k + 1]
        try:
            blob = json.dumps(json.loads(blob), sort_keys=True, separators=(",", ":"))
        except ValueError:
            pass
        out.append(text[i:start])
        out.append(blob)
        i = k + 1


def gzip_file(path):
    with open(path, "rb") as f:
        data = f.read()
    gz = path + ".gz"
    with open(gz, "wb") as raw:
        # mtime=0 and no file name: same bytes as `gzip -n -9`.
        with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=raw, mtime=0) as g:
            g.write(data)
    os.remove(path)
    return gz


def kept_files(dump_dir, jit_names):
    """{jit_name: [file, ...]}: the kept dump files of each compiled function's modules."""
    out = {n: [] for n in jit_names}
    for fn in sorted(os.listdir(dump_dir)):
        m = MODULE_RE.match(fn)
        if m and m.group(2) in out and fn.endswith(KEEP_SUFFIXES):
            out[m.group(2)].append(fn)
    return out


def run_cell(cell, out_dir):
    dest = os.path.join(out_dir, cell["name"])
    work = tempfile.mkdtemp(prefix="spmdsim_dump_")
    try:
        dump_dir = os.path.join(work, "xla_dump")
        res_dir = os.path.join(work, "result")
        env = dict(os.environ)
        for k in ("JAX_ENABLE_X64", "XLA_FLAGS", "JAX_PLATFORMS", "TPU_SKIP_MDS_QUERY"):
            env.pop(k, None)
        env.update(platforms.environment(cell["platform"]))
        env["XLA_FLAGS"] = " ".join(platforms.xla_flags(cell["platform"]) +
                                    ["--xla_dump_hlo_as_text", "--xla_dump_to=" + dump_dir])
        t0 = time.time()
        proc = subprocess.run([venv_python(cell["env"]),
                               os.path.join(REPO, "tools", "corpus", "worker.py"),
                               cell["name"], res_dir], env=env, capture_output=True, text=True)
        elapsed = time.time() - t0
        if proc.returncode != 0:
            sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-8000:])
            raise RuntimeError("worker failed for %s" % cell["name"])
        timing = json.loads(proc.stdout.strip().splitlines()[-1])
        with open(os.path.join(res_dir, "program.json")) as f:
            info = json.load(f)
        jit_names = [m["jit_name"] for m in info["modules"]]
        files = kept_files(dump_dir, jit_names)
        single = len(jit_names) == 1

        if os.path.exists(dest):
            shutil.rmtree(dest)
        os.makedirs(dest)
        for module in info["modules"]:
            name = module["jit_name"]
            if not any(f.endswith("after_optimizations.txt") for f in files[name]):
                raise RuntimeError("%s: no after-optimizations dump of %s" % (cell["name"], name))
            for fn in files[name]:
                shutil.copyfile(os.path.join(dump_dir, fn), os.path.join(dest, fn))
            prefix = "" if single else name + "."
            for kind in ("memory_analysis", "cost_analysis"):
                shutil.copyfile(os.path.join(res_dir, "%s.%s.json" % (name, kind)),
                                os.path.join(dest, "%s%s.json" % (prefix, kind)))
            after = [f for f in files[name] if f.endswith("after_optimizations.txt")][0]
            with open(os.path.join(dest, after)) as a, \
                    open(os.path.join(res_dir, name + ".as_text.txt")) as c:
                text = c.read()
                differs = normalize_backend_configs(a.read()) != normalize_backend_configs(text)
            module["compiled_as_text_differs_from_after_optimizations"] = differs
            if differs:
                with open(os.path.join(dest, prefix + "compiled_as_text.txt"), "w") as f:
                    f.write(text)
        with open(os.path.join(dest, "program.json"), "w") as f:
            json.dump(info, f, indent=1, sort_keys=True)
            f.write("\n")
        for fn in sorted(os.listdir(dest)):
            p = os.path.join(dest, fn)
            if os.path.getsize(p) > GZIP_THRESHOLD:
                gzip_file(p)
        compile_s = sum(t["compile_s"] for t in timing.values())
        print("%-58s %-5s %-11s compile %5.1fs total %5.1fs" % (
            cell["name"], cell["platform"], cell["env"], compile_s, elapsed), flush=True)
        return dest
    finally:
        shutil.rmtree(work, ignore_errors=True)


def module_entry(dest, testdata_root, files, jit_name, prefix):
    def find(suffix, owned=True):
        for f in files:
            stem = f[:-3] if f.endswith(".gz") else f
            if owned and not (".%s." % jit_name in f or f.startswith(prefix)):
                continue
            if stem.endswith(suffix):
                return os.path.relpath(os.path.join(dest, f), testdata_root)
        return None

    def find_json(kind):  # (or text) beside the dump, named after the function if several
        for p in (os.path.join(dest, prefix + kind), os.path.join(dest, prefix + kind + ".gz")):
            if os.path.exists(p):
                return os.path.relpath(p, testdata_root)
        return None

    ma = find_json("memory_analysis.json")
    with open(os.path.join(testdata_root, ma)) as f:
        mem = json.load(f)
    return {
        "files": {
            "before": find(".before_optimizations.txt"),
            "after": find("after_optimizations.txt"),
            "buffer_assignment": find("after_optimizations-buffer-assignment.txt"),
            "memory_usage_report": find("-memory-usage-report.txt"),
            "live_range": find("-live-range.txt"),
            "memory_analysis": ma,
            "cost_analysis": find_json("cost_analysis.json"),
            "program": os.path.relpath(os.path.join(dest, "program.json"), testdata_root),
            "compiled_as_text": find_json("compiled_as_text.txt"),
        },
        "memory_analysis": mem,
    }


def manifest_entry(cell, out_dir, testdata_root):
    dest = os.path.join(out_dir, cell["name"])
    files = sorted(os.listdir(dest))
    with open(os.path.join(dest, "program.json")) as f:
        info = json.load(f)
    prog = cell["program"]
    single = len(info["modules"]) == 1
    modules = []
    for m in info["modules"]:
        entry = module_entry(dest, testdata_root, files, m["jit_name"],
                             "" if single else m["jit_name"] + ".")
        draws = cells.train_draws(prog) if m["role"] == "train" else {
            "sites": m["random_draws"]["sites"], "per_step": m["random_draws"]["per_step"],
            "redrawn_by_remat": 0}
        if thirdparty.is_thirdparty(prog):  # counted by its module (program.json)
            draws = {k: m["random_draws"][k] for k in ("sites", "per_step", "redrawn_by_remat",
                                                       "counted_from", "draws")
                     if k in m["random_draws"]}
            draws.setdefault("redrawn_by_remat", 0)
        entry = dict({"jit_name": m["jit_name"], "role": m["role"], "random_draws": draws},
                     **entry)
        modules.append(entry)
    train = next(m for m in modules if m["role"] == "train")
    model = info["model"]
    # The array each dropout draws for: one microbatch's activations, split over the mesh axes
    # of cells.activation_spec.
    global_shape = [model["global_batch"] // max(1, prog["grad_accum_microbatches"]),
                    model["seq_len"], model["d_model"]]
    axis_size = dict(zip(info["mesh"]["axes"], info["mesh"]["shape"]))
    per_device = [n // axis_size.get(axis, 1) if axis else n
                  for n, axis in zip(global_shape, cells.activation_spec(prog))]
    if thirdparty.is_thirdparty(prog):  # its module may say which array (program.json's model)
        global_shape = model.get("dropout_shape_global", global_shape)
        per_device = model.get("dropout_shape_per_device", per_device)
    return {
        "name": cell["name"],
        "dir": os.path.relpath(dest, testdata_root),
        "description": prog["description"],
        "env": cell["env"],
        "jax_version": info["jax_version"],
        "platform": cell["platform"],
        "platform_kind": platforms.PLATFORMS[cell["platform"]]["kind"],
        "num_devices": info["num_devices"],
        "mesh": info["mesh"],
        "family": prog["family"],
        "sharding": prog["sharding"],
        "layers": prog["layers"],
        "threefry_partitionable": prog["threefry_partitionable"],
        "remat": bool(prog["remat"]),
        "remat_policy": prog["remat"],
        "prng_impl": prog["prng_impl"],
        "gpu_kernel_lowering": prog["gpu_kernel_lowering"],
        "shard_map_per_device_key": prog["shard_map_key"],
        "grad_accum_microbatches": prog["grad_accum_microbatches"],
        "size": prog["size"],
        "model": {
            **{k: model[k] for k in ("num_layers", "d_model", "num_heads", "d_ff", "seq_len",
                                     "vocab", "global_batch", "dtype", "dropout_rate")},
            "dropout_shape_global": global_shape,
            "dropout_shape_per_device": per_device,
        },
        "random_draws": train["random_draws"],
        **({"thirdparty": info["thirdparty"]} if "thirdparty" in info else {}),
        "files": train["files"],
        "memory_analysis": train["memory_analysis"],
        "modules": modules,
    }


def environment_versions(env):
    py = venv_python(env)
    if not os.path.exists(py):
        return None
    out = subprocess.run([py, "-c", "import json, sys, importlib.metadata as md; print(json.dumps("
                          "{'python': '%d.%d' % sys.version_info[:2], 'packages': {p: md.version(p) "
                          "for p in ('jax', 'jaxlib', 'optax')}}))"], capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else None


def write_manifest(out_dir, path):
    testdata_root = os.path.dirname(path)
    present = [c for c in cells.CELLS if os.path.isdir(os.path.join(out_dir, c["name"]))]
    manifest = {
        "regenerate": "tools/setup_python.sh --all && python3 tools/gen_dumps.py",
        "environments": {e: {"venv": d["venv"], "requirements": "tools/requirements/%s.txt" % e}
                         for e, d in cells.ENVIRONMENTS.items()},
        "platforms": {n: {"kind": p["kind"], "devices": p["devices"],
                          "description": p["description"],
                          "env": platforms.environment(n),
                          "xla_flags": " ".join(platforms.xla_flags(n) + [
                              "--xla_dump_hlo_as_text", "--xla_dump_to=<DIR>"])}
                      for n, p in platforms.PLATFORMS.items()},
        "programs": [manifest_entry(c, out_dir, testdata_root) for c in present],
    }
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory (default testdata/dumps)")
    ap.add_argument("--only", action="append", help="cell name (repeatable)")
    ap.add_argument("--env", action="append", choices=sorted(cells.ENVIRONMENTS),
                    help="only the cells of this JAX environment (repeatable)")
    ap.add_argument("--platform", action="append", choices=sorted(platforms.PLATFORMS),
                    help="only the cells of this platform (repeatable)")
    ap.add_argument("--sample", action="store_true", help="the fixed sample CI regenerates")
    ap.add_argument("--small-only", action="store_true", help="skip seed-size programs")
    ap.add_argument("--list", action="store_true", help="list cells and exit")
    ap.add_argument("--thirdparty-src", action="append", default=[], metavar="NAME=PATH",
                    help="source tree of third-party programs NAME (e.g. flax=/path/to/flax.git; "
                         "sets SPMDSIM_<NAME>_SRC for the workers)")
    ap.add_argument("--print-unsourced", action="store_true",
                    help="print the third-party cells whose source is not given, and exit")
    ap.add_argument("--no-manifest", action="store_true",
                    help="do not rewrite testdata/manifest.json (implied when --out is not the default)")
    ap.add_argument("--manifest", help="write the manifest to this path instead")
    ap.add_argument("--manifest-only", action="store_true",
                    help="compile nothing: rewrite the manifest from the cells already in --out")
    args = ap.parse_args()
    for spec in args.thirdparty_src:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            ap.error("--thirdparty-src wants NAME=PATH, got %r" % spec)
        os.environ[thirdparty.source_env(name)] = os.path.abspath(path)

    if args.print_unsourced:
        for c in cells.CELLS:
            if thirdparty.missing_source(c["program"]):
                print(c["name"])
        return

    if args.list:
        for c in cells.CELLS:
            print("%-58s %-5s %-11s %s" % (c["name"], c["platform"], c["env"],
                                            c["program"]["description"]))
        return

    if args.manifest_only:
        out_dir = os.path.abspath(args.out)
        manifest_path = os.path.abspath(args.manifest or MANIFEST)
        write_manifest(out_dir, manifest_path)
        print("wrote", manifest_path)
        return

    chosen = [c for c in cells.CELLS
              if (not args.only or c["name"] in args.only)
              and (not args.sample or c["name"] in SAMPLE)
              and (not args.env or c["env"] in args.env)
              and (not args.platform or c["platform"] in args.platform)
              and not (args.small_only and c["program"]["size"] == "seed")]
    for n in args.only or []:
        if n not in cells.BY_NAME:
            ap.error("unknown cell %r (see --list)" % n)
        if thirdparty.missing_source(cells.BY_NAME[n]["program"]):
            ap.error("%s: %s" % (n, thirdparty.missing_source(cells.BY_NAME[n]["program"])))
    unsourced = [c for c in chosen if thirdparty.missing_source(c["program"])]
    for why in sorted({thirdparty.missing_source(c["program"]) for c in unsourced}):
        print("skipping %d third-party cell(s): %s" % (
            sum(thirdparty.missing_source(c["program"]) == why for c in unsourced), why),
            file=sys.stderr, flush=True)
    chosen = [c for c in chosen if c not in unsourced]
    missing = sorted({c["env"] for c in chosen if not os.path.exists(venv_python(c["env"]))})
    if missing:
        ap.error("environment(s) %s not set up: run tools/setup_python.sh --env %s" % (
            ", ".join(missing), " --env ".join(missing)))
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.time()
    failed = []
    for c in chosen:
        try:
            run_cell(c, out_dir)
        except RuntimeError as e:
            print("FAILED %s: %s" % (c["name"], e), file=sys.stderr, flush=True)
            failed.append(c["name"])
    print("generated %d cell(s) in %.1fs" % (len(chosen) - len(failed), time.time() - t0))

    manifest_path = args.manifest
    if manifest_path is None and not args.no_manifest and out_dir == os.path.abspath(DEFAULT_OUT):
        manifest_path = MANIFEST
    if manifest_path:
        write_manifest(out_dir, os.path.abspath(manifest_path))
        print("wrote", manifest_path)
    if failed:
        sys.exit("failed: " + " ".join(failed))


if __name__ == "__main__":
    main()
