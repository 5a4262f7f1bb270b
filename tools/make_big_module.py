#!/usr/bin/env python3
"""Builds a large, valid HLO module for the parser and analysis benchmarks (tools/bench.sh).

The module is a real dump (default: the seed_dp8_partitionable_remat training step, 7.8 MB)
repeated K times as one deep program, K chosen so the text reaches --min-mb:

  * every non-entry computation is copied K times; copy k > 0 renames every computation,
    instruction and signature-parameter name with the suffix ".r<k>" (copy 0 keeps the original
    names), so the copies are independent and every name stays unique in the module;
  * the ENTRY computation keeps its header and holds the K copies of its body one after another.
    Copy k > 0 takes its inputs from copy k-1: each `parameter(i)` line becomes
    `get-tuple-element(<root of copy k-1>), index=j` where input_output_alias pairs output j with
    parameter i and the shapes match, or `copy(<the original parameter>)` otherwise. Only the last
    copy keeps `ROOT`, so the entry's signature, result, layout and aliasing stay those of the dump.

So the whole text is reachable from the entry: K training steps chained, as a K-times deeper model
would be. Text inside double-quoted strings (op names, configs) is never renamed. The output is
deterministic: the same input and options give the same bytes.

Two shapes of text (--shape), since the parser's speed depends on it:

  jax-train-step (default)  the JAX dump above: 100 MB, ~490k instructions of ~210 bytes, most of
                            them metadata, in ~38k computations (fusions).
  pytorch-bert              what PyTorch/XLA hands to XLA for a BERT training step
                            (testdata/bench/, made by gen_pytorch_bert.py there): 96 MB, ~1.2M
                            short instructions (~80 bytes, no metadata) in one flat ENTRY graph
                            with small reducer computations. The graph has no
                            input_output_alias, so each entry copy reads the original parameters
                            (`copy(%p)`); the renaming is the same.

Usage: tools/make_big_module.py [--shape jax-train-step|pytorch-bert] [--input DUMP(.txt|.txt.gz)]
       [--output FILE] [--min-mb MB] [--copies K]
Plain python3, no jax needed.
"""

import argparse
import gzip
import math
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_INPUT = os.path.join(
    REPO, "testdata/dumps/seed_dp8_partitionable_remat/"
    "module_0000.jit_train_step.cpu_after_optimizations.txt.gz")
DEFAULT_OUTPUT = os.path.join(REPO, "build-bench/big_module.txt")
# --shape: (input, output, min MB).
SHAPES = {
    "jax-train-step": (DEFAULT_INPUT, DEFAULT_OUTPUT, 100.0),
    "pytorch-bert": (
        os.path.join(REPO, "testdata/bench/"
                     "pytorch_xla_bert.SyncTensorsGraph.3087.before_optimizations.txt.gz"),
        os.path.join(REPO, "build-bench/big_module_pytorch_bert.txt"), 96.0),
}

# A double-quoted string (kept as is) or a %name (renamed).
NAME_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|%([A-Za-z0-9_.\-]+)')
# A signature parameter "name:" right after '(' or ',' in a computation header.
SIGNATURE_PARAM = re.compile(r'([(,]\s*)([A-Za-z_][A-Za-z0-9_.\-]*)(?=:\s)')
PARAMETER_LINE = re.compile(r'^  %(\S+) = (.*?) parameter\((\d+)\)(.*)$')
ROOT_LINE = re.compile(r'^  ROOT %(\S+) = ')
ALIAS = re.compile(r'\{(\d+)\}: \((\d+), \{\}, (?:may|must)-alias\)')
INDEX_COMMENT = re.compile(r'/\*index=\d+\*/')


