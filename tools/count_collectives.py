#!/usr/bin/env python3
"""Counts the collectives of every partitioned dump in testdata/ straight from the HLO text.

An independent check on passes/collectives/collective_analysis: regular expressions over the raw text, no
spmdsim code. For each collective instruction line it reads the result shape (bytes from dtype
width x dims), the group size from replica_groups (list, iota `[G,S]<=[N]` and mesh
`mesh['a'=4,'b'=2] {'a'}` forms) and the loop multiplier from the `while` ops whose
backend_config carries known_trip_count, or, where XLA wrote none (XLA:TPU, older XLA), from the
simplest loop form: `compare(<state element>, constant(N)), direction=LT` against a constant
initial value (multiplied through nesting and summed over callers).
Asynchronous pairs (`all-reduce-start`/`-done`, and XLA's async sugar such as
`reduce-scatter-start`, `all-to-all-start`) count once, under the start's name, with the bytes
of the done's result shape. Wire bytes per device follow REFERENCE §5 (ring): all-reduce 2(n-1)/n*B, all-gather and
reduce-scatter (n-1)/n*B, all-to-all (n-1)/n*B_local, collective-permute B_local.

    python3 tools/count_collectives.py > testdata/expected_collectives.json
"""
import gzip
import json
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTDATA = os.path.join(ROOT, "testdata")

WIDTH = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4,
         "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}
KINDS = ["all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
         "collective-broadcast"]
