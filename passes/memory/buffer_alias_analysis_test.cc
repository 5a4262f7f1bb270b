// Which values must share one buffer: a while's state, in-place updates, donated parameters.
#include "passes/memory/buffer_alias_analysis.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "passes/memory/memory_test_modules.h"

namespace spmdsim::passes {
namespace {

using testing::Find;
using testing::kLoopModule;
using testing::Parse;

// Names of the values in the buffer holding (instruction, index).
std::vector<std::string> BufferAt(const DataflowAnalysis& df, const AliasAnalysis& alias,
                                  const ir::HloModule& module, std::string_view name,
                                  const ShapeIndex& index = {}) {
  const int32_t id = df.UniqueValueAt(df.SlotAt(Find(module, name), index));
  REQUIRE(id >= 0);
  std::vector<std::string> names;
  for (int32_t v : alias.BufferOf(id).values) {
    const HloValue& value = df.value(v);
    names.push_back(std::string(value.instruction->name) +
                    ShapeIndexToString(df.SlotIndex(value.slot)));
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST_CASE("a while's init, parameters, body root and result share one buffer per element") {
  const auto module = Parse(kLoopModule);
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  const AliasAnalysis alias = AliasAnalysis::Run(df);
  CHECK(BufferAt(df, alias, *module, "w", {0}) ==
        std::vector<std::string>{"next{}", "p{0}", "q{0}", "w{0}", "zero{}"});
  CHECK(BufferAt(df, alias, *module, "w") ==
        std::vector<std::string>{"init{}", "p{}", "q{}", "t{}", "w{}"});
  // The array passes through unchanged: its own buffer, one value.
  CHECK(BufferAt(df, alias, *module, "w", {1}) == std::vector<std::string>{"sum{}"});
}

TEST_CASE("input_output_alias puts a donated parameter and its output in one buffer") {
  const auto module = Parse(kLoopModule);
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  const AliasAnalysis alias = AliasAnalysis::Run(df);
  CHECK(BufferAt(df, alias, *module, "a") == std::vector<std::string>{"a{}", "neg{}"});
  CHECK(BufferAt(df, alias, *module, "b") == std::vector<std::string>{"b{}"});
  const int32_t a = df.UniqueValueAt(df.FirstSlot(Find(*module, "a")));
  CHECK(alias.BufferOf(a).live_out);
  const int32_t b = df.UniqueValueAt(df.FirstSlot(Find(*module, "b")));
  CHECK_FALSE(alias.BufferOf(b).live_out);
}

TEST_CASE("in-place updates share their operand's buffer, also through a fusion") {
  const auto module = Parse(R"(HloModule dus, is_scheduled=true

%fused_update (x: f32[16], u: f32[4], k: s32[]) -> f32[16] {
  %x = f32[16]{0} parameter(0)
  %u = f32[4]{0} parameter(1)
  %k = s32[] parameter(2)
  %xb = f32[16]{0} bitcast(%x)
  ROOT %d = f32[16]{0} dynamic-update-slice(%xb, %u, %k)
}

ENTRY %main (a: f32[16], v: f32[4], i: s32[]) -> f32[16] {
  %a = f32[16]{0} parameter(0)
  %v = f32[4]{0} parameter(1)
  %i = s32[] parameter(2)
  %base = f32[16]{0} negate(%a)
  %plain = f32[16]{0} dynamic-update-slice(%base, %v, %i)
  ROOT %fused = f32[16]{0} fusion(%plain, %v, %i), kind=kLoop, calls=%fused_update
}
)");
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  const AliasAnalysis alias = AliasAnalysis::Run(df);
  CHECK(BufferAt(df, alias, *module, "fused") ==
        std::vector<std::string>{"base{}", "fused{}", "plain{}"});
  CHECK(BufferAt(df, alias, *module, "v") == std::vector<std::string>{"v{}"});
}

}  // namespace
}  // namespace spmdsim::passes
