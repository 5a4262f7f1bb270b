// In-place pairs, elementwise-on-operand, and when an output may reuse a dying operand's buffer.
#include "passes/memory/buffer_sharing_rules.h"

#include <catch2/catch.hpp>

#include "passes/memory/memory_test_modules.h"

namespace spmdsim::passes {
namespace {

using testing::Find;
using testing::Parse;

constexpr std::string_view kModule = R"(HloModule rules, is_scheduled=true

%scale (s.x: f32[64]) -> f32[64] {
  %s.x = f32[64]{0} parameter(0)
  %s.two = f32[] constant(2)
  %s.b = f32[64]{0} broadcast(%s.two), dimensions={}
  ROOT %s.m = f32[64]{0} multiply(%s.x, %s.b)
}

%spread (b.x: f32[]) -> f32[64] {
  %b.x = f32[] parameter(0)
  ROOT %b.b = f32[64]{0} broadcast(%b.x), dimensions={}
}

%transposed (t.x: f32[8,8]) -> f32[8,8] {
  %t.x = f32[8,8]{1,0} parameter(0)
  ROOT %t.t = f32[8,8]{1,0} transpose(%t.x), dimensions={1,0}
}

%add (l: f32[], r: f32[]) -> f32[] {
  %l = f32[] parameter(0)
  %r = f32[] parameter(1)
  ROOT %sum = f32[] add(%l, %r)
}

%scatter_fused (f.o: f32[64], f.i: s32[4,1], f.u: f32[4]) -> f32[64] {
  %f.o = f32[64]{0} parameter(0)
  %f.i = s32[4,1]{1,0} parameter(1)
  %f.u = f32[4]{0} parameter(2)
  ROOT %f.s = f32[64]{0} scatter(%f.o, %f.i, %f.u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
}

ENTRY %main (a: f32[64], m: f32[8,8], c: f32[], idx: s32[4,1], upd: f32[4]) -> f32[64] {
  %a = f32[64]{0} parameter(0)
  %m = f32[8,8]{1,0} parameter(1)
  %c = f32[] parameter(2)
  %idx = s32[4,1]{1,0} parameter(3)
  %upd = f32[4]{0} parameter(4)
  %e = f32[64]{0} exponential(%a)
  %scaled = f32[64]{0} fusion(%e), kind=kLoop, calls=%scale
  %spread.1 = f32[64]{0} fusion(%c), kind=kLoop, calls=%spread
  %tr = f32[8,8]{1,0} fusion(%m), kind=kLoop, calls=%transposed
  %mc = f32[8,8]{0,1} copy(%m)
  %k = f32[64]{0} constant({...})
  %plus = f32[64]{0} add(%k, %scaled)
  %sc = f32[64]{0} fusion(%plus, %idx, %upd), kind=kLoop, calls=%scatter_fused
  %cc = f32[64]{0} custom-call(%sc, %upd), custom_call_target="update", output_to_operand_aliasing={{}: (0, {})}
  ROOT %out = f32[64]{0} add(%cc, %spread.1)
}
)";

TEST_CASE("in-place pairs: dynamic-update-slice, scatter fusion, aliasing custom call") {
  const auto module = Parse(kModule);
  CHECK(InPlaceInputOutputPairs(*Find(*module, "sc")) ==
        std::vector<InPlacePair>{InPlacePair{0, {}, {}}});
  CHECK(InPlaceInputOutputPairs(*Find(*module, "cc")) ==
        std::vector<InPlacePair>{InPlacePair{0, {}, {}}});
  CHECK(InPlaceInputOutputPairs(*Find(*module, "scaled")).empty());
  CHECK(InPlaceInputOutputPairs(*Find(*module, "e")).empty());
}

TEST_CASE("elementwise on an operand") {
  const auto module = Parse(kModule);
  CHECK(IsElementwiseOnOperand(*Find(*module, "e"), 0));
  CHECK(IsElementwiseOnOperand(*Find(*module, "scaled"), 0));  // multiply by a broadcast
  CHECK_FALSE(IsElementwiseOnOperand(*Find(*module, "spread.1"), 0));
  CHECK_FALSE(IsElementwiseOnOperand(*Find(*module, "tr"), 0));
  CHECK(FusionKind(*Find(*module, "scaled")) == "kLoop");
}

TEST_CASE("an output may take a dying operand's buffer only when it is safe") {
  const auto module = Parse(kModule);
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  const auto can_share = [&](std::string_view operand, std::string_view user) {
    const ir::HloInstruction* o = Find(*module, operand);
    const ir::HloInstruction* u = Find(*module, user);
    SharingRuleMemo memo;
    return CanShareOperandBufferWithUser(df, *o, df.FirstSlot(o), *u, df.FirstSlot(u), memo);
  };
  CHECK(can_share("a", "e"));           // elementwise, same shape and layout
  CHECK(can_share("e", "scaled"));      // loop fusion, elementwise on its parameter
  CHECK_FALSE(can_share("m", "tr"));    // a transpose reads other elements
  CHECK_FALSE(can_share("m", "mc"));    // layout changes
  CHECK_FALSE(can_share("k", "plus"));  // constants are never overwritten
  CHECK(can_share("plus", "sc"));       // in-place scatter
  CHECK_FALSE(can_share("idx", "sc"));  // the indices are not the updated operand
}

// XLA:GPU's CanShareBufferHint (xla/service/gpu/buffer_sharing.cc) decides before the shape
// test: a loop fusion may write into an operand of another shape with as many elements of the
// same width when the path is elementwise; an all-reduce and an aliasing async-start work in
// place.
constexpr std::string_view kGpuModule = R"(HloModule gpu_rules, is_scheduled=true

%relu (r.x: f32[64,64]) -> f32[2,32,64] {
  %r.x = f32[64,64]{1,0} parameter(0)
  %r.b = f32[2,32,64]{2,1,0} bitcast(%r.x)
  %r.z = f32[] constant(0)
  %r.zb = f32[2,32,64]{2,1,0} broadcast(%r.z), dimensions={}
  ROOT %r.m = f32[2,32,64]{2,1,0} maximum(%r.b, %r.zb)
}

%transposing (q.x: f32[64,64]) -> f32[64,64] {
  %q.x = f32[64,64]{1,0} parameter(0)
  ROOT %q.t = f32[64,64]{1,0} transpose(%q.x), dimensions={1,0}
}

%sum (l: f32[], r: f32[]) -> f32[] {
  %l = f32[] parameter(0)
  %r = f32[] parameter(1)
  ROOT %s = f32[] add(%l, %r)
}

%wrapped (w.p: f32[4096]) -> f32[4096] {
  %w.p = f32[4096]{0} parameter(0)
  ROOT %w.ar = f32[4096]{0} all-reduce(%w.p), channel_id=1, replica_groups={{0,1}}, to_apply=%sum
}

ENTRY %main (a: f32[64,64], v: f32[4096]) -> f32[4096] {
  %a = f32[64,64]{1,0} parameter(0)
  %v = f32[4096]{0} parameter(1)
  %e = f32[64,64]{1,0} exponential(%a)
  %act = f32[2,32,64]{2,1,0} fusion(%e), kind=kLoop, calls=%relu
  %t = f32[64,64]{1,0} fusion(%e), kind=kLoop, calls=%transposing
  %n = f32[4096]{0} negate(%v)
  %ar = f32[4096]{0} all-reduce(%n), channel_id=2, replica_groups={{0,1}}, to_apply=%sum
  %start = ((f32[4096]{0}), f32[4096]{0}) async-start(%ar), output_to_operand_aliasing={{1}: (0, {})}, calls=%wrapped
  ROOT %done = f32[4096]{0} async-done(%start)
}
)";

TEST_CASE("XLA:GPU's sharing hint: bitcast-shaped loop fusions, all-reduce, async-start") {
  const auto module = Parse(kGpuModule);
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  const auto can_share = [&](std::string_view operand, std::string_view user, Platform platform) {
    const ir::HloInstruction* o = Find(*module, operand);
    const ir::HloInstruction* u = Find(*module, user);
    SharingRuleMemo memo;
    return CanShareOperandBufferWithUser(df, *o, df.FirstSlot(o), *u, df.FirstSlot(u), memo,
                                         platform);
  };
  // Same element count and width, elementwise path through a bitcast: GPU only.
  CHECK(can_share("e", "act", Platform::kGpu));
  CHECK_FALSE(can_share("e", "act", Platform::kCpu));
  // A transpose reads other elements: never.
  CHECK_FALSE(can_share("e", "t", Platform::kGpu));
  // NCCL all-reduce works in place on GPU; by the default rules it is not elementwise.
  CHECK(can_share("n", "ar", Platform::kGpu));
  CHECK(can_share("n", "ar", Platform::kTpu));  // as XLA:TPU's assignments show
  CHECK_FALSE(can_share("n", "ar", Platform::kCpu));
  // The async-start's output {1} is its operand's buffer (output_to_operand_aliasing).
  CHECK(InPlaceInputOutputPairs(*Find(*module, "start")) ==
        std::vector<InPlacePair>{InPlacePair{0, {}, {1}}});
}

// Thirty levels of fused computations, each holding two fusions of the level below: a walk that
// follows every path is 2^30 visits (it hung); the memo makes it one visit per computation.
TEST_CASE("in-place pairs of fusions nested as a DAG are found once per computation") {
  std::string text = "HloModule dag\n\n";
  constexpr int kLevels = 30;
  for (int i = 0; i < kLevels; ++i) {
    text +=
        "%c" + std::to_string(i) + " (p: f32[64]) -> f32[64] {\n  %p = f32[64]{0} parameter(0)\n";
    if (i == 0) {
      text +=
          "  %u = f32[4]{0} constant({1, 2, 3, 4})\n  %z = s32[] constant(0)\n"
          "  ROOT %r = f32[64]{0} dynamic-update-slice(%p, %u, %z)\n}\n\n";
    } else {
      const std::string below = "%c" + std::to_string(i - 1);
      text += "  %u0 = f32[64]{0} fusion(%p), kind=kLoop, calls=" + below +
              "\n  ROOT %u1 = f32[64]{0} fusion(%u0), kind=kLoop, calls=" + below + "\n}\n\n";
    }
  }
  text +=
      "ENTRY %main (a: f32[64]) -> f32[64] {\n  %a = f32[64]{0} parameter(0)\n"
      "  ROOT %x = f32[64]{0} fusion(%a), kind=kLoop, calls=%c" +
      std::to_string(kLevels - 1) + "\n}\n";
  const auto module = Parse(text);
  SharingRuleMemo memo;
  // The innermost dynamic-update-slice writes into the entry fusion's parameter 0.
  CHECK(InPlaceInputOutputPairs(*module->entry->root, memo) ==
        std::vector<InPlacePair>{InPlacePair{0, {}, {}}});
  CHECK(memo.in_place.size() <= 3 * kLevels);
  // Every level passes its parameter on elementwise, down to the dynamic-update-slice's operand 0.
  CHECK(IsElementwiseOnOperand(*module->entry->root, 0, memo));
  CHECK(memo.fused_elementwise_on_parameter.size() <= kLevels);
}

}  // namespace
}  // namespace spmdsim::passes