def read_text(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode("utf-8")


def rename(text, suffix):
    """Appends suffix to every %name outside double-quoted strings."""
    if not suffix:
        return text

    def sub(m):
        return m.group(0) if m.group(1) is None else m.group(0) + suffix

    return NAME_OR_STRING.sub(sub, text)


def rename_header(line, suffix):
    """A computation header: its %name and its signature's parameter names."""
    line = rename(line, suffix)
    if not suffix:
        return line
    arrow = line.find(") -> ")
    if arrow < 0:
        return line
    return SIGNATURE_PARAM.sub(lambda m: m.group(1) + m.group(2) + suffix,
                               line[:arrow]) + line[arrow:]


def split_top_level(text):
    """Splits "a, (b, c), d" at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def split_module(text):
    """Returns (preamble lines, [computation blocks as line lists], entry block index)."""
    lines = text.split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    preamble, blocks, current, entry = [], [], None, None
    for line in lines:
        if current is None:
            if line.startswith("%") or line.startswith("ENTRY "):
                current = [line]
                if line.startswith("ENTRY "):
                    entry = len(blocks)
            elif blocks:
                if line.strip():
                    sys.exit("make_big_module: unexpected line between computations: " + line[:80])
            else:
                preamble.append(line)
        else:
            current.append(line)
            if line == "}":
                blocks.append(current)
                current = None
    if current is not None or entry is None:
        sys.exit("make_big_module: input is not a complete module with an ENTRY computation")
    return preamble, blocks, entry


def entry_chain(entry, header_line):
    """What copy k > 0 of the entry body needs: the root's name and, per parameter number, the
    tuple index of copy k-1's result that feeds it (None: copy the original parameter)."""
    root_name, root_shapes = None, None
    for line in entry[1:-1]:
        m = ROOT_LINE.match(line)
        if m:
            root_name = m.group(1)
            rest = line[m.end():]
            if rest.startswith("("):
                close = rest.find(") tuple(")
                if close > 0:
                    root_shapes = [INDEX_COMMENT.sub("", s).strip()
                                   for s in split_top_level(rest[1:close])]
    if root_name is None:
        sys.exit("make_big_module: the entry computation has no ROOT")
    feeds = {}
    for output, param in ALIAS.findall(header_line):
        feeds[int(param)] = int(output)
    return root_name, root_shapes, feeds


def entry_body(entry, k, copies, root_name, root_shapes, feeds, stats):
    suffix = ".r%d" % k if k else ""
    prev = ".r%d" % (k - 1) if k > 1 else ""
    out = []
    for line in entry[1:-1]:
        if k > 0:
            m = PARAMETER_LINE.match(line)
            if m:
                name, shape, number, attrs = m.group(1), m.group(2), int(m.group(3)), m.group(4)
                j = feeds.get(number)
                if (j is not None and root_shapes is not None and j < len(root_shapes) and
                        root_shapes[j] == shape):
                    body = "get-tuple-element(%%%s%s), index=%d" % (root_name, prev, j)
                    stats["chained"] += 1
                else:
                    body = "copy(%%%s)" % name
                    stats["copied"] += 1
                out.append("  %%%s%s = %s %s%s" % (name, suffix, shape, body, rename(attrs, suffix)))
                continue
        line = rename(line, suffix)
        if k != copies - 1 and line.startswith("  ROOT "):
            line = "  " + line[len("  ROOT "):]
        out.append(line)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), default="jax-train-step",
                    help="which dump to repeat, and the defaults below (default %(default)s)")
    ap.add_argument("--input", help="HLO dump (.txt or .txt.gz); default: the shape's")
    ap.add_argument("--output", help="where to write; default: the shape's (build-bench/...)")
    ap.add_argument("--min-mb", type=float,
                    help="smallest output size in MB (10^6 bytes); sets the copy count "
                         "(default: 100 for jax-train-step, 96 for pytorch-bert)")
    ap.add_argument("--copies", type=int, default=0, help="copy count (overrides --min-mb)")
    args = ap.parse_args()
    shape_input, shape_output, shape_mb = SHAPES[args.shape]
    args.input = args.input or shape_input
    args.output = args.output or shape_output
    args.min_mb = shape_mb if args.min_mb is None else args.min_mb

    text = read_text(args.input)
    preamble, blocks, entry_index = split_module(text)
    entry = blocks[entry_index]
    others = [b for i, b in enumerate(blocks) if i != entry_index]
    copies = args.copies or max(1, math.ceil(args.min_mb * 1e6 / max(1, len(text))))
    # The renaming suffixes lengthen each copy a little, so the estimate may fall short.
    root_name, root_shapes, feeds = entry_chain(entry, preamble[0] if preamble else "")
    stats = {"chained": 0, "copied": 0}

    def render(n):
        parts = ["\n".join(preamble)]
        for k in range(n):
            suffix = ".r%d" % k if k else ""
            for block in others:
                parts.append("\n".join([rename_header(block[0], suffix)] +
                                       [rename(line, suffix) for line in block[1:]]))
        body = []
        for k in range(n):
            body += entry_body(entry, k, n, root_name, root_shapes, feeds, stats)
        parts.append("\n".join([entry[0]] + body + ["}"]))
        return "\n".join(parts) + "\n"

    if not args.copies:
        # The renaming lengthens copy k by a suffix ".r<k>" per name: from the sizes of one and two
        # copies and the number of renamed names, the smallest count that reaches --min-mb.
        one, two = len(render(1)), len(render(2))
        names = sum(1 for m in NAME_OR_STRING.finditer(text) if m.group(1) is not None)
        size, copies = one, 1
        while size < args.min_mb * 1e6:
            size += (two - one) + names * (len(str(copies)) - 1)
            copies += 1
    stats = {"chained": 0, "copied": 0}
    out = render(copies)
    while not args.copies and len(out) < args.min_mb * 1e6:
        copies += 1
        stats = {"chained": 0, "copied": 0}
        out = render(copies)

    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    tmp = args.output + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(out)
    os.replace(tmp, args.output)
    instructions = sum(1 for line in out.split("\n") if line.startswith("  "))
    print("make_big_module: wrote %s: %.1f MB, %d copies of %s, %d computations, "
          "~%d instructions; entry copies chained through %d parameters (%d copied)" %
          (args.output, len(out) / 1e6, copies, os.path.basename(args.input),
           1 + copies * len(others), instructions, stats["chained"] // max(1, copies - 1),
           stats["copied"] // max(1, copies - 1)))


if __name__ == "__main__":
    main()
