#!/usr/bin/env python3
"""Writes testdata/hostile/: modules that parse (or nearly) but attack the analyses.

Each is the smallest module of its kind (issue #16's list): call-graph cycles, deep nesting,
call DAGs that are exponential to walk path by path, device counts past the limits, invalid
UTF-8 in metadata, and sizes whose sums overflow 64 bits. analyzer/hostile_input_test.cc runs
every command on each; the .expected files hold `spmdsim analyze`'s exit code and first stderr
line (tools/regen_malformed_expected.sh rewrites them). Deterministic: rerunning rewrites the
same bytes.
    python3 tools/make_hostile.py
"""
import gzip
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "hostile")

ADD = ("%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
       "  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n")
COND = "%cond (t: f32[4]) -> pred[] {\n  %t = f32[4]{0} parameter(0)\n  ROOT %c = pred[] constant(false)\n}\n"


def write(name, text):
    path = os.path.join(OUT, name)
    data = text.encode("latin-1") if isinstance(text, str) else text
    if name.endswith(".gz"):
        data = gzip.compress(data, 9, mtime=0)
    with open(path, "wb") as f:
        f.write(data)


def call(kind, callee, operand, name):
    """One instruction (or two) of `kind` calling `callee` on `operand`, defining %name."""
    if kind == "fusion":
        return f"  %{name} = f32[4]{{0}} fusion(%{operand}), kind=kLoop, calls=%{callee}\n"
    if kind == "call":
        return f"  %{name} = f32[4]{{0}} call(%{operand}), to_apply=%{callee}\n"
    if kind == "while":
        return f"  %{name} = f32[4]{{0}} while(%{operand}), condition=%cond, body=%{callee}\n"
    if kind == "conditional":
        return (f"  %{name}.p = s32[] constant(0)\n  %{name} = f32[4]{{0}} conditional(%{name}.p, "
                f"%{operand}, %{operand}), branch_computations={{%{callee}, %{callee}}}\n")
    if kind == "async":
        return (f"  %{name}.s = ((f32[4]{{0}}), f32[4]{{0}}) call-start(%{operand}), "
                f"async_execution_thread=\"main\", to_apply=%{callee}\n"
                f"  %{name} = f32[4]{{0}} call-done(%{name}.s)\n")
    raise ValueError(kind)


def chain(kind, levels, fanout):
    """Computations c0..c{levels-1}; each calls the one below `fanout` times in sequence.
    c0 holds an all-reduce, so the collectives and their execution counts are exercised."""
    text = f"HloModule {kind}_chain, num_partitions=2\n\n{ADD}\n{COND}\n"
    for i in range(levels):
        text += f"%c{i} (p: f32[4]) -> f32[4] {{\n  %p = f32[4]{{0}} parameter(0)\n"
        if i == 0:
            text += ("  %n = f32[4]{0} negate(%p)\n  %ar = f32[4]{0} all-reduce(%n), channel_id=1, "
                     "replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add\n"
                     "  ROOT %r = f32[4]{0} add(%ar, %n)\n}\n\n")
            continue
        operand = "p"
        for k in range(fanout):
            text += call(kind, f"c{i - 1}", operand, f"u{k}")
            operand = f"u{k}"
        text += f"  ROOT %r = f32[4]{{0}} add(%{operand}, %p)\n}}\n\n"
    text += "ENTRY %main (a: f32[4]) -> f32[4] {\n  %a = f32[4]{0} parameter(0)\n"
    text += call(kind, f"c{levels - 1}", "a", "x")
    text += "  ROOT %y = f32[4]{0} copy(%x)\n}\n"
    return text


def fusion_dag_in_place(levels):
    """Each fused computation's root is a fusion of the level below fed by another: the in-place
    pairs of the entry fusion, found path by path, take 2^levels steps."""
    text = "HloModule fusion_dag_in_place\n\n"
    for i in range(levels):
        text += f"%c{i} (p: f32[64]) -> f32[64] {{\n  %p = f32[64]{{0}} parameter(0)\n"
        if i == 0:
            text += ("  %u = f32[4]{0} constant({1, 2, 3, 4})\n  %z = s32[] constant(0)\n"
                     "  ROOT %r = f32[64]{0} dynamic-update-slice(%p, %u, %z)\n}\n\n")
        else:
            text += (f"  %u0 = f32[64]{{0}} fusion(%p), kind=kLoop, calls=%c{i - 1}\n"
                     f"  ROOT %u1 = f32[64]{{0}} fusion(%u0), kind=kLoop, calls=%c{i - 1}\n}}\n\n")
    text += ("ENTRY %main (a: f32[64]) -> f32[64] {\n  %a = f32[64]{0} parameter(0)\n"
             f"  ROOT %x = f32[64]{{0}} fusion(%a), kind=kLoop, calls=%c{levels - 1}\n}}\n")
    return text


