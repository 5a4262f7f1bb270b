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

}  // namespace
}  // namespace spmdsim::passes
