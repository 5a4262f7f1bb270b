// The flattened schedule and value live ranges on a small loop module. The comparison with XLA's
// own HloLiveRange on every real dump is in live_range_analysis_testdata_test.cc.
#include "passes/memory/live_range_analysis.h"

#include <catch2/catch.hpp>

#include "passes/memory/memory_test_modules.h"

namespace spmdsim::passes {
namespace {

using testing::Find;
using testing::kLoopModule;
using testing::Parse;

TimeBound RangeAt(const DataflowAnalysis& df, const LiveRangeAnalysis& lr,
                  const ir::HloModule& module, std::string_view name,
                  const ShapeIndex& index = {}) {
  const int32_t id = df.UniqueValueAt(df.SlotAt(Find(module, name), index));
  REQUIRE(id >= 0);
  REQUIRE(lr.HasRange(id));
  return lr.Range(id);
}

TEST_CASE("the schedule splices a while's condition and body in before the while") {
  const auto module = Parse(kLoopModule);
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  const AliasAnalysis alias = AliasAnalysis::Run(df);
  const LiveRangeAnalysis lr = LiveRangeAnalysis::Run(df, alias);
  std::vector<std::string> names;
  for (const ir::HloInstruction* instr : lr.sequence()) names.emplace_back(instr->name);
  CHECK(names == std::vector<std::string>{"a", "b",    "sum", "zero.0", "zero", "init", "q",
                                          "j", "five", "lt",  "p",      "i",    "one",  "next",
                                          "x", "t",    "w",   "y",      "r",    "neg",  "out"});
  CHECK(lr.EndTime() == 21);
  CHECK(lr.scheduled());
}

TEST_CASE("live ranges: parameters, roots, donated inputs, while state") {
  const auto module = Parse(kLoopModule);
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  const AliasAnalysis alias = AliasAnalysis::Run(df);
  const LiveRangeAnalysis lr = LiveRangeAnalysis::Run(df, alias);
  // A parameter that is not donated lives to the end; a donated one to its last use.
  CHECK(RangeAt(df, lr, *module, "b") == TimeBound{0, 21});
  CHECK(RangeAt(df, lr, *module, "a") == TimeBound{0, 2});
  // Values at the entry root live to the end.
  CHECK(RangeAt(df, lr, *module, "neg") == TimeBound{19, 21});
  CHECK(RangeAt(df, lr, *module, "sum") == TimeBound{2, 21});
  // The loop counter: the copy that initializes it ends when the body starts (the while's use
  // moves to the body parameter), the body's root lives to the end of the body.
  CHECK(RangeAt(df, lr, *module, "zero") == TimeBound{4, 6});
  CHECK(RangeAt(df, lr, *module, "next") == TimeBound{13, 16});
  // Body parameter: from the start of the body.
  CHECK(RangeAt(df, lr, *module, "p", {0}).start == 10);
}

TEST_CASE("a module without a schedule is ordered by its dependencies") {
  const auto module = Parse(R"(HloModule unscheduled

ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%e)
  %e = f32[4]{0} exponential(%a)
}
)");
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  const AliasAnalysis alias = AliasAnalysis::Run(df);
  const LiveRangeAnalysis lr = LiveRangeAnalysis::Run(df, alias);
  CHECK_FALSE(lr.scheduled());
  REQUIRE(lr.sequence().size() == 3);
  CHECK(lr.TimeOf(Find(*module, "e")) < lr.TimeOf(Find(*module, "n")));
}

TEST_CASE("values of an async computation live until its async-done") {
  const auto module = Parse(R"(HloModule async, is_scheduled=true

%wrapped (w.x: f32[4]) -> f32[4] {
  %w.x = f32[4]{0} parameter(0)
  %w.e = f32[4]{0} exponential(%w.x)
  ROOT %w.n = f32[4]{0} negate(%w.e)
}

ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  %s = ((f32[4]{0}), f32[4]{0}, s32[]) async-start(%a), calls=%wrapped
  %e = f32[4]{0} exponential(%a)
  %d = f32[4]{0} async-done(%s), calls=%wrapped
  ROOT %r = f32[4]{0} add(%d, %e)
}
)");
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  const AliasAnalysis alias = AliasAnalysis::Run(df);
  const LiveRangeAnalysis lr = LiveRangeAnalysis::Run(df, alias);
  // a, then the wrapped computation (w.x, w.e, w.n) before the start, then s, e, d, r.
  REQUIRE(lr.sequence().size() == 8);
  CHECK(lr.TimeOf(Find(*module, "w.e")) == 2);
  CHECK(lr.TimeOf(Find(*module, "d")) == 6);
  // w.e is only read inside, yet it stays allocated until the async-done; it starts with the
  // async-start (XLA:GPU's live-range files start the wrapped all-reduce of an async pair at its
  // async-start, though the wrapped computation is flattened before it).
  CHECK(RangeAt(df, lr, *module, "w.e") == TimeBound{4, 6});
}

TEST_CASE("an unscheduled computation is ordered by its operands and control edges") {
  // The text puts `late` first, but it must wait for `early` (a control predecessor).
  const auto module = Parse(R"(HloModule unscheduled

ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  %late = f32[4]{0} negate(%a), control-predecessors={%early}
  %early = f32[4]{0} exponential(%a)
  ROOT %r = f32[4]{0} add(%late, %early)
}
)");
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  const AliasAnalysis alias = AliasAnalysis::Run(df);
  const LiveRangeAnalysis lr = LiveRangeAnalysis::Run(df, alias);
  CHECK(lr.TimeOf(Find(*module, "early")) < lr.TimeOf(Find(*module, "late")));
  CHECK(lr.TimeOf(Find(*module, "late")) < lr.TimeOf(Find(*module, "r")));
}

}  // namespace
}  // namespace spmdsim::passes
