// Which instructions define values and which pass them on, on a small while-loop module written
// in XLA's print format.
#include "passes/memory/buffer_dataflow_analysis.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "passes/memory/memory_test_modules.h"

namespace spmdsim::passes {
namespace {

using testing::Find;
using testing::kLoopModule;
using testing::Parse;

// The value held at (instruction, index), as "definer{index}" ("-" when none or several).
std::string ValueAt(const DataflowAnalysis& df, const ir::HloModule& module, std::string_view name,
                    const ShapeIndex& index = {}) {
  const int32_t id = df.UniqueValueAt(df.SlotAt(Find(module, name), index));
  if (id < 0) return "-";
  const HloValue& value = df.value(id);
  return std::string(value.instruction->name) + ShapeIndexToString(df.SlotIndex(value.slot)) +
         (value.is_phi ? " (phi)" : "");
}

TEST_CASE("bitcast, get-tuple-element and tuple elements pass values on") {
  const auto module = Parse(kLoopModule);
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  CHECK(ValueAt(df, *module, "sum") == "sum{}");
  CHECK(ValueAt(df, *module, "init") == "init{}");
  CHECK(ValueAt(df, *module, "init", {1}) == "sum{}");
  CHECK(ValueAt(df, *module, "init", {0}) == "zero{}");
  CHECK(ValueAt(df, *module, "y") == "sum{}");
  CHECK(ValueAt(df, *module, "r") == "sum{}");
  CHECK(ValueAt(df, *module, "out", {1}) == "sum{}");
  CHECK(ValueAt(df, *module, "out", {0}) == "neg{}");
}

TEST_CASE("a while gets phis only where the loop changes its state") {
  const auto module = Parse(kLoopModule);
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  // The counter changes every iteration: phis at the while and both parameters.
  CHECK(ValueAt(df, *module, "w", {0}) == "w{0} (phi)");
  CHECK(ValueAt(df, *module, "p", {0}) == "p{0} (phi)");
  CHECK(ValueAt(df, *module, "q", {0}) == "q{0} (phi)");
  // The array goes through unchanged: its phis collapse to the init value.
  CHECK(ValueAt(df, *module, "w", {1}) == "sum{}");
  CHECK(ValueAt(df, *module, "p", {1}) == "sum{}");
  CHECK(ValueAt(df, *module, "x") == "sum{}");
  // The state tuple itself: the body builds a new one each iteration.
  CHECK(ValueAt(df, *module, "w") == "w{} (phi)");
  CHECK(ValueAt(df, *module, "i") == "p{0} (phi)");
}

TEST_CASE("copy defines its top level; constants and parameters define values") {
  const auto module = Parse(kLoopModule);
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  CHECK(ValueAt(df, *module, "zero") == "zero{}");
  CHECK(ValueAt(df, *module, "zero.0") == "zero.0{}");
  CHECK(ValueAt(df, *module, "a") == "a{}");
  CHECK(ValueAt(df, *module, "next") == "next{}");
}

TEST_CASE("uses skip pass-through instructions; live-out marks the entry root's values") {
  const auto module = Parse(kLoopModule);
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  const HloValue& sum = df.value(df.UniqueValueAt(df.FirstSlot(Find(*module, "sum"))));
  std::vector<std::string> users;
  for (const HloUse& use : sum.uses) users.emplace_back(use.user->name);
  std::sort(users.begin(), users.end());
  // The while reads its init, negate and the bitcast read y (a bitcast holds no value of its
  // own but counts as a use, as in XLA); the body and entry roots count as uses of what they
  // return. The tuples and get-tuple-elements only forward.
  CHECK(users == std::vector<std::string>{"neg", "out", "r", "t", "w"});
  CHECK(sum.live_out);
  const HloValue& next = df.value(df.UniqueValueAt(df.FirstSlot(Find(*module, "next"))));
  CHECK_FALSE(next.live_out);
  CHECK(df.ValueName(sum) == "sum");
  CHECK(df.ValueName(df.value(df.UniqueValueAt(df.SlotAt(Find(*module, "w"), {0})))) == "w{0}");
}

TEST_CASE("fused computations are embedded: they hold no module values") {
  const auto module = Parse(R"(HloModule f, is_scheduled=true

%fused (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %e = f32[4]{0} exponential(%x)
}

ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  ROOT %f = f32[4]{0} fusion(%a), kind=kLoop, calls=%fused
}
)");
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  CHECK(df.Context(module->FindComputation("fused")) == CallContext::kEmbedded);
  CHECK(df.Context(module->entry) == CallContext::kControlFlow);
  CHECK(df.FirstSlot(Find(*module, "e")) == -1);
  CHECK(df.values().size() == 2);
}

TEST_CASE("a call forwards its callee's root; callee parameters hold the call's operands") {
  const auto module = Parse(R"(HloModule c, is_scheduled=true

%callee (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%x)
}

ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  ROOT %c = f32[4]{0} call(%a), to_apply=%callee
}
)");
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  CHECK(ValueAt(df, *module, "x") == "a{}");
  CHECK(ValueAt(df, *module, "c") == "n{}");
}

