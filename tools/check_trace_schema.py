#!/usr/bin/env python3
"""Validates spmdsim's --trace output against tools/trace_schema.json, with the standard library
only: a small JSON Schema checker for the keywords that schema uses (type, enum, const, required,
properties, additionalProperties, items, minItems, minProperties, minimum, minLength, oneOf, and
local $ref).

  check_trace_schema.py SCHEMA TRACE        exit 0 when TRACE is valid, 1 with the errors
  check_trace_schema.py --test SPMDSIM DUMP the ctest: writes the trace of DUMP with
                                            `SPMDSIM report --trace`, validates it, then checks
                                            that broken copies of it are rejected
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def resolve(root, ref):
    if not ref.startswith("#/"):
        raise ValueError("only local $ref is supported: " + ref)
    node = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def validate(value, schema, root, path="$"):
    """Returns the list of errors, each "path: what is wrong"."""
    if "$ref" in schema:
        return validate(value, resolve(root, schema["$ref"]), root, path)
    errors = []
    if "type" in schema and not TYPES[schema["type"]](value):
        return [f"{path}: expected {schema['type']}, got {json.dumps(value)[:60]}"]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: expected {json.dumps(schema['const'])}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {json.dumps(value)[:60]} not one of {schema['enum']}")
    if "minimum" in schema and TYPES["number"](value) and value < schema["minimum"]:
        errors.append(f"{path}: {value} < {schema['minimum']}")
    if "minLength" in schema and isinstance(value, str) and len(value) < schema["minLength"]:
        errors.append(f"{path}: shorter than {schema['minLength']}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing {key}")
        if len(value) < schema.get("minProperties", 0):
            errors.append(f"{path}: fewer than {schema['minProperties']} properties")
        properties = schema.get("properties", {})
        for key, item in value.items():
            if key in properties:
                errors += validate(item, properties[key], root, f"{path}.{key}")
            elif schema.get("additionalProperties", True) is False:
                errors.append(f"{path}: unexpected property {key}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                errors += validate(item, schema["items"], root, f"{path}[{i}]")
    if "oneOf" in schema:
        matching = [s for s in schema["oneOf"] if not validate(value, s, root, path)]
        if len(matching) != 1:
            errors.append(f"{path}: matches {len(matching)} of the oneOf schemas, not 1")
    return errors


def check(schema, trace):
    return validate(trace, schema, schema)


def first(trace, ph):
    return next(e for e in trace["traceEvents"] if e["ph"] == ph)


# Broken copies of a valid trace; each must be rejected.
MUTATIONS = {
    "no traceEvents": lambda t: t.pop("traceEvents"),
    "X without dur": lambda t: first(t, "X").pop("dur"),
    "X with negative ts": lambda t: first(t, "X").update(ts=-1),
    "pid as a string": lambda t: first(t, "X").update(pid="1"),
    "tid as a float": lambda t: first(t, "X").update(tid=1.5),
    "unknown phase": lambda t: first(t, "X").update(ph="Q"),
    "counter without bytes": lambda t: first(t, "C").update(args={}),
    "metadata without args": lambda t: first(t, "M").pop("args"),
    "no timing model": lambda t: t["otherData"].pop("timing_model"),
}


def self_test(spmdsim, dump, schema):
    with tempfile.TemporaryDirectory() as tmp:
        trace_path = os.path.join(tmp, "trace.json")
        subprocess.run([spmdsim, "report", dump, "-o", os.path.join(tmp, "r.html"), "--trace",
                        trace_path], check=True)
        with open(trace_path) as f:
            trace = json.load(f)
    failures = 0
    errors = check(schema, trace)
    for error in errors[:20]:
        print("invalid trace:", error)
    failures += bool(errors)
    for name, mutate in MUTATIONS.items():
        broken = copy.deepcopy(trace)
        mutate(broken)
        if not check(schema, broken):
            print("accepted a broken trace:", name)
            failures += 1
    kinds = {e["ph"] for e in trace["traceEvents"]}
    if kinds != {"X", "C", "M"}:
        print("expected X, C and M events, got", sorted(kinds))
        failures += 1
    print(f"{len(trace['traceEvents'])} events, {len(MUTATIONS)} broken copies rejected"
          if not failures else f"{failures} failure(s)")
    return 1 if failures else 0


def main(argv):
    schema_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trace_schema.json")
    if len(argv) == 4 and argv[1] == "--test":
        with open(schema_path) as f:
            return self_test(argv[2], argv[3], json.load(f))
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        schema = json.load(f)
    with open(argv[2]) as f:
        errors = check(schema, json.load(f))
    for error in errors:
        print(error)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
