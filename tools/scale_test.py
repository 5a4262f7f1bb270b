#!/usr/bin/env python3
"""Scale test (issue #16): a module of 200k instructions over 1,024 devices with a call chain 60
deep, a module of wide tuples (100k outputs, a loop state of 20k elements), a module where
100k temporaries die at one instruction, each in its own output's allocation, a combined
all-reduce of 10,000 operands, a step donating 50k parameters to its outputs, 10,000
all-reduces over 65,536 devices and a chain of 20,000 derived RNG keys (issue 45), analysed by
every command in under 10 s and 2 GB each.

    python3 tools/scale_test.py [--spmdsim build/analyzer/spmdsim] [--keep DIR]

Writes the modules to a temporary directory, runs each command (wall time, and the child's peak
RSS from wait4), prints one line per command and exits 1 when any command fails, exceeds a limit
or crashes. A forked child starts with its parent's peak RSS (Linux copies the high-water mark
with the address space, and wait4 reports the larger of the two), so a spawned interpreter
builds the modules and this one stays small: the figure is the command's own wherever it is
above this interpreter's ~15 MiB. Not a timed unit test: CI runs it as a step and its figures go
in the notes (docs/BENCHMARKS.md).
"""
import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time

INSTRUCTIONS = 200_000
DEVICES = 1024
DEPTH = 60
TIME_LIMIT_S = 10.0
RSS_LIMIT_BYTES = 2 << 30
WIDE_OUTPUTS = 100_000
WIDE_STATE = 20_000
CROWDED = 100_000
COMBINED = 10_000
DONATED = 50_000
GROUP_OPS = 10_000
GROUP_DEVICES = 65_536
KEYS = 20_000


