#!/usr/bin/env python3
"""Writes the seed inputs of the HLO parser fuzzer (ir/hlo_parser_fuzzer.cc) from testdata/.

    tools/fuzz_seeds.py TESTDATA_DIR OUT_DIR [--max-len BYTES]

Small inputs mutate fast, so the small programs' dumps (manifest "size": "small") are split into
valid modules of one computation each: a short header ("HloModule name" plus its short
attributes), the computations it calls (transitively, in text order) and the computation itself.
Computations that need more than --max-len bytes are left out; computations that differ only in
their numbers (fused_computation.12 vs .13) are written once. Also written, one file each:
  - per dump, the smallest computation under the full header line, and under the short header
    with the first rows of the stack-frame tables;
  - the shapes, shardings and replica-group values seen in the dumps (the fuzzer feeds every input
    to the ParseShape/ParseSharding/ParseReplicaGroups sub-parsers too);
  - a few gzipped modules (the fuzzer gunzips inputs that start with the gzip magic);
  - hand-written forms the dumps lack (dynamic dims, tiled layouts, iota transposes, maximal and
    tuple shardings, mesh device_ids and sub-axes, source_target_pairs).
Standard library only. Output files are named by content hash, so reruns are idempotent.
"""

import argparse
import gzip
import hashlib
import json
import re
import sys
from pathlib import Path

CALL_ATTR = re.compile(
    r"\b(?:calls|to_apply|body|condition|branch_computations|true_computation|false_computation|"
    r"async_computation)=(\{[^}]*\}|%?[\w.\-]+)")
NAME = re.compile(r"%?([\w.\-]+)")
SHAPE = re.compile(r"\b(?:pred|s\d+|u\d+|f\d+\w*|bf16|c64|c128|token)\[[^\]]*\](?:\{[^}]*\})?")
IOTA_GROUPS = re.compile(r"\[\d+,\d+\]<=\[[\d,]+\](?:T\([\d,]+\))?")
MESH_GROUPS = re.compile(r"mesh\[[^\]]*\](?:, device_ids=\([^)]*\))? \{[^}]*\}")

# Forms the committed dumps do not contain, in XLA's print syntax.
HAND_WRITTEN = [
    "f32[<=10,4]{1,0}",
    "f32[?,8]",
    "s4[64]{0:E(4)}",
    "f32[8,128]{1,0:T(8,128)(2,1)S(1)}",
    "bf16[16,256]{1,0:T(8,128)(2,1)*}",
    "(f32[2], (u32[], token[]), s8[0])",
    "{devices=[2,4]<=[4,2]T(1,0)}",
    "{devices=[2,1,4]0,1,2,3,4,5,6,7 last_tile_dim_replicate}",
    "{devices=[2,2,2]<=[8] last_tile_dims={manual, replicated}}",
    "{maximal device=3}",
    "{{replicated}, {devices=[8]<=[8]}, {manual}}",
    "{unknown shard_as 1}",
    "{replicated metadata={op_name=\"a\"}}",
    "[4,2]<=[2,4]T(1,0)",
    "{{0,1,2,3},{4,5,6,7}}",
    "{}",
    "mesh['x'=4,'y'=2] {'x'}",
    "mesh['x'=8] {'x':(2)2}",
    "mesh['x'=2,'y'=2], device_ids=(0,2,1,3) {'y'}",
    "mesh['x'=2,'y'=4], device_ids=([8]<=[4,2]T(1,0)) {'y'}",
    """HloModule hand_written, entry_computation_layout={(f32[8]{0})->f32[8]{0}}, num_partitions=8

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(%x, %y)
}

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0), sharding={devices=[8]<=[8]}
  %cp = f32[8]{0} collective-permute(%p), channel_id=1, source_target_pairs={{0,1},{1,2},{2,0}}
  %ar = f32[8]{0} all-reduce(%cp), channel_id=2, replica_groups=mesh['x'=4,'y'=2] {'y'}, use_global_device_ids=true, to_apply=%add
  %c = f32[8]{0} constant({1, 2, 3, 4, 5, 6, 7, 8})
  %w = f32[8]{0} frobnicate(%ar, %c), unknown_attr={a=1}, control-predecessors={%cp}
  ROOT %r = f32[8]{0} custom-call(%w), custom_call_target="Sharding", backend_config="x"
}
""",
]