TEST_CASE("async-start forwards its operands and the wrapped result; async-done returns it") {
  const auto module = Parse(R"(HloModule async, is_scheduled=true

%wrapped (w.x: f32[4]) -> f32[4] {
  %w.x = f32[4]{0} parameter(0)
  ROOT %w.n = f32[4]{0} negate(%w.x)
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
  CHECK(df.Context(module->FindComputation("wrapped")) == CallContext::kControlFlow);
  CHECK(ValueAt(df, *module, "s", {0, 0}) == "a{}");  // the operand, aliased
  CHECK(ValueAt(df, *module, "s", {1}) == "w.n{}");   // the destination is the wrapped root
  CHECK(ValueAt(df, *module, "s", {2}) == "s{2}");    // the context is the start's own
  CHECK(ValueAt(df, *module, "s") == "s{}");
  CHECK(ValueAt(df, *module, "w.x") == "a{}");
  CHECK(ValueAt(df, *module, "d") == "w.n{}");
}

// Wide tuples, as a training step's outputs and a loop's state are: the uses are the same as a
// scan of every operand and user would find (the walk indexes wide instructions instead).
TEST_CASE("a wide tuple's uses are every operand number; a wide tuple's element readers only") {
  constexpr int kWide = 40;
  std::string text = "HloModule wide\n\nENTRY %main {\n  %a = f32[4]{0} parameter(0)\n";
  std::string state = "(";
  for (int i = 0; i < kWide; ++i) state += std::string(i > 0 ? ", " : "") + "f32[4]{0}";
  state += ")";
  text += "  %p = " + state + " parameter(1)\n";
  for (int i = 0; i < kWide; ++i) {
    const std::string k = std::to_string(i);
    text += "  %g" + k + " = f32[4]{0} get-tuple-element(%p), index=" + k + "\n";
    text += "  %n" + k + " = f32[4]{0} negate(%g" + k + ")\n";
  }
  // The outputs: %a at every third index, the negations elsewhere, then a nested tuple (the
  // root's elements are not all arrays) and the state tuple itself.
  std::string shape = "(";
  std::string operands;
  for (int i = 0; i < kWide; ++i) {
    shape += "f32[4]{0}, ";
    operands += (i % 3 == 0 ? std::string("%a") : "%n" + std::to_string(i)) + ", ";
  }
  text += "  %inner = (f32[4]{0}, f32[4]{0}) tuple(%a, %n1)\n";
  text += "  ROOT %out = " + shape + "(f32[4]{0}, f32[4]{0}), " + state + ") tuple(" + operands +
          "%inner, %p)\n}\n";
  const auto module = Parse(text);
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  const auto uses_of = [&](const HloValue& value) {
    std::vector<std::string> uses;
    for (const HloUse& use : value.uses) {
      uses.push_back(std::string(use.user->name) + "#" + std::to_string(use.operand_number));
    }
    return uses;
  };
  // %a: the root reads it at every third index (one use per operand number, in order) and
  // through %inner, which forwards it.
  std::vector<std::string> a_uses;
  for (int i = 0; i < kWide; i += 3) a_uses.push_back("out#" + std::to_string(i));
  a_uses.push_back("out#" + std::to_string(kWide));
  const HloValue& a = df.value(df.UniqueValueAt(df.FirstSlot(Find(*module, "a"))));
  CHECK(uses_of(a) == a_uses);
  // An element of the state, position by position: the root returns %p (a use), and its
  // get-tuple-element forwards it to the negate that reads it; the other 39
  // get-tuple-elements of %p read other elements.
  const HloValue& p7 = df.value(df.UniqueValueAt(df.SlotAt(Find(*module, "p"), {7})));
  CHECK(uses_of(p7) == std::vector<std::string>{"out#" + std::to_string(kWide + 1), "n7#0"});
  CHECK(ValueAt(df, *module, "out", {kWide, 1}) == "n1{}");
  CHECK(ValueAt(df, *module, "out", {kWide + 1, kWide - 1}) ==
        "p{" + std::to_string(kWide - 1) + "}");
}

}  // namespace
}  // namespace spmdsim::passes