def build_module():
    """Entry -> while -> call -> ... 60 levels; every level holds a slice of the elementwise
    work, an all-reduce over 8 groups of 128, an all-gather, a collective-permute ring of 1,024
    pairs and a fusion, so every analysis has work at every depth."""
    per_level = INSTRUCTIONS // DEPTH
    out = [f"HloModule scale, is_scheduled=true, num_partitions={DEVICES}\n"]
    out.append("%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
               "  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n")
    out.append("%fused (p: f32[128,256]) -> f32[128,256] {\n  %p = f32[128,256]{1,0} parameter(0)\n"
               "  %e = f32[128,256]{1,0} exponential(%p)\n  ROOT %m = f32[128,256]{1,0} multiply(%e, %p)\n}\n")
    out.append("%cond (t: (s32[], f32[128,256])) -> pred[] {\n  %t = (s32[], f32[128,256]{1,0}) parameter(0)\n"
               "  %i = s32[] get-tuple-element(%t), index=0\n  %n = s32[] constant(4)\n"
               "  ROOT %c = pred[] compare(%i, %n), direction=LT\n}\n")
    pairs = ",".join(f"{{{d},{(d + 1) % DEVICES}}}" for d in range(DEVICES))
    count = 0
    for level in range(DEPTH):
        body = []
        body.append(f"%level{level} (t: (s32[], f32[128,256])) -> (s32[], f32[128,256]) {{")
        body.append("  %t = (s32[], f32[128,256]{1,0}) parameter(0)")
        body.append("  %i = s32[] get-tuple-element(%t), index=0")
        body.append("  %v0 = f32[128,256]{1,0} get-tuple-element(%t), index=1")
        prev = "v0"
        k = 1
        while k < per_level - 12:
            op = ("add", "multiply", "subtract", "maximum")[k % 4]
            body.append(f"  %v{k} = f32[128,256]{{1,0}} {op}(%{prev}, %v{max(0, k - 7)}), "
                        f"metadata={{op_name=\"jit(step)/layer_{level}/op_{k}\" "
                        f"source_file=\"model.py\" source_line={k % 900 + 1}}}")
            prev = f"v{k}"
            k += 1
        body.append(f"  %ar = f32[128,256]{{1,0}} all-reduce(%{prev}), channel_id={3 * level + 1}, "
                    f"replica_groups=[8,128]<=[{DEVICES}], use_global_device_ids=true, to_apply=%add")
        body.append(f"  %ag = f32[128,2048]{{1,0}} all-gather(%ar), channel_id={3 * level + 2}, "
                    f"replica_groups=[128,8]<=[8,128]T(1,0), dimensions={{1}}, use_global_device_ids=true")
        body.append("  %sl = f32[128,256]{1,0} slice(%ag), slice={[0:128], [0:256]}")
        body.append(f"  %cp = f32[128,256]{{1,0}} collective-permute(%sl), channel_id={3 * level + 3}, "
                    f"source_target_pairs={{{pairs}}}")
        body.append("  %f = f32[128,256]{1,0} fusion(%cp), kind=kLoop, calls=%fused")
        if level + 1 < DEPTH:
            body.append("  %inner.t = (s32[], f32[128,256]{1,0}) tuple(%i, %f)")
            callee = f"%level{level + 1}"
            if level % 2 == 0:
                body.append(f"  %inner = (s32[], f32[128,256]{{1,0}}) call(%inner.t), to_apply={callee}")
            else:
                body.append(f"  %inner = (s32[], f32[128,256]{{1,0}}) while(%inner.t), condition=%cond, "
                            f"body={callee}, backend_config={{\"known_trip_count\":{{\"n\":\"4\"}}}}")
            body.append("  %r = f32[128,256]{1,0} get-tuple-element(%inner), index=1")
        else:
            body.append("  %r = f32[128,256]{1,0} copy(%f)")
        body.append("  %one = s32[] constant(1)")
        body.append("  %i1 = s32[] add(%i, %one)")
        body.append("  ROOT %o = (s32[], f32[128,256]{1,0}) tuple(%i1, %r)")
        body.append("}\n")
        count += len(body) - 3
        out.append("\n".join(body))
    out.append("ENTRY %main (a: f32[128,256]) -> f32[128,256] {\n"
               "  %a = f32[128,256]{1,0} parameter(0), sharding={devices=[8,128]<=[1024]}\n"
               "  %z = s32[] constant(0)\n  %t0 = (s32[], f32[128,256]{1,0}) tuple(%z, %a)\n"
               "  %w = (s32[], f32[128,256]{1,0}) call(%t0), to_apply=%level0\n"
               "  ROOT %r = f32[128,256]{1,0} get-tuple-element(%w), index=1\n}\n")
    return "\n".join(out), count


def build_wide_module():
    """Tuples as wide as real programs make them: a step that returns 100k arrays in one tuple
    (each its own output buffer, all used by the root), beside a loop whose state is a tuple of
    20k arrays, each read by its own get-tuple-element. Work that is linear per element and
    per user of such a tuple is quadratic in all."""
    array = "f32[16]{0}"
    state = "(" + ", ".join([array] * WIDE_STATE) + ")"
    body = [f"%body (s: {state}) -> {state} {{", f"  %s = {state} parameter(0)"]
    body += [f"  %g{i} = {array} get-tuple-element(%s), index={i}" for i in range(WIDE_STATE)]
    body += [f"  %a{i} = {array} negate(%g{i})" for i in range(WIDE_STATE)]
    body.append(f"  ROOT %t = {state} tuple(" + ", ".join(f"%a{i}" for i in range(WIDE_STATE)) + ")")
    cond = [f"%cond (s: {state}) -> pred[] {{", f"  %s = {state} parameter(0)",
            "  ROOT %c = pred[] constant(false)"]
    entry = ["ENTRY %main {"]
    entry += [f"  %p{i} = {array} parameter({i})" for i in range(WIDE_OUTPUTS)]
    entry += [f"  %n{i} = {array} negate(%p{i})" for i in range(WIDE_OUTPUTS)]
    entry.append(f"  %init = {state} tuple(" + ", ".join(f"%n{i}" for i in range(WIDE_STATE)) + ")")
    entry.append(f"  %w = {state} while(%init), condition=%cond, body=%body")
    entry += [f"  %w{i} = {array} get-tuple-element(%w), index={i}" for i in range(WIDE_STATE)]
    outputs = [f"%n{i}" for i in range(WIDE_STATE, WIDE_OUTPUTS)] + \
              [f"%w{i}" for i in range(WIDE_STATE)]
    entry.append("  ROOT %out = (" + ", ".join([array] * len(outputs)) + ") tuple(" +
                 ", ".join(outputs) + ")")
    computations = [body, cond, entry]
    text = "HloModule wide, is_scheduled=true\n\n" + "\n".join(
        "\n".join(c) + "\n}\n" for c in computations)
    return text, sum(len(c) - 1 for c in computations)


