// Where a site's buffer values come from: the role a buffer plays (XLA Label's words), the
// operand a collective's output moves, and values computed from constants alone.
#include <unordered_set>
#include <vector>

#include "passes/memory/buffer_dataflow_analysis.h"
#include "passes/rng/rng_site_finder.h"
#include "passes/rng/rng_value_flow.h"

namespace spmdsim::passes::rng_internal {

SiteBufferRole BufferRole(const HloInstruction* instr, const HloInstruction* anchor,
                          const HloComputation* home) {
  switch (instr->opcode) {
    case Opcode::kAllGather:
    case Opcode::kAllGatherStart:
    case Opcode::kAllGatherDone:
      return SiteBufferRole::kAllGatheredHashOutputs;
    case Opcode::kCollectivePermute:
    case Opcode::kCollectivePermuteStart:
    case Opcode::kCollectivePermuteDone:
      return SiteBufferRole::kExchangedCounters;
    default:
      break;
  }
  // Collectives are where XLA put them (an async pair wraps its own computation); anything
  // else outside the anchor's computation is the loop's.
  if (instr->parent != home) return SiteBufferRole::kLoopTemporaries;
  switch (instr->opcode) {
    case Opcode::kConcatenate:
      return SiteBufferRole::kConcatenatedBits;
    case Opcode::kCustomCall:
    case Opcode::kCall:
      return SiteBufferRole::kHashOutputsOrBits;
    default:
      break;
  }
  if (instr->shape.IsArray() && instr->shape.element_type() == PrimitiveType::kPred)
    return SiteBufferRole::kMask;
  const HloInstruction* init = anchor->opcode == Opcode::kWhile && !anchor->operands.empty()
                                   ? LoopInitTuple(anchor->operands[0])
                                   : nullptr;
  for (const HloInstruction* user : instr->users) {
    if (user->opcode != Opcode::kTuple) continue;
    if (user == init) return SiteBufferRole::kLoopStateCounters;
    for (const HloInstruction* tuple_user : user->users) {
      if (tuple_user == anchor) return SiteBufferRole::kLoopStateCounters;
    }
  }
  if (instr->metadata().op_name.find("iota") != std::string_view::npos ||
      instr->metadata().op_name.find("split") != std::string_view::npos) {
    return SiteBufferRole::kCounters;
  }
  return SiteBufferRole::kDerived;
}

// The operand whose values the collective's output at `index` holds: an all-gather,
// all-to-all or collective-permute (element k of a combined one is operand k's), the output
// half {1, k} of its async start, or the done's element k. Null for anything else.
const HloInstruction* MovedOperand(const HloInstruction& instr, const ShapeIndex& index) {
  const HloInstruction* collective = &instr;
  ShapeIndex at = index;
  const bool done = instr.opcode == Opcode::kAllGatherDone ||
                    instr.opcode == Opcode::kCollectivePermuteDone ||
                    instr.opcode == Opcode::kAsyncDone;
  if (done) {
    if (instr.operands.empty() || !IsCollectiveStart(*instr.operands[0])) return nullptr;
    collective = instr.operands[0];
  } else if (IsCollectiveStart(instr)) {
    if (at.empty() || at[0] != 1) return nullptr;  // {0, k} is the operand itself
    at.erase(at.begin());
  } else if (!IsMovingCollective(instr.opcode)) {
    return nullptr;
  }
  const size_t k = at.empty() ? 0 : static_cast<size_t>(std::max<int64_t>(at[0], 0));
  const HloInstruction* operand = collective->operands.size() == 1  ? collective->operands[0]
                                  : k < collective->operands.size() ? collective->operands[k]
                                                                    : nullptr;
  // The collective an async pair wraps reads the async-start's operands as its parameters.
  if (operand != nullptr && operand->opcode == Opcode::kParameter && operand->parent != nullptr &&
      operand->parent->callers.size() == 1 &&
      operand->parent->callers[0]->opcode == Opcode::kAsyncStart) {
    const HloInstruction* start = operand->parent->callers[0];
    const int64_t n = operand->parameter_number;
    operand =
        n >= 0 && n < static_cast<int64_t>(start->operands.size()) ? start->operands[n] : nullptr;
  }
  return operand;
}

// The zero buffer XLA's SPMD partitioner creates to concatenate along a sharded dimension
// (CreateZero; each device then dynamic-update-slices its pieces into it in place and all-reduces
// it: older XLA's SpmdPartitioningVisitor::HandleConcatenate), and the copy that makes it
// writable, are computed from constants alone: the buffer is the site's bits all the same.
bool FromConstantsOnly(const HloInstruction* instr) {
  std::vector<const HloInstruction*> pending{instr};
  std::unordered_set<const HloInstruction*> seen{instr};
  while (!pending.empty()) {
    const HloInstruction* at = pending.back();
    pending.pop_back();
    if (at->opcode == Opcode::kConstant) continue;
    switch (at->opcode) {
      case Opcode::kBroadcast:
      case Opcode::kCopy:
      case Opcode::kBitcast:
      case Opcode::kReshape:
      case Opcode::kConvert:
      case Opcode::kFusion:
        break;
      default:
        return false;
    }
    if (at->operands.empty()) return false;
    for (const HloInstruction* operand : at->operands) {
      if (seen.insert(operand).second) {
        if (seen.size() > kMaxConstantWalk) return false;
        pending.push_back(operand);
      }
    }
  }
  return true;
}

}  // namespace spmdsim::passes::rng_internal