def header_only(attribute):
    return (f"HloModule devices, {attribute}\n\n{ADD}\nENTRY %main (a: f32[4]) -> f32[4] {{\n"
            "  %a = f32[4]{0} parameter(0)\n  ROOT %r = f32[4]{0} all-reduce(%a), "
            "replica_groups={}, to_apply=%add\n}\n")


def iota_groups(devices, repeats, all_to_all=False):
    text = f"HloModule iota_groups, num_partitions={devices}\n\n{ADD}\n"
    text += "ENTRY %main (a: f32[4]) -> f32[4] {\n  %a0 = f32[4]{0} parameter(0)\n"
    for i in range(repeats):
        if all_to_all:  # each device's bytes go to every other device, across nodes
            text += (f"  %a{i + 1} = f32[4]{{0}} all-to-all(%a{i}), channel_id={i + 1}, "
                     f"replica_groups=[1,{devices}]<=[{devices}], dimensions={{0}}\n")
            continue
        text += (f"  %a{i + 1} = f32[4]{{0}} all-reduce(%a{i}), channel_id={i + 1}, "
                 f"replica_groups=[1,{devices}]<=[{devices}], use_global_device_ids=true, "
                 "to_apply=%add\n")
    text += f"  ROOT %r = f32[4]{{0}} copy(%a{repeats})\n}}\n"
    return text


# Three 2^62-byte parameters, a loop whose induction variable runs from -2^63+1 to 2^63-1 (a
# trip count past INT64_MAX), all-reduces of 4 EiB inside and after it: every sum of sizes,
# trips and wire bytes passes 2^63.
BIG = "u8[4611686018427387904]"
OVERFLOW = f"""HloModule overflow, is_scheduled=true, num_partitions=2

%add (x: u8[], y: u8[]) -> u8[] {{
  %x = u8[] parameter(0)
  %y = u8[] parameter(1)
  ROOT %s = u8[] add(%x, %y)
}}

%body (t: (s64[], {BIG})) -> (s64[], {BIG}) {{
  %t = (s64[], {BIG}{{0}}) parameter(0)
  %i = s64[] get-tuple-element(%t), index=0
  %v = {BIG}{{0}} get-tuple-element(%t), index=1
  %ar = {BIG}{{0}} all-reduce(%v), channel_id=1, replica_groups={{{{0,1}}}}, use_global_device_ids=true, to_apply=%add
  %one = s64[] constant(1)
  %n = s64[] add(%i, %one)
  ROOT %o = (s64[], {BIG}{{0}}) tuple(%n, %ar)
}}

%cond (t: (s64[], {BIG})) -> pred[] {{
  %t = (s64[], {BIG}{{0}}) parameter(0)
  %i = s64[] get-tuple-element(%t), index=0
  %lim = s64[] constant(9223372036854775807)
  ROOT %c = pred[] compare(%i, %lim), direction=LT
}}

ENTRY %main (a: {BIG}, b: {BIG}, c: {BIG}) -> {BIG} {{
  %a = {BIG}{{0}} parameter(0)
  %b = {BIG}{{0}} parameter(1)
  %c = {BIG}{{0}} parameter(2)
  %ab = {BIG}{{0}} add(%a, %b)
  %abc = {BIG}{{0}} add(%ab, %c)
  %z = s64[] constant(-9223372036854775807)
  %t0 = (s64[], {BIG}{{0}}) tuple(%z, %abc)
  %w = (s64[], {BIG}{{0}}) while(%t0), condition=%cond, body=%body
  %r = {BIG}{{0}} get-tuple-element(%w), index=1
  %ar2 = {BIG}{{0}} all-reduce(%r), channel_id=2, replica_groups={{{{0,1}}}}, use_global_device_ids=true, to_apply=%add
  ROOT %ar3 = {BIG}{{0}} all-reduce(%ar2), channel_id=3, replica_groups={{{{0,1}}}}, use_global_device_ids=true, to_apply=%add
}}
"""

# A trip count of INT64_MAX from XLA's own backend config, times an all-reduce inside.
def known_trips(name, body):
    """A loop of INT64_MAX known trips over f32[1048576] whose body is `body` (its ROOT last)."""
    return f"""HloModule {name}, num_partitions=2

{ADD}
%body (t: f32[1048576]) -> f32[1048576] {{
  %t = f32[1048576]{{0}} parameter(0)
{body}
}}

%cond (t: f32[1048576]) -> pred[] {{
  %t = f32[1048576]{{0}} parameter(0)
  ROOT %c = pred[] constant(true)
}}

ENTRY %main (a: f32[1048576]) -> f32[1048576] {{
  %a = f32[1048576]{{0}} parameter(0)
  %w = f32[1048576]{{0}} while(%a), condition=%cond, body=%body, backend_config={{"known_trip_count":{{"n":"9223372036854775807"}}}}
  ROOT %r = f32[1048576]{{0}} copy(%w)
}}
"""


KNOWN_TRIPS = known_trips("known_trips", "  ROOT %ar = f32[1048576]{0} all-reduce(%t), channel_id=1, "
                          "replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add")

