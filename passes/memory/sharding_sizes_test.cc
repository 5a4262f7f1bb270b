// Per-device sizes of a module with global shapes: annotated, inherited from operands, from
// users, and whole where nothing says otherwise.
#include "passes/memory/sharding_sizes.h"

#include <catch2/catch.hpp>

#include "passes/memory/live_range_analysis.h"
#include "passes/memory/memory_test_modules.h"

namespace spmdsim::passes {
namespace {

using testing::Find;
using testing::Parse;

TEST_CASE("splits follow dimensions of the same size through operands and users") {
  const auto module = Parse(R"(HloModule global, num_partitions=8

ENTRY %main (x: f32[1024,64], w: f32[64,32]) -> f32[1024,32] {
  %x = f32[1024,64]{1,0} parameter(0), sharding={devices=[8,1]<=[8]}
  %w = f32[64,32]{1,0} parameter(1), sharding={replicated}
  %h = f32[1024,32]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %m = f32[] constant(0)
  %mb = f32[1024,32]{1,0} broadcast(%m), dimensions={}
  %y = f32[1024,32]{1,0} maximum(%h, %mb)
  %s = f32[32]{0} reduce(%y, %m), dimensions={0}, to_apply=%max
  ROOT %out = f32[1024,32]{1,0} transpose(%y), dimensions={0,1}
}

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] maximum(%a, %b)
}
)");
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  const AliasAnalysis alias = AliasAnalysis::Run(df);
  const LiveRangeAnalysis lr = LiveRangeAnalysis::Run(df, alias);
  const ShardingSizes sizes = ShardingSizes::Compute(df, lr.sequence());
  const auto bytes = [&](std::string_view name) {
    return sizes.SlotBytes(df.FirstSlot(Find(*module, name)));
  };
  CHECK(bytes("x") == 1024 * 64 * 4 / 8);
  CHECK(bytes("w") == 64 * 32 * 4);
  CHECK(bytes("h") == 1024 * 32 * 4 / 8);   // the batch split survives the dot
  CHECK(bytes("mb") == 1024 * 32 * 4 / 8);  // a broadcast takes its user's split
  CHECK(bytes("y") == 1024 * 32 * 4 / 8);
  CHECK(bytes("s") == 32 * 4);  // the reduction removes the split dimension
  CHECK(bytes("out") == 1024 * 32 * 4 / 8);
  CHECK(sizes.SlotTiles(df.FirstSlot(Find(*module, "h"))) == std::vector<int64_t>{8, 1});
}

}  // namespace
}  // namespace spmdsim::passes
