#!/usr/bin/env python3
"""Writes the seed inputs of the fuzzers (tools/fuzz.sh) from testdata/.

    tools/fuzz_seeds.py TESTDATA_DIR OUT_DIR [--max-len BYTES]               # HLO text
    tools/fuzz_seeds.py TESTDATA_DIR OUT_DIR [--max-len BYTES] --companion   # other files

HLO text seeds the parser (ir/hlo_parser_fuzzer.cc), the analyses (passes/analyses_fuzzer.cc) and
the views (analyzer/views_fuzzer.cc). With --companion the seeds are the files
dump/companion_files_fuzzer.cc and analyzer/command_inputs_fuzzer.cc read, each prefixed by the
byte that selects its reader there (see COMPANION_READERS): excerpts of the buffer-assignment,
live-range and memory-usage-report files (a few of them gzipped: the readers gunzip what starts
with the gzip magic) and the memory_analysis.json of every manifest program, the baseline JSON
texts of the analyzer and dump tests and baselines in the form `spmdsim check --write-baseline`
writes, the OOM logs of testdata/oom/, and the topology presets (analyzer/topologies/).

Small inputs mutate fast, so the small programs' dumps (manifest "size": "small") are split into
valid modules of one computation each: a short header ("HloModule name" plus its short
attributes), the computations it calls (transitively, in text order) and the computation itself.
Computations that need more than --max-len bytes are left out; computations that differ only in
their numbers (fused_computation.12 vs .13) are written once. Also written, one file each:
  - per dump, the smallest computation under the full header line, and under the short header
    with the first rows of the stack-frame tables;
  - the shapes, shardings and replica-group values seen in the dumps (the fuzzer feeds every input
    to the ParseShape/ParseSharding/ParseReplicaGroups sub-parsers too);
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


# The reader each selector byte (input byte 0, modulo 7) chooses in dump/companion_files_fuzzer.cc
# (0-3, 5) and analyzer/command_inputs_fuzzer.cc (all).
COMPANION_READERS = {
    "buffer_assignment": 0,
    "live_range": 1,
    "memory_usage_report": 2,
    "memory_analysis": 3,
    "baseline": 4,
    "oom": 5,
    "topology": 6,
}

# A raw string literal of a C++ test: R"(...)" or R"delim(...)delim".
RAW_STRING = re.compile(r'R"([^(\s]*)\((.*?)\)\1"', re.S)


def excerpts(text, max_len):
    """Small files of the same format as a large line-based one: its first lines, and one file
    with at most two lines of each line form (digits ignored), in order."""
    lines = text.split("\n")
    prefix, size = [], 0
    for line in lines:
        size += len(line) + 1
        if size > max_len // 4:
            break
        prefix.append(line)
    forms, seen, size = [], {}, 0
    for line in lines:
        form = re.sub(r"\d+", "0", line)[:40]
        if seen.get(form, 0) >= 2:
            continue
        seen[form] = seen.get(form, 0) + 1
        size += len(line) + 1
        if size > max_len - 1:
            break
        forms.append(line)
    return ["\n".join(prefix) + "\n", "\n".join(forms) + "\n"]


def baseline(modules):
    """A baseline as `spmdsim check --write-baseline` writes it (analyzer/model/baseline.cc)."""
    return json.dumps({"schema_version": 1, "kind": "spmdsim-baseline", "modules": modules},
                      indent=2) + "\n"


def baseline_module(name, stage, figures, findings):
    module = {"name": name, "file": "dump/module_0000." + name + "." + stage + ".txt.gz",
              "stage": stage}
    for key in ("peak_bytes", "temp_bytes", "argument_bytes", "output_bytes", "alias_bytes",
                "wire_bytes_per_device"):
        module[key] = figures.get(key, 0)
    module["wire_by_kind"] = figures.get("wire_by_kind", {})
    module["rng_materialized_bytes"] = figures.get("rng_materialized_bytes", 0)
    module["findings"] = findings
    return module


def companion_seeds(testdata, tests, write, max_len):
    manifest = json.loads((testdata / "manifest.json").read_text())
    forms = set()

    def write_as(kind, text):
        data = bytes([COMPANION_READERS[kind]]) + text.encode("utf-8")
        form = re.sub(rb"\d+", b"0", data)
        if form not in forms:
            forms.add(form)
            write(data)

    gz_left = 4
    modules = []
    for program in manifest["programs"]:
        files = program["files"]
        for kind in ("buffer_assignment", "live_range", "memory_usage_report"):
            if files.get(kind):
                for text in excerpts(read_text(testdata / files[kind]), max_len):
                    write_as(kind, text)
                    if gz_left > 0 and 200 < len(text) < 2000:
                        write(bytes([COMPANION_READERS[kind]]) +
                              gzip.compress(text.encode("utf-8"), mtime=0))
                        gz_left -= 1
        if files.get("memory_analysis"):
            text = read_text(testdata / files["memory_analysis"])
            write_as("memory_analysis", text)
            m = json.loads(text)
            temp = m.get("temp_size_in_bytes", 0)
            argument = m.get("argument_size_in_bytes", 0)
            output = m.get("output_size_in_bytes", 0)
            alias = m.get("alias_size_in_bytes", 0)
            findings = []
            if program.get("remat") is False or program.get("remat") == "none":
                findings.append({"kind": "rng-key-residual",
                                 "op_name": "jit(train_step)/jit(main)/jvp()/threefry2x32",
                                 "site": "while.12", "bytes": 402653184})
            modules.append(baseline_module(
                program["name"], "after_optimizations",
                {"peak_bytes": argument + output - alias + temp, "temp_bytes": temp,
                 "argument_bytes": argument, "output_bytes": output, "alias_bytes": alias,
                 "wire_bytes_per_device": 927367, "wire_by_kind": {"all-reduce": 927367},
                 "rng_materialized_bytes": 4096}, findings))
    # Baselines of one, two and every few modules, and the baseline texts of the tests.
    for i in range(0, len(modules), 9):
        write_as("baseline", baseline(modules[i:i + 1]))
        write_as("baseline", baseline(modules[i:i + 3]))
    write_as("baseline", baseline([]))
    for test in sorted(list(tests.rglob("*_test.cc")) +
                       list((testdata.parent / "dump").glob("*_test.cc"))):
        for match in RAW_STRING.finditer(test.read_text()):
            if "spmdsim-baseline" in match.group(2) or "schema_version" in match.group(2):
                write_as("baseline", match.group(2))
            if "Memory Space:" in match.group(2):
                write_as("memory_usage_report", match.group(2))
            if "HloLiveRange" in match.group(2):
                write_as("live_range", match.group(2))
            if "allocation " in match.group(2):
                write_as("buffer_assignment", match.group(2))
            if "temp_size_in_bytes" in match.group(2):
                write_as("memory_analysis", match.group(2))
            if "Buffer " in match.group(2) and "Size:" in match.group(2):
                write_as("oom", match.group(2))
    for log in sorted((testdata / "oom").glob("*.log")):
        text = read_text(log)
        write_as("oom", text)
        # One buffer of the listing, with the header XLA prints before it.
        first = text.split("\n\n")[0]
        write_as("oom", "BufferAssignment OOM Debugging.\nBufferAssignment stats:\n"
                 "             parameter allocation:    1.50GiB\n" + first + "\n")
    for topology in sorted((tests / "topologies").glob("*.json")):
        write_as("topology", topology.read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("testdata", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--max-len", type=int, default=16384)
    parser.add_argument("--companion", action="store_true",
                        help="the seeds of dump/companion_files_fuzzer.cc and "
                        "analyzer/command_inputs_fuzzer.cc")
    parser.add_argument("--tests", type=Path, default=None,
                        help="the analyzer tests and topologies (default: TESTDATA/../analyzer)")
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

    if args.companion:
        companion_seeds(args.testdata, args.tests or args.testdata.parent / "analyzer", write,
                        args.max_len)
        print(f"{len(written)} seeds in {args.out}", file=sys.stderr)
        return

    seen_skeletons = set()
    values = set()
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
    for value in sorted(values) + HAND_WRITTEN:
        write(value)
    # The regression cases: malformed input of the parser, hostile modules of the analyses.
    for folder in ("malformed", "hostile"):
        for case in sorted((args.testdata / folder).glob("*")):
            if case.is_file() and case.suffix not in (".expected", ".md"):
                write(case.read_bytes())
    print(f"{len(written)} seeds in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