# Two collective kinds in one loop of INT64_MAX trips: each kind's runs saturate, and their sum
# (the runs per step `collectives` prints) must too (it printed -9223372036854775808).
KNOWN_TRIPS_TWO_KINDS = known_trips(
    "known_trips_two_kinds",
    "  %ar = f32[1048576]{0} all-reduce(%t), channel_id=1, replica_groups={{0,1}}, "
    "use_global_device_ids=true, to_apply=%add\n"
    "  %s = f32[524288]{0} slice(%ar), slice={[0:524288]}\n"
    "  ROOT %ag = f32[1048576]{0} all-gather(%s), channel_id=2, replica_groups={{0,1}}, "
    "dimensions={0}, use_global_device_ids=true")

UTF8 = (f"HloModule utf8, num_partitions=2\n\n{ADD}\nENTRY %main (a: f32[4]) -> f32[4] {{\n"
        "  %a = f32[4]{0} parameter(0)\n  ROOT %r = f32[4]{0} all-reduce(%a), channel_id=1, "
        "replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add, "
        "metadata={op_type=\"all_reduce\" op_name=\"jit(f)/bad\xffname/\xc3\" "
        "source_file=\"/tmp/m\xe9dule.py\" source_line=3}\n}\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    write("fusion_calls_itself.hlo",
          "HloModule m\n\n%f (p: f32[4]) -> f32[4] {\n  %p = f32[4]{0} parameter(0)\n"
          "  ROOT %r = f32[4]{0} fusion(%p), kind=kLoop, calls=%f\n}\n\n"
          "ENTRY %main (a: f32[4]) -> f32[4] {\n  %a = f32[4]{0} parameter(0)\n"
          "  ROOT %x = f32[4]{0} fusion(%a), kind=kLoop, calls=%f\n}\n")
    write("fusion_calls_entry.hlo",
          "HloModule m\n\nENTRY %main (a: f32[4]) -> f32[4] {\n  %a = f32[4]{0} parameter(0)\n"
          "  ROOT %x = f32[4]{0} fusion(%a), kind=kLoop, calls=%main\n}\n")
    write("while_body_calls_its_loop.hlo",
          f"HloModule m\n\n{COND}\n%b (p: f32[4]) -> f32[4] {{\n  %p = f32[4]{{0}} parameter(0)\n"
          "  ROOT %w = f32[4]{0} call(%p), to_apply=%outer\n}\n\n"
          "%outer (p: f32[4]) -> f32[4] {\n  %p = f32[4]{0} parameter(0)\n"
          "  ROOT %w = f32[4]{0} while(%p), condition=%cond, body=%b\n}\n\n"
          "ENTRY %main (a: f32[4]) -> f32[4] {\n  %a = f32[4]{0} parameter(0)\n"
          "  ROOT %x = f32[4]{0} call(%a), to_apply=%outer\n}\n")
    write("nested_fusions_30000.hlo.gz", chain("fusion", 30000, 1))
    for kind in ("fusion", "call", "while", "conditional", "async"):
        # The deepest call is the 256th, the most allowed: 255 levels and the reducer, or for
        # async 127 levels of two calls each (start -> wrapped computation -> callee).
        write(f"{kind}_chain_256_deep.hlo", chain(kind, 127 if kind == "async" else 255, 1))
        write(f"{kind}_dag_30_levels.hlo", chain(kind, 30, 2))
    write("fusion_chain_257_deep.hlo", chain("fusion", 256, 1))
    # The same DAG before optimizations with a sharded parameter: the collective prediction
    # walks every call site, and recorded one communication need per path (23 GB at 30 levels).
    write("call_dag_30_levels_sharded.before_optimizations.txt",
          chain("call", 30, 2).replace(
              "%a = f32[4]{0} parameter(0)\n  %x",
              "%a = f32[4]{0} parameter(0), sharding={devices=[2]<=[2]}\n  %x"))
    write("fusion_dag_30_levels_in_place.hlo", fusion_dag_in_place(30))
    write("replica_count_2_40.hlo", header_only("replica_count=1099511627776"))
    write("num_partitions_2_40.hlo", header_only("num_partitions=1099511627776"))
    write("num_partitions_2_28.hlo", header_only("num_partitions=268435456"))
    write("devices_product_2_17.hlo", header_only("replica_count=2, num_partitions=65536"))
    write("iota_groups_1m_devices.hlo", iota_groups(1048576, 20))
    write("iota_groups_65536_devices_x20.hlo", iota_groups(65536, 20))
    write("all_to_all_65536_devices_x20.hlo", iota_groups(65536, 20, all_to_all=True))
    write("invalid_utf8_metadata.hlo", UTF8)
    write("sizes_overflow_int64.hlo", OVERFLOW)
    write("known_trip_count_int64_max.hlo", KNOWN_TRIPS)
    write("known_trip_count_two_kinds.hlo", KNOWN_TRIPS_TWO_KINDS)


if __name__ == "__main__":
    main()