COMP_RE = re.compile(r"^(ENTRY )?%?([\w.\-]+)(?: \(.*)?(?:, [\w.\-]+=.*)? ?\{\s*$")
INSTR_RE = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = (.*?) ([a-z\-]+)\(")
ARRAY_RE = re.compile(r"\b([a-z]+\d*)\[([\d,]*)\]")


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode()


def shape_bytes(shape_text):
    total = 0
    for dtype, dims in ARRAY_RE.findall(shape_text):
        if dtype not in WIDTH:
            continue
        total += WIDTH[dtype] * math.prod(int(d) for d in dims.split(",") if d)
    return total


def group_size(line, num_devices):
    m = re.search(r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}", line)
    if m:
        sizes = dict((a, int(s)) for a, s in re.findall(r"'(\w+)'=(\d+)", m.group(1)))
        return math.prod(sizes[a] for a in re.findall(r"'(\w+)'", m.group(2)))
    m = re.search(r"replica_groups=\[(\d+),(\d+)\]<=", line)
    if m:
        return int(m.group(2))
    m = re.search(r"replica_groups=\{\{([\d,]*)\}", line)
    if m:
        return len(m.group(1).split(","))
    return num_devices  # {} or absent: everyone


def derived_trips(text):
    """Trip counts of the while loops without known_trip_count (XLA:TPU, older XLA), read the
    simplest way: the condition's ROOT is compare(<state element k>, constant(N)), direction=LT,
    and element k of the loop's initial tuple is constant(i0), maybe behind copies: N - i0."""
    lines = {}
    for line in text.splitlines():
        m = INSTR_RE.match(line)
        if m:
            lines[m.group(1)] = line
    roots = {}
    comp = None
    for line in text.splitlines():
        m = COMP_RE.match(line)
        if m and " = " not in line:
            comp = m.group(2)
        elif comp and line.lstrip().startswith("ROOT "):
            roots[comp] = line

    def operands(line):
        m = re.search(r"[a-z\-]+\((.*?)\)(?:, |$)", line[line.index(" = "):])
        return [o.strip().lstrip("%") for o in m.group(1).split(",")] if m else []

    def constant(name):
        for _ in range(8):
            line = lines.get(name, "")
            m = re.search(r"= s\d+\[\]\S* constant\((-?\d+)\)", line)
            if m:
                return int(m.group(1))
            m = re.search(r"= \S+ copy\(%?([\w.\-]+)\)", line)
            if not m:
                return None
            name = m.group(1)
        return None

    def element(name):
        if "#" in name:
            return int(name.split("#")[1])
        m = re.search(r"get-tuple-element\(%?[\w.\-]+\), index=(\d+)", lines.get(name, ""))
        return int(m.group(1)) if m else None

    trips = {}
    for name, line in lines.items():
        if " while(" not in line or "known_trip_count" in line:
            continue
        cond = re.search(r"\bcondition=%?([\w.\-]+)", line)
        init = re.search(r" while\(%?([\w.\-#]+)\)", line)
        root = roots.get(cond.group(1), "") if cond else ""
        if not init or " compare(" not in root or "direction=LT" not in root:
            continue
        a, b = (operands(root) + [None, None])[:2]
        k, bound = element(a), constant(b)
        init_tuple = lines.get(init.group(1), "")
        if k is None or bound is None or " tuple(" not in init_tuple:
            continue
        elements = operands(init_tuple)
        start = constant(elements[k]) if k < len(elements) else None
        if start is not None:
            trips[name] = max(0, bound - start)
    return trips


def analyse(text):
    num_devices = int(re.search(r"num_partitions=(\d+)", text).group(1))
    trips = derived_trips(text)
    comp = None
    calls = []  # (caller computation, callee, factor)
    ops = []
    pending = {}  # async starts waiting for their done: name -> (name, computation, kind, line)

    def finish(name, comp, opcode, line, shape):
        b = shape_bytes(shape)
        n = 2 if opcode == "collective-permute" else group_size(line, num_devices)
        if opcode == "all-reduce":
            wire = b * 2 * (n - 1) // n
        elif opcode in ("all-gather", "reduce-scatter", "all-to-all"):
            if opcode == "reduce-scatter":
                b *= n  # result is the scattered piece; B is the full operand
            wire = b * (n - 1) // n
        else:
            wire = b
        ops.append({"instruction": name, "computation": comp, "kind": opcode, "group_size": n,
                    "bytes": b, "wire_bytes_per_device": wire})

    # async-start(...), calls=%c: the collective inside %c is counted once, as the start (its
    # name, its computation for the loop multiplier).
    wrapped_by = {}
    for line in text.splitlines():
        m = INSTR_RE.match(line)
        if m and m.group(3) == "async-start":
            callee = re.search(r"\bcalls=%?([\w.\-]+)", line)
            if callee:
                wrapped_by[callee.group(1)] = m.group(1)
    start_computation = {}
    ops_in_wrapped = {}

    for line in text.splitlines():
        m = COMP_RE.match(line)
        if m and " = " not in line:
            comp = m.group(2)
            if m.group(1):
                entry = comp
            continue
        m = INSTR_RE.match(line)
        if not m:
            continue
        name, shape, opcode = m.groups()
        trip = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', line)
        for role, callee in re.findall(r"\b(body|condition|to_apply|calls)=%?([\w.\-]+)", line):
            factor = 1
            if opcode == "while" and role == "body":
                factor = int(trip.group(1)) if trip else trips.get(name, 1)
            calls.append((comp, callee, factor))
        if opcode.endswith("-start") and opcode[:-6] in KINDS:
            pending[name] = (name, comp, opcode[:-6], line)
        elif opcode.endswith("-done") and opcode[:-5] in KINDS:
            start = re.match(r"%?([\w.\-]+)", line[m.end():]).group(1)
            if start in pending:
                finish(*pending.pop(start), shape)
        elif opcode in KINDS and comp in wrapped_by:
            ops_in_wrapped[comp] = (opcode, line, shape)
        elif opcode in KINDS:
            finish(name, comp, opcode, line, shape)
        if opcode == "async-start" and name in wrapped_by.values():
            start_computation[name] = comp
    for callee, start in sorted(wrapped_by.items()):
        if callee in ops_in_wrapped:
            opcode, line, shape = ops_in_wrapped[callee]
            finish(start, start_computation.get(start, callee), opcode, line, shape)

    memo = {}

    def runs(c):
        if c == entry:
            return 1
        if c not in memo:
            memo[c] = 0
            memo[c] = sum(runs(caller) * f for caller, callee, f in calls if callee == c)
        return memo[c]

    out = {"num_devices": num_devices, "counts": {}, "executions": {},
           "total_wire_bytes_per_device": 0, "ops": {}}
    for op in ops:
        mult = runs(op.pop("computation"))
        op["loop_multiplier"] = mult
        out["counts"][op["kind"]] = out["counts"].get(op["kind"], 0) + 1
        out["executions"][op["kind"]] = out["executions"].get(op["kind"], 0) + mult
        out["total_wire_bytes_per_device"] += op["wire_bytes_per_device"] * mult
        out["ops"][op.pop("instruction")] = op
    return out


def main():
    manifest = json.load(open(os.path.join(TESTDATA, "manifest.json")))
    result = {"generator": "tools/count_collectives.py", "programs": {}}
    for program in manifest["programs"]:
        result["programs"][program["name"]] = analyse(
            read(os.path.join(TESTDATA, program["files"]["after"])))
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
