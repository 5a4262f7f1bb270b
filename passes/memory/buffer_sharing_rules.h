// When an instruction's output may or must live in the buffer of one of its operands, by XLA's
// rules (HloDataflowAnalysis::GetInPlaceInputOutputPairs, CanShareOperandBufferWithUser,
// HloInstruction::IsElementwiseOnOperand):
//
// - *must* (in-place operations): dynamic-update-slice writes into operand 0, scatter into its
//   scatter operands, all-reduce-start into its operands; a fusion whose root is one of these
//   (through tuples and bitcasts) on a fusion parameter; custom calls, fusions and async-starts
//   with an `output_to_operand_aliasing={{out}: (operand, {index})}` attribute.
// - *may* (the heap simulator reuses a dying operand's buffer): the shapes and layouts are equal
//   and the user is elementwise on that operand (loop fusions: every use of the fused parameter
//   is elementwise), or the user is a while, conditional, or an in-place operation on that
//   operand.
// - a backend's hint decides before the shape test (HloDataflowAnalysis's can_share_buffer):
//   XLA:GPU's CanShareBufferHint (xla/service/gpu/buffer_sharing.cc) lets a fusion reuse an
//   operand of another shape with as many elements of the same width when the path from the
//   fused parameter to the output is elementwise or bitcasts (a DUS root, a scatter root and a
//   reduction hero are the exceptions), an all-reduce work in place, and a cuBLASLt matmul with
//   beta != 0 overwrite its bias. XLA:CPU passes no hint; XLA:TPU's (libtpu) is not public: its
//   assignments show an all-reduce in its operand's buffer, and the default rules otherwise.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/hlo.h"
#include "passes/memory/buffer_dataflow_analysis.h"
#include "passes/memory/operand_numbers.h"
#include "passes/memory/platform_profile.h"

namespace spmdsim::passes {

struct InPlacePair {
  int64_t operand_number = 0;
  ShapeIndex operand_index;
  ShapeIndex output_index;
  bool operator==(const InPlacePair&) const = default;
};

// What the rules below found about fusions, each worked out once. Without it a fusion nested
// in fusions is walked once per path that reaches it: exponential in the nesting when fused
// computations share callees. An analysis keeps one for its module; the overloads without one
// use a fresh one per call.
struct SharingRuleMemo {
  std::unordered_map<const ir::HloInstruction*, std::vector<InPlacePair>> in_place;
  std::unordered_map<const ir::HloComputation*, bool> fused_elementwise;
  std::map<std::pair<const ir::HloComputation*, int64_t>, bool> fused_elementwise_on_parameter;
  // XLA:GPU's fusion hint by (fusion, operand number, output index).
  std::map<std::tuple<const ir::HloInstruction*, int64_t, ShapeIndex>, bool> gpu_fusion_hint;
  // Which operand numbers read an operand, a wide user's indexed once: the buffer assignment
  // asks about each pair of a combined all-reduce's thousands of operands and results.
  OperandNumbers operand_numbers;
};

// The operand buffers an instruction writes its output into.
std::vector<InPlacePair> InPlaceInputOutputPairs(const ir::HloInstruction& instruction);
const std::vector<InPlacePair>& InPlaceInputOutputPairs(const ir::HloInstruction& instruction,
                                                        SharingRuleMemo& memo);

// Elementwise on operand `operand_number`: dynamic-update-slice only on operand 0, fusions when
// every use of the fused parameter up to the root is elementwise.
bool IsElementwiseOnOperand(const ir::HloInstruction& instruction, int64_t operand_number);
bool IsElementwiseOnOperand(const ir::HloInstruction& instruction, int64_t operand_number,
                            SharingRuleMemo& memo);

// The fusion kind written as `kind=kLoop` ("kLoop", "kInput", "kOutput", "kCustom"), or empty.
std::string_view FusionKind(const ir::HloInstruction& instruction);

// May `user`'s output at `user_slot` reuse the buffer of `operand` at `operand_slot`
// (HloDataflowAnalysis::CanShareOperandBufferWithUser)? Both slots are dataflow slots.
// `platform` picks the backend's hint.
bool CanShareOperandBufferWithUser(const DataflowAnalysis& dataflow,
                                   const ir::HloInstruction& operand, int32_t operand_slot,
                                   const ir::HloInstruction& user, int32_t user_slot,
                                   SharingRuleMemo& memo, Platform platform = Platform::kCpu);

// The operands CanShareOperandBufferWithUser may accept for `user`'s output at `user_slot`, so
// that a wide user (a combined all-reduce of thousands of operands) is not asked about every
// pair of its operands and results: nullopt where the rule depends on the operand (fusions,
// while, conditional, call, elementwise operations, XLA:GPU's cholesky), otherwise the operand
// instructions it may accept at any of their slots (a superset: those holding the in-place
// pairs' values, the operand a collective or an in-place operation writes over; often none).
std::optional<std::vector<const ir::HloInstruction*>> OperandsThatMayShare(
    const DataflowAnalysis& dataflow, const ir::HloInstruction& user, int32_t user_slot,
    SharingRuleMemo& memo, Platform platform = Platform::kCpu);

}  // namespace spmdsim::passes
