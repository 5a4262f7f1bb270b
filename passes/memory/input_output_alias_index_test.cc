// The input_output_alias index answers as a scan of the module's pairs does.
#include "passes/memory/input_output_alias_index.h"

#include <catch2/catch.hpp>

#include "passes/memory/memory_test_modules.h"

namespace spmdsim::passes {
namespace {

TEST_CASE("input_output_alias index: the pairs by output in the module's order, and by parameter") {
  const auto module = testing::Parse(
      R"(HloModule donated, input_output_alias={ {0}: (1, {}, may-alias), {1}: (0, {1}, must-alias), {0}: (2, {}, may-alias) }

ENTRY %main (a: (f32[4], f32[4]), b: f32[4], c: f32[4]) -> (f32[4], f32[4]) {
  %a = (f32[4]{0}, f32[4]{0}) parameter(0)
  %b = f32[4]{0} parameter(1)
  %c = f32[4]{0} parameter(2)
  %a1 = f32[4]{0} get-tuple-element(%a), index=1
  ROOT %out = (f32[4]{0}, f32[4]{0}) tuple(%b, %a1)
}
)");
  const InputOutputAliasIndex index(*module);
  const auto first = index.ForOutput({0});
  REQUIRE(first.size() == 2);
  CHECK(first[0]->parameter_number == 1);  // the module's order
  CHECK(first[1]->parameter_number == 2);
  REQUIRE(index.ForOutput({1}).size() == 1);
  CHECK(index.ForOutput({1})[0]->parameter_index == std::vector<int64_t>{1});
  CHECK(index.ForOutput({}).empty());
  CHECK(index.ForOutput({2}).empty());
  CHECK(index.ParameterAliased(1, {}));
  CHECK(index.ParameterAliased(0, {1}));
  CHECK_FALSE(index.ParameterAliased(0, {0}));
  CHECK_FALSE(index.ParameterAliased(0, {}));
  CHECK_FALSE(index.ParameterAliased(3, {}));
  CHECK_FALSE(index.empty());
}

TEST_CASE("input_output_alias index of a module without donations is empty") {
  const auto module = testing::Parse(R"(HloModule plain

ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%a)
}
)");
  const InputOutputAliasIndex index(*module);
  CHECK(index.empty());
  CHECK(index.ForOutput({}).empty());
  CHECK_FALSE(index.ParameterAliased(0, {}));
}

}  // namespace
}  // namespace spmdsim::passes
