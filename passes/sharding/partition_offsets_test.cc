// Shard counts from the arithmetic that offsets each device's counters, on hand-written modules
// of the two forms XLA leaves: partition-id times the slice size (a 1-D mesh), and a constant
// table indexed by partition-id fused into the counters (a 2-D mesh whose second axis replicates
// the tensor, as in testdata/dumps/mesh4x2_*).
#include "passes/sharding/partition_offsets.h"

#include <catch2/catch.hpp>

#include "passes/memory/memory_test_modules.h"

namespace spmdsim::passes {
namespace {

using testing::Find;
using testing::Parse;

TEST_CASE("device offsets: partition-id times the slice size gives one slice per device") {
  const auto module = Parse(R"(HloModule offsets, num_partitions=8

ENTRY %main () -> u32[4] {
  %pid = u32[] partition-id()
  %c = s32[] convert(%pid)
  %four = s32[] constant(4)
  %m = s32[] multiply(%c, %four)
  %off = u32[] convert(%m)
  %b = u32[4]{0} broadcast(%off), dimensions={}
  %i = u32[4]{0} iota(), iota_dimension=0
  ROOT %counters = u32[4]{0} add(%i, %b)
}
)");
  const ir::HloInstruction* counters = Find(*module, "counters");
  const std::vector<DeviceOffset> offsets = DeviceOffsets({counters});
  REQUIRE(offsets.size() == 1);
  CHECK(offsets[0].value->name == "off");
  CHECK(EvaluateOnDevice(offsets[0].value, 3, 0) == 12);
  CHECK(DistinctDeviceSlices(offsets, 8, 1) == 8);
}

TEST_CASE("device offsets: a table fused into the counters counts its distinct entries") {
  const auto module = Parse(R"(HloModule offsets, num_partitions=8

%fused (p0: s32[8], p1: u32[]) -> u32[4,32] {
  %p0 = s32[8]{0} parameter(0)
  %p1 = u32[] parameter(1)
  %ds = s32[1]{0} dynamic-slice(%p0, %p1), dynamic_slice_sizes={1}
  %r = s32[] reshape(%ds)
  %rows = s32[] constant(4)
  %start = s32[] multiply(%r, %rows)
  %u = u32[] convert(%start)
  %b = u32[4,32]{1,0} broadcast(%u), dimensions={}
  %i = u32[4,32]{1,0} iota(), iota_dimension=0
  ROOT %a = u32[4,32]{1,0} add(%i, %b)
}

ENTRY %main () -> u32[4,32] {
  %table = s32[8]{0} constant({0, 0, 1, 1, 2, 2, 3, 3})
  %pid = u32[] partition-id()
  ROOT %counters = u32[4,32]{1,0} fusion(%table, %pid), kind=kLoop, calls=%fused
}
)");
  const ir::HloInstruction* counters = Find(*module, "counters");
  const std::vector<DeviceOffset> offsets = DeviceOffsets({counters});
  REQUIRE(offsets.size() == 1);
  CHECK(offsets[0].fusion == counters);
  CHECK(DistinctDeviceSlices(offsets, 8, 1) == 4);
  CHECK_FALSE(ReadsElidedTable(offsets));
}

// XLA:TPU's form (testdata/dumps/jax012_tpu4_*): the table prefetched into another memory space
// by copy-start/copy-done, and the 64-bit counter offset split into two 32-bit words by masks
// and shifts.
TEST_CASE("device offsets: a prefetched table and the offset's 32-bit words") {
  const auto module = Parse(R"(HloModule offsets, num_partitions=4

ENTRY %main () -> u32[8] {
  %table = s32[4]{0} constant({0, 0, 1, 1})
  %start = (s32[4]{0:S(1)}, s32[4]{0}, u32[]) copy-start(%table)
  %done = s32[4]{0:S(1)} copy-done(%start)
  %pid = u32[] partition-id()
  %ds = s32[1]{0} dynamic-slice(%done, %pid), dynamic_slice_sizes={1}
  %rows = s32[1]{0} constant({70000})
  %m = s32[1]{0} multiply(%ds, %rows)
  %u = u32[1]{0} convert(%m)
  %off = u32[] bitcast(%u)
  %mask = u32[] constant(65535)
  %low = u32[] and(%off, %mask)
  %sixteen = u32[] constant(16)
  %high = u32[] shift-right-logical(%off, %sixteen)
  %back = u32[] shift-left(%high, %sixteen)
  %word = u32[] or(%back, %low)
  %b = u32[8]{0} broadcast(%word), dimensions={}
  %i = u32[8]{0} iota(), iota_dimension=0
  ROOT %counters = u32[8]{0} add(%i, %b)
}
)");
  const std::vector<DeviceOffset> offsets = DeviceOffsets({Find(*module, "counters")});
  REQUIRE(offsets.size() == 1);
  CHECK(EvaluateOnDevice(offsets[0].value, 3, 0) == 70000);
  CHECK(EvaluateOnDevice(Find(*module, "low"), 3, 0) == 70000 % 65536);
  CHECK(EvaluateOnDevice(Find(*module, "high"), 3, 0) == 1);
  CHECK(DistinctDeviceSlices(offsets, 4, 1) == 2);
}

TEST_CASE("device offsets: shifts by the width or more, and unsigned words wrap") {
  const auto module = Parse(R"(HloModule offsets, num_partitions=2

ENTRY %main () -> (u32[], u32[], s32[]) {
  %pid = u32[] partition-id()
  %big = u32[] constant(32)
  %zero = u32[] shift-left(%pid, %big)
  %one = u32[] constant(1)
  %minus = u32[] subtract(%zero, %one)
  %wrapped = u32[] xor(%minus, %zero)
  %negative = s32[] constant(-8)
  %two = s32[] constant(2)
  %sign = s32[] shift-right-arithmetic(%negative, %two)
  ROOT %t = (u32[], u32[], s32[]) tuple(%zero, %wrapped, %sign)
}
)");
  CHECK(EvaluateOnDevice(Find(*module, "zero"), 1, 0) == 0);
  CHECK(EvaluateOnDevice(Find(*module, "wrapped"), 1, 0) == 4294967295);
  CHECK(EvaluateOnDevice(Find(*module, "sign"), 1, 0) == -2);
}

// XLA prints constants of more than 10 elements as {...} (HloPrintOptions::print_large_constants
// off): a 16-device table cannot be read from the dump, and that is said rather than guessed.
TEST_CASE("device offsets: a table the dump elides is detected, not evaluated") {
  const auto module = Parse(R"(HloModule offsets, num_partitions=16

ENTRY %main () -> u32[4] {
  %table = s32[16]{0} constant({...})
  %pid = u32[] partition-id()
  %ds = s32[1]{0} dynamic-slice(%table, %pid), dynamic_slice_sizes={1}
  %off = u32[] bitcast(%ds)
  %b = u32[4]{0} broadcast(%off), dimensions={}
  %i = u32[4]{0} iota(), iota_dimension=0
  ROOT %counters = u32[4]{0} add(%i, %b)
}
)");
  const std::vector<DeviceOffset> offsets = DeviceOffsets({Find(*module, "counters")});
  REQUIRE(offsets.size() == 1);
  CHECK(DistinctDeviceSlices(offsets, 16, 1) == 0);
  CHECK(ReadsElidedTable(offsets));
}

TEST_CASE("device offsets: arithmetic that cannot be evaluated gives no count") {
  const auto module = Parse(R"(HloModule offsets, num_partitions=4

ENTRY %main (x: u32[]) -> u32[4] {
  %x = u32[] parameter(0)
  %pid = u32[] partition-id()
  %off = u32[] add(%pid, %x)
  %b = u32[4]{0} broadcast(%off), dimensions={}
  %i = u32[4]{0} iota(), iota_dimension=0
  ROOT %counters = u32[4]{0} add(%i, %b)
}
)");
  const std::vector<DeviceOffset> offsets = DeviceOffsets({Find(*module, "counters")});
  REQUIRE(offsets.size() == 1);
  CHECK(DistinctDeviceSlices(offsets, 4, 1) == 0);
}

// XLA:TPU hands a scanned body the table it reads as loop state, unchanged by every iteration (a
// sharded rng-bit-generator's state offsets in MaxText's scanned layers): read through the loop.
TEST_CASE("device offsets: a table passed to a loop as unchanged state is read through it") {
  const auto module = Parse(R"(HloModule offsets, num_partitions=4

%body (p: (s32[], u32[4], u32[8])) -> (s32[], u32[4], u32[8]) {
  %p = (s32[], u32[4], u32[8]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %table = u32[4] get-tuple-element(%p), index=1
  %pid = u32[] partition-id()
  %slot = u32[1] dynamic-slice(%table, %pid), dynamic_slice_sizes={1}
  %off = u32[] bitcast(%slot)
  %b = u32[8] broadcast(%off), dimensions={}
  %x = u32[8] get-tuple-element(%p), index=2
  %sum = u32[8] add(%x, %b)
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  ROOT %out = (s32[], u32[4], u32[8]) tuple(%next, %table, %sum)
}

%cond (p: (s32[], u32[4], u32[8])) -> pred[] {
  %p = (s32[], u32[4], u32[8]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(2)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main () -> (s32[], u32[4], u32[8]) {
  %zero = s32[] constant(0)
  %t = u32[4] constant({0, 1, 0, 1})
  %x0 = u32[8] iota(), iota_dimension=0
  %init = (s32[], u32[4], u32[8]) tuple(%zero, %t, %x0)
  ROOT %loop = (s32[], u32[4], u32[8]) while(%init), condition=%cond, body=%body
}
)");
  const std::vector<DeviceOffset> offsets = DeviceOffsets({Find(*module, "sum")});
  REQUIRE(offsets.size() == 1);
  CHECK(EvaluateOnDevice(offsets[0].value, 3, 0) == 1);
  CHECK(DistinctDeviceSlices(offsets, 4, 1) == 2);
}

}  // namespace
}  // namespace spmdsim::passes