def read_text(path):
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode("utf-8")


def split_dump(text):
    """Returns (header line, table lines, [(name, lines)]) of one HLO module text."""
    lines = text.split("\n")
    header = lines[0]
    tables = []
    computations = []
    current = None
    for line in lines[1:]:
        if current is None:
            # A computation starts at an unindented line ending in '{' (table rows end in '}').
            if line and not line[0].isspace() and line.rstrip().endswith("{"):
                current = [line]
            elif not computations:
                tables.append(line)
            continue
        current.append(line)
        if line == "}":
            head = current[0].split()
            name = head[1] if head[0] == "ENTRY" else head[0]
            computations.append((name.lstrip("%"), current))
            current = None
    while tables and not tables[-1].strip():
        tables.pop()
    return header, tables, computations


def short_tables(tables):
    """The first rows of each stack-frame table (FileNames, ..., StackFrames)."""
    kept, rows = [], 0
    for line in tables:
        if line and not line[0].isdigit():
            rows = 0
        elif line:
            rows += 1
        if rows <= 3:
            kept.append(line)
    return kept


def callees(lines):
    names = []
    for line in lines[1:]:
        for match in CALL_ATTR.finditer(line):
            names.extend(NAME.findall(match.group(1)))
    return names


def short_header(header):
    """'HloModule name' plus the attributes whose values are short."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(header):
        depth += c in "{[(" and 1 or c in "}])" and -1 or 0
        if c == "," and depth == 0:
            parts.append(header[start:i].strip())
            start = i + 1
    parts.append(header[start:].strip())
    kept = [parts[0]] + [p for p in parts[1:] if "=" in p and len(p) <= 60 and "{" not in p]
    return ", ".join(kept)


def balanced(text, start):
    """The '{...}' group starting at text[start], or None."""
    depth = 0
    for i in range(start, min(len(text), start + 4096)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return None


def attribute_values(text):
    values = set(SHAPE.findall(text))
    values.update(IOTA_GROUPS.findall(text))
    values.update(MESH_GROUPS.findall(text))
    for key in ("sharding=", "replica_groups=", "source_target_pairs="):
        for match in re.finditer(re.escape(key) + r"\{", text):
            group = balanced(text, match.end() - 1)
            if group:
                values.add(group)
    return values


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("testdata", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--max-len", type=int, default=16384)
    args = parser.parse_args()
    manifest = json.loads((args.testdata / "manifest.json").read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    written = set()

    def write(data):
        if isinstance(data, str):
            data = data.encode("utf-8")
        if len(data) > args.max_len or not data:
            return
        digest = hashlib.sha1(data).hexdigest()
        if digest not in written:
            written.add(digest)
            (args.out / ("seed-" + digest)).write_bytes(data)

    seen_skeletons = set()
    values = set()
    gz_left = 4
    for program in manifest["programs"]:
        if program.get("size") != "small":
            continue
        for stage in ("before", "after"):
            text = read_text(args.testdata / program["files"][stage])
            header, tables, computations = split_dump(text)
            values |= attribute_values(text)
            by_name = {name: lines for name, lines in computations}
            order = {name: i for i, (name, _) in enumerate(computations)}
            head = short_header(header)
            smallest = min(computations, key=lambda c: sum(len(l) for l in c[1]))
            write("\n".join([header, ""] + smallest[1]) + "\n")
            write("\n".join([head, ""] + short_tables(tables) + [""] + smallest[1]) + "\n")
            for name, lines in computations:
                needed, todo = set(), [name]
                while todo:
                    n = todo.pop()
                    if n in needed or n not in by_name:
                        continue
                    needed.add(n)
                    todo.extend(callees(by_name[n]))
                body = []
                for n in sorted(needed, key=order.get):
                    body.extend(by_name[n] + [""])
                seed = head + "\n\n" + "\n".join(body)
                skeleton = re.sub(r"\d+", "0", seed)
                if skeleton in seen_skeletons:
                    continue
                seen_skeletons.add(skeleton)
                write(seed)
                if gz_left > 0 and 200 < len(seed) < 2000:
                    write(gzip.compress(seed.encode("utf-8"), mtime=0))
                    gz_left -= 1
    for value in sorted(values) + HAND_WRITTEN:
        write(value)
    print(f"{len(written)} seeds in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