def build_crowded_module():
    """100k temporaries read by one concatenate (as the operands of a wide concatenate or of a
    combined all-reduce are), then 100k outputs computed from slices of it. Buffer assignment
    puts each temporary into an output's allocation, so 100k free stretches of the outputs'
    allocations start at the concatenate, and each later temporary asks which of them hold it:
    work per such stretch for each buffer is quadratic in all."""
    array = "f32[16]{0}"
    entry = ["ENTRY %main {"]
    entry += [f"  %p{i} = {array} parameter({i})" for i in range(CROWDED)]
    entry += [f"  %t{i} = {array} negate(%p{i})" for i in range(CROWDED)]
    entry.append(f"  %c = f32[{16 * CROWDED}]{{0}} concatenate(" +
                 ", ".join(f"%t{i}" for i in range(CROWDED)) + "), dimensions={0}")
    for i in range(CROWDED):
        entry.append(f"  %s{i} = {array} slice(%c), slice={{[{16 * i}:{16 * i + 16}]}}")
        entry.append(f"  %o{i} = {array} negate(%s{i})")
    entry.append("  ROOT %out = (" + ", ".join([array] * CROWDED) + ") tuple(" +
                 ", ".join(f"%o{i}" for i in range(CROWDED)) + ")")
    text = "HloModule crowded, is_scheduled=true\n\n" + "\n".join(entry) + "\n}\n"
    return text, len(entry) - 1


def build_combined_module():
    """One all-reduce of 10,000 operands (JAX's psum of a gradient pytree, XLA's all-reduce
    combiner), each operand a temporary and each result read by an output. Every result is
    offered to every output's allocation and refused on its touching end (an all-reduce does not
    share its operand's buffer), as XLA's assignment does, and the heap simulation offers each
    result every dying operand: work per operand of the all-reduce in each offer made it cubic
    (2,000: 6.8 s of CPU for `analyze` before session 25, 0.46 s after), the offers themselves
    quadratic (10,000: 8.7 s before session 54, 0.10 s once the sharing rules name the operands
    a result may take)."""
    array = "f32[16]{0}"
    entry = ["ENTRY %main {"]
    entry += [f"  %p{i} = {array} parameter({i})" for i in range(COMBINED)]
    entry += [f"  %t{i} = {array} negate(%p{i})" for i in range(COMBINED)]
    results = "(" + ", ".join([array] * COMBINED) + ")"
    entry.append(f"  %ar = {results} all-reduce(" + ", ".join(f"%t{i}" for i in range(COMBINED)) +
                 "), channel_id=1, replica_groups=[1,8]<=[8], use_global_device_ids=true, "
                 "to_apply=%add")
    for i in range(COMBINED):
        entry.append(f"  %g{i} = {array} get-tuple-element(%ar), index={i}")
        entry.append(f"  %o{i} = {array} add(%g{i}, %p{i})")
    entry.append(f"  ROOT %out = {results} tuple(" + ", ".join(f"%o{i}" for i in range(COMBINED)) +
                 ")")
    add = ("%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
           "  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n")
    text = ("HloModule combined, is_scheduled=true, num_partitions=8\n\n" + add + "\n" +
            "\n".join(entry) + "\n}\n")
    return text, len(entry) + 2


