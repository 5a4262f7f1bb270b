// Small modules in XLA's print format and helpers shared by the tests of the buffer and memory
// analyses (buffer_dataflow_analysis_test.cc, buffer_alias_analysis_test.cc,
// live_range_analysis_test.cc, memory_analysis_test.cc).
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "ir/hlo.h"
#include "ir/parser.h"

namespace spmdsim::passes::testing {

// A loop that counts to 5 and passes an array through unchanged; the array is donated
// (input_output_alias) to the first output.
constexpr std::string_view kLoopModule =
    R"(HloModule loop, is_scheduled=true, input_output_alias={ {0}: (0, {}, may-alias) }

%body (p: (s32[], f32[8])) -> (s32[], f32[8]) {
  %p = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %x = f32[8]{0} get-tuple-element(%p), index=1
  ROOT %t = (s32[], f32[8]{0}) tuple(%next, %x)
}

%cond (q: (s32[], f32[8])) -> pred[] {
  %q = (s32[], f32[8]{0}) parameter(0)
  %j = s32[] get-tuple-element(%q), index=0
  %five = s32[] constant(5)
  ROOT %lt = pred[] compare(%j, %five), direction=LT
}

ENTRY %main (a: f32[8], b: f32[8]) -> (f32[8], f32[2,4]) {
  %a = f32[8]{0} parameter(0)
  %b = f32[8]{0} parameter(1)
  %sum = f32[8]{0} add(%a, %b)
  %zero.0 = s32[] constant(0)
  %zero = s32[] copy(%zero.0)
  %init = (s32[], f32[8]{0}) tuple(%zero, %sum)
  %w = (s32[], f32[8]{0}) while(%init), condition=%cond, body=%body
  %y = f32[8]{0} get-tuple-element(%w), index=1
  %r = f32[2,4]{1,0} bitcast(%y)
  %neg = f32[8]{0} negate(%y)
  ROOT %out = (f32[8]{0}, f32[2,4]{1,0}) tuple(%neg, %r)
}
)";

inline std::unique_ptr<ir::HloModule> Parse(std::string_view text) {
  ir::ParseResult result =
      ir::ParseHloText(std::make_shared<ir::SourceBuffer>("test.hlo", std::string(text)));
  INFO((result.error ? result.error->ToString() : ""));
  REQUIRE(result.ok());
  REQUIRE(result.modules.size() == 1);
  return std::move(result.modules[0]);
}

inline const ir::HloInstruction* Find(const ir::HloModule& module, std::string_view name) {
  for (const ir::HloComputation* computation : module.computations) {
    for (const ir::HloInstruction* instr : computation->instructions) {
      if (instr->name == name) return instr;
    }
  }
  FAIL("no instruction " << name);
  return nullptr;
}

}  // namespace spmdsim::passes::testing