def build_donated_module():
    """A step that donates 50k parameters (weights and optimizer state) to its 50k outputs:
    input_output_alias lists 50k pairs, and the analyses ask about it for each parameter and
    each output. A scan of the pairs per question is quadratic (40k: 7.1 s of CPU for `analyze`
    before session 25, 0.17 s after)."""
    array = "f32[16]{0}"
    pairs = ", ".join(f"{{{i}}}: ({i}, {{}}, may-alias)" for i in range(DONATED))
    entry = ["ENTRY %main {"]
    entry += [f"  %p{i} = {array} parameter({i})" for i in range(DONATED)]
    entry += [f"  %o{i} = {array} negate(%p{i})" for i in range(DONATED)]
    entry.append("  ROOT %out = (" + ", ".join([array] * DONATED) + ") tuple(" +
                 ", ".join(f"%o{i}" for i in range(DONATED)) + ")")
    text = (f"HloModule donated, is_scheduled=true, input_output_alias={{ {pairs} }}\n\n" +
            "\n".join(entry) + "\n}\n")
    return text, len(entry) - 1


def build_groups_module():
    """10,000 all-reduces, each over one group of all 65,536 devices in iota form: an expanded
    group list per op took 1 GB per 2,000 ops (issue 45); one copy per distinct list now."""
    add = ("%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
           "  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n")
    entry = ["ENTRY %main (a: f32[4]) -> f32[4] {", "  %a0 = f32[4]{0} parameter(0)"]
    for i in range(1, GROUP_OPS + 1):
        root = "ROOT " if i == GROUP_OPS else ""
        entry.append(f"  {root}%a{i} = f32[4]{{0}} all-reduce(%a{i - 1}), channel_id={i}, "
                     f"replica_groups=[1,{GROUP_DEVICES}]<=[{GROUP_DEVICES}], "
                     "use_global_device_ids=true, to_apply=%add")
    text = (f"HloModule groups, num_partitions={GROUP_DEVICES}\n\n" + add + "\n" +
            "\n".join(entry) + "\n}\n")
    return text, GROUP_OPS + 1


def build_keychain_module():
    """20,000 RNG keys, each derived from the one before (fold_in in a loop unrolled): each key's
    walk back for a dependency on the device's position went over the whole chain (20k: 40 s for
    `rng sites`, issue 45); what a walk learns is kept for the next."""
    entry = ["ENTRY %main (k0: u32[1], k1: u32[1]) -> u32[1] {",
             "  %a0 = u32[1]{0} parameter(0)", "  %b0 = u32[1]{0} parameter(1)",
             "  %c0 = u32[1]{0} constant({0})", "  %c1 = u32[1]{0} constant({1})"]
    for i in range(1, KEYS + 1):
        entry.append(f"  %t{i} = (u32[1]{{0}}, u32[1]{{0}}) custom-call(%a{i - 1}, %b{i - 1}, "
                     "%c0, %c1), custom_call_target=\"cu_threefry2x32_ffi\", "
                     "api_version=API_VERSION_TYPED_FFI, "
                     "metadata={op_name=\"jit(f)/jit(_threefry_fold_in)/threefry2x32\"}")
        entry.append(f"  %a{i} = u32[1]{{0}} get-tuple-element(%t{i}), index=0")
        entry.append(f"  %b{i} = u32[1]{{0}} get-tuple-element(%t{i}), index=1")
    entry.append(f"  ROOT %r = u32[1]{{0}} add(%a{KEYS}, %b{KEYS})")
    return "HloModule keychain\n\n" + "\n".join(entry) + "\n}\n", 3 * KEYS + 5


# Each module's builder and what it stresses, in the order the test runs them.
MODULES = {
    "scale": (build_module, f"{DEVICES} devices, call chain {DEPTH} deep"),
    "wide": (build_wide_module, f"a tuple of {WIDE_OUTPUTS} outputs, a loop state of {WIDE_STATE}"),
    "crowded": (build_crowded_module, f"{CROWDED} temporaries ending at one concatenate"),
    "combined": (build_combined_module, f"an all-reduce of {COMBINED} operands"),
    "donated": (build_donated_module, f"{DONATED} parameters donated to outputs"),
    "groups": (build_groups_module, f"{GROUP_OPS} all-reduces over {GROUP_DEVICES} devices"),
    "keychain": (build_keychain_module, f"{KEYS} keys derived one from the next"),
}


def module_path(directory, name):
    return os.path.join(directory, f"module_0000.{name}.cpu_after_optimizations.txt")


def write_module(name, path):
    """Builds module `name` and writes it to `path`: its instruction count and size in bytes."""
    text, count = MODULES[name][0]()
    with open(path, "w") as f:
        f.write(text)
    return count, len(text)


def run(command, limit_s):
    """Exit code, wall seconds, peak RSS in bytes (from wait4; see the docstring) and stderr."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as err_file:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err_file)
        deadline = start + limit_s * 6
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid != 0:
                break
            if time.monotonic() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.01)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err_file.seek(0)
        err = err_file.read().decode("utf-8", "replace")
    return proc.returncode, wall, usage.ru_maxrss * 1024, err


def run_commands(spmdsim, directory, path):
    """Runs every command on the module at `path`; True when any failed."""
    failed = False
    baseline = os.path.join(directory, "baseline.json")
    commands = [
        ["stats", path],
        ["analyze", path],
        ["analyze", "--format", "json", path],
        ["collectives", path],
        ["collectives", "--format", "json", path],
        ["rng", "sites", path],
        ["rng", "sites", "--format", "json", path],
        ["check", "--write-baseline", baseline, path],
        ["check", "--baseline", baseline, path],
        ["diff", path, path],
        ["report", "-o", os.path.join(directory, "report.html"), path],
    ]
    for command in commands:
        code, wall, rss, err = run([spmdsim] + command, TIME_LIMIT_S)
        rss_note = f"{rss / 2**20:.0f} MiB peak RSS"
        ok = code in (0, 1) and wall <= TIME_LIMIT_S and rss <= RSS_LIMIT_BYTES
        failed = failed or not ok
        label = " ".join(c if c != path else "MODULE" for c in command)
        label = label.replace(directory, "DIR")
        print(f"  {'ok  ' if ok else 'FAIL'} {label:<48} exit {code:>2}  {wall:6.2f} s  {rss_note}")
        if not ok and err:
            print("       " + err.strip().splitlines()[0][:200])
    return failed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spmdsim", default="build/analyzer/spmdsim")
    parser.add_argument("--keep", help="write the modules here and keep them")
    args = parser.parse_args()
    directory = args.keep or tempfile.mkdtemp(prefix="spmdsim_scale_")
    os.makedirs(directory, exist_ok=True)
    failed = False
    # "spawn": another interpreter builds the modules, so this one never holds a module's text.
    with multiprocessing.get_context("spawn").Pool(1) as builder:
        built = {name: builder.apply(write_module, (name, module_path(directory, name)))
                 for name in MODULES}
    for name, (count, size) in built.items():
        path = module_path(directory, name)
        shape = MODULES[name][1]
        print(f"{name} module: {count} instructions, {shape}, {size / 1e6:.1f} MB ({path})")
        failed = run_commands(args.spmdsim, directory, path) or failed
    if not args.keep:
        for name in os.listdir(directory):
            os.remove(os.path.join(directory, name))
        os.rmdir(directory)
    print(f"scale test: {'FAILED' if failed else 'passed'} (limits {TIME_LIMIT_S:.0f} s, "
          f"{RSS_LIMIT_BYTES >> 30} GiB per command)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
