// The dataflow's propagation to a fixed point: each instruction's value sets from its operands
// (XLA's HloDataflowAnalysis Update* rules), phis at loop and conditional joins.
#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_set>

#include "passes/memory/dataflow_builder.h"

namespace spmdsim::passes {

bool DataflowBuilder::UnionInto(int32_t to, const std::vector<int32_t>& inputs_first,
                                int32_t count) {
  bool changed = false;
  for (int32_t k = 0; k < count; ++k) {
    std::vector<int32_t> merged;
    for (int32_t input : inputs_first) {
      const auto& set = sets_[input + k];
      merged.insert(merged.end(), set.begin(), set.end());
    }
    std::sort(merged.begin(), merged.end());
    merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
    if (merged != sets_[to + k]) {
      sets_[to + k] = std::move(merged);
      changed = true;
    }
  }
  return changed;
}

bool DataflowBuilder::Phi(const HloInstruction* instr,
                          const std::vector<const HloInstruction*>& inputs) {
  bool changed = false;
  const int32_t first = First(instr);
  const int32_t count = Count(instr);
  for (int32_t k = 0; k < count; ++k) {
    const int32_t slot = first + k;
    auto& set = sets_[slot];
    const int32_t current = set.size() == 1 ? set[0] : -1;
    std::vector<int32_t> input_ids;
    for (const HloInstruction* input : inputs) {
      if (k >= Count(input)) continue;
      const auto& input_set = sets_[First(input) + k];
      input_ids.insert(input_ids.end(), input_set.begin(), input_set.end());
    }
    const bool current_defined_here = current >= 0 && a_.values_[current].instruction == instr &&
                                      a_.values_[current].slot == slot;
    if (input_ids.empty()) continue;
    if (input_ids.size() == 1) {
      if (current < 0) {
        set = {input_ids[0]};
        changed = true;
      } else if (current != input_ids[0]) {
        if (current_defined_here) deleted_[current] = true;
        set = {input_ids[0]};
        changed = true;
      }
      continue;
    }
    const bool phi_defined_here = current_defined_here && a_.values_[current].is_phi;
    if (!phi_defined_here) {
      const int32_t phi = NewValue(instr, slot, true);
      set = {phi};
      RegisterPhi(phi, input_ids);
      changed = true;
    } else if (!PhiInputsEqual(current, input_ids)) {
      RegisterPhi(current, input_ids);
      changed = true;
    }
  }
  return changed;
}

bool DataflowBuilder::UpdateParameter(const HloInstruction* param) {
  const HloComputation* computation = param->parent;
  if (ParameterDefinesValues(param)) return false;
  std::vector<const HloInstruction*> inputs;
  bool need_phi = false;
  for (const HloInstruction* caller : computation->callers) {
    switch (caller->opcode) {
      case Opcode::kCall:
      case Opcode::kAsyncStart: {
        const auto n = static_cast<size_t>(param->parameter_number);
        if (n < caller->operands.size()) inputs.push_back(caller->operands[n]);
        break;
      }
      case Opcode::kWhile: {
        if (caller->operands.empty()) break;
        inputs.push_back(caller->operands[0]);
        const HloComputation* body = caller->Called("body");
        if (body != nullptr && body->root != nullptr && body->root != param) {
          inputs.push_back(body->root);
        }
        need_phi = true;
        break;
      }
      case Opcode::kConditional: {
        // Operand j+1 feeds branch j.
        int32_t j = 0;
        for (const ir::CalledComputation& called : caller->called_computations()) {
          if (called.computation == computation &&
              static_cast<size_t>(j + 1) < caller->operands.size()) {
            inputs.push_back(caller->operands[static_cast<size_t>(j + 1)]);
          }
          ++j;
        }
        need_phi = true;
        break;
      }
      case Opcode::kAsyncUpdate:
      case Opcode::kAsyncDone: {
        // The parameter sees element {0, param_number} of the async tuple.
        if (caller->operands.empty()) break;
        const int32_t from =
            a_.SlotAt(caller->operands[0], {0, static_cast<int64_t>(param->parameter_number)});
        if (from < 0) return false;
        return UnionInto(First(param), {from}, std::min(Count(param), a_.slot_span_[from]));
      }
      default:
        break;
    }
  }
  if (inputs.empty()) return false;
  if (need_phi) return Phi(param, inputs);
  std::vector<int32_t> firsts;
  int32_t count = Count(param);
  for (const HloInstruction* input : inputs) {
    if (First(input) < 0) return false;
    firsts.push_back(First(input));
    count = std::min(count, Count(input));
  }
  return UnionInto(First(param), firsts, count);
}

bool DataflowBuilder::UpdateGetTupleElement(const HloInstruction* gte) {
  if (gte->operands.empty()) return false;
  const int32_t from = a_.SlotAt(gte->operands[0], {gte->tuple_index});
  if (from < 0) return false;
  return CopySlots(First(gte), from, std::min(Count(gte), a_.slot_span_[from]));
}

bool DataflowBuilder::UpdateTuple(const HloInstruction* tuple) {
  bool changed = false;
  // Element i's slots follow element i - 1's subtree.
  int32_t to = First(tuple) + 1;
  for (size_t i = 0; i < tuple->operands.size(); to += a_.slot_span_[to], ++i) {
    const HloInstruction* operand = tuple->operands[i];
    if (First(operand) < 0) continue;
    changed |= CopySlots(to, First(operand), std::min(a_.slot_span_[to], Count(operand)));
  }
  return changed;
}

bool DataflowBuilder::CopySubtree(int32_t to, int32_t from) {
  if (to < 0 || from < 0) return false;
  return CopySlots(to, from, std::min(a_.slot_span_[to], a_.slot_span_[from]));
}

bool DataflowBuilder::UpdateAsyncStart(const HloInstruction* start) {
  bool changed = false;
  const int32_t first = First(start);
  for (size_t i = 0; i < start->operands.size(); ++i) {
    const int32_t to = a_.SlotAt(start, {0, static_cast<int64_t>(i)});
    changed |= CopyArrayLeaves(to, First(start->operands[i]));
  }
  const HloComputation* wrapped = start->Called("calls");
  if (wrapped != nullptr && wrapped->root != nullptr && first >= 0) {
    changed |= CopyArrayLeaves(a_.SlotAt(start, {1}), First(wrapped->root));
  }
  return changed;
}

bool DataflowBuilder::CopyArrayLeaves(int32_t to, int32_t from) {
  if (to < 0 || from < 0) return false;
  bool changed = false;
  const int32_t count = std::min(a_.slot_span_[to], a_.slot_span_[from]);
  for (int32_t k = 0; k < count; ++k) {
    if (!a_.slot_shape_[from + k]->IsArray()) continue;
    if (sets_[to + k] != sets_[from + k]) {
      sets_[to + k] = sets_[from + k];
      changed = true;
    }
  }
  return changed;
}

bool DataflowBuilder::UpdateAsyncUpdateOrDone(const HloInstruction* instr) {
  if (instr->operands.empty()) return false;
  const HloInstruction* operand = instr->operands[0];
  const HloComputation* wrapped = instr->Called("calls");
  const HloInstruction* root = wrapped != nullptr ? wrapped->root : nullptr;
  bool changed = false;
  if (instr->opcode == Opcode::kAsyncUpdate) {
    const int32_t first = First(instr);
    const int32_t count = std::min(Count(instr), Count(operand));
    for (int32_t k = 0; k < count; ++k) {
      const int32_t from = First(operand) + k;
      if (!a_.slot_shape_[from]->IsArray()) continue;
      std::vector<int32_t> merged = sets_[from].ToVector();
      if (FrontIndex(from) == 1 && root != nullptr) {
        ShapeIndex index = a_.SlotIndex(from);
        index.erase(index.begin());
        const int32_t root_slot = a_.SlotAt(root, index);
        if (root_slot >= 0) {
          const auto& extra = sets_[root_slot];
          merged.insert(merged.end(), extra.begin(), extra.end());
          std::sort(merged.begin(), merged.end());
          merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
        }
      }
      if (merged != sets_[first + k]) {
        sets_[first + k] = std::move(merged);
        changed = true;
      }
    }
    return changed;
  }
  // async-done: element {1, ...} of the operand (united with the wrapped root) is the output.
  const int32_t from_top = a_.SlotAt(operand, {1});
  if (from_top < 0) return false;
  const int32_t first = First(instr);
  const int32_t count = std::min(Count(instr), a_.slot_span_[from_top]);
  for (int32_t k = 0; k < count; ++k) {
    if (!a_.slot_shape_[from_top + k]->IsArray()) continue;
    std::vector<int32_t> merged = sets_[from_top + k].ToVector();
    if (root != nullptr && k < Count(root)) {
      const auto& extra = sets_[First(root) + k];
      merged.insert(merged.end(), extra.begin(), extra.end());
      std::sort(merged.begin(), merged.end());
      merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
    }
    if (merged != sets_[first + k]) {
      sets_[first + k] = std::move(merged);
      changed = true;
    }
  }
  return changed;
}

bool DataflowBuilder::UpdateInstruction(const HloInstruction* instr) {
  const int32_t first = First(instr);
  const auto operand_first = [&](size_t i) {
    return i < instr->operands.size() ? First(instr->operands[i]) : -1;
  };
  switch (instr->opcode) {
    case Opcode::kBitcast:
    case Opcode::kAddDependency:
    case Opcode::kDomain:
    case Opcode::kOptimizationBarrier:
    case Opcode::kAllReduceDone:
      if (instr->operands.empty()) return false;
      return CopyInstruction(instr, instr->operands[0]);
    case Opcode::kCopy:
      if (instr->operands.empty() || operand_first(0) < 0) return false;
      return CopySlots(first, operand_first(0), std::min(Count(instr), Count(instr->operands[0])),
                       /*skip_first=*/true);
    case Opcode::kGetTupleElement:
      return UpdateGetTupleElement(instr);
    case Opcode::kTuple:
      return UpdateTuple(instr);
    case Opcode::kParameter:
      return UpdateParameter(instr);
    case Opcode::kCall: {
      const HloComputation* callee = instr->Called("to_apply");
      if (callee == nullptr || callee->root == nullptr) return false;
      return CopyInstruction(instr, callee->root);
    }
    case Opcode::kWhile: {
      const HloComputation* body = instr->Called("body");
      std::vector<const HloInstruction*> inputs;
      if (body != nullptr && body->root != nullptr) inputs.push_back(body->root);
      if (!instr->operands.empty()) inputs.push_back(instr->operands[0]);
      return Phi(instr, inputs);
    }
    case Opcode::kConditional: {
      std::vector<const HloInstruction*> inputs;
      for (const ir::CalledComputation& called : instr->called_computations()) {
        if (called.computation != nullptr && called.computation->root != nullptr) {
          inputs.push_back(called.computation->root);
        }
      }
      return Phi(instr, inputs);
    }
    case Opcode::kAsyncStart:
      return UpdateAsyncStart(instr);
    case Opcode::kAsyncUpdate:
    case Opcode::kAsyncDone:
      return UpdateAsyncUpdateOrDone(instr);
    case Opcode::kCopyStart:
      return CopySubtree(a_.SlotAt(instr, {1}), operand_first(0));
    case Opcode::kCopyDone:
      if (instr->operands.empty()) return false;
      return CopySubtree(first, a_.SlotAt(instr->operands[0], {0}));
    case Opcode::kAllGatherStart: {
      bool changed = false;
      for (size_t i = 0; i < instr->operands.size(); ++i) {
        ShapeIndex index = {0};
        if (instr->operands.size() > 1) index.push_back(static_cast<int64_t>(i));
        changed |= CopySubtree(a_.SlotAt(instr, index), operand_first(i));
      }
      return changed;
    }
    case Opcode::kAllGatherDone:
    case Opcode::kCollectivePermuteDone: {
      if (instr->operands.empty()) return false;
      const int32_t from = a_.SlotAt(instr->operands[0], {1});
      if (from < 0) return false;
      return CopySlots(first, from, std::min(Count(instr), a_.slot_span_[from]),
                       /*skip_first=*/instr->shape.IsTuple());
    }
    case Opcode::kCollectivePermuteStart: {
      if (instr->operands.size() > 1 && instr->operands.size() != 4) {
        bool changed = false;
        for (size_t i = 0; i < instr->operands.size(); ++i) {
          changed |= CopySubtree(a_.SlotAt(instr, {0, static_cast<int64_t>(i)}), operand_first(i));
        }
        return changed;
      }
      return CopySubtree(a_.SlotAt(instr, {0}), operand_first(0));
    }
    case Opcode::kSend:
      return CopySubtree(a_.SlotAt(instr, {0}), operand_first(0));
    case Opcode::kRecvDone:
      if (instr->operands.empty()) return false;
      return CopySubtree(a_.SlotAt(instr, {0}), a_.SlotAt(instr->operands[0], {0}));
    default:
      return false;
  }
}

void DataflowBuilder::ComputeOrdinals(const HloComputation* computation, int64_t& ordinal) {
  if (a_.Context(computation) != CallContext::kControlFlow ||
      !ordered_.insert(computation).second) {
    return;
  }
  for (const HloInstruction* instr : computation->instructions) {
    if (instr->opcode == Opcode::kCall || instr->opcode == Opcode::kAsyncStart ||
        instr->opcode == Opcode::kConditional) {
      for (const ir::CalledComputation& called : instr->called_computations()) {
        if (called.computation != nullptr) {
          ComputeOrdinals(called.computation, ordinal);
        }
      }
    } else if (instr->opcode == Opcode::kWhile) {
      if (const HloComputation* c = instr->Called("condition")) {
        ComputeOrdinals(c, ordinal);
      }
      if (const HloComputation* b = instr->Called("body")) ComputeOrdinals(b, ordinal);
    }
    ordinal_[static_cast<size_t>(instr->id)] = ordinal++;
  }
}

void DataflowBuilder::Propagate() {
  ordinal_.assign(a_.first_slot_.size(), 0);
  int64_t ordinal = 0;
  ComputeOrdinals(a_.module_->entry, ordinal);
  for (const HloComputation* computation : a_.control_flow_) ComputeOrdinals(computation, ordinal);

  using Work = std::pair<int64_t, const HloInstruction*>;
  std::priority_queue<Work, std::vector<Work>, std::greater<Work>> worklist;
  std::vector<bool> queued(a_.first_slot_.size(), false);
  // An instruction that defines every value it holds has no value set to update (XLA's
  // UpdateInstructionValueSet does nothing for it either): it is never queued. On a flat graph
  // that is nearly every instruction.
  const auto add = [&](const HloInstruction* instr) {
    if (instr == nullptr || First(instr) < 0) return;
    if (forwards_nothing_[static_cast<size_t>(instr->id)]) return;
    const auto id = static_cast<size_t>(instr->id);
    if (queued[id]) return;
    queued[id] = true;
    worklist.emplace(ordinal_[id], instr);
  };
  for (const HloComputation* computation : a_.control_flow_) {
    for (const HloInstruction* instr : computation->instructions) add(instr);
  }
  while (!worklist.empty()) {
    const HloInstruction* instr = worklist.top().second;
    worklist.pop();
    queued[static_cast<size_t>(instr->id)] = false;
    if (!UpdateInstruction(instr)) continue;
    for (const HloInstruction* user : instr->users) {
      add(user);
      if (user->opcode == Opcode::kConditional) {
        size_t j = 0;
        for (const ir::CalledComputation& called : user->called_computations()) {
          if (j + 1 < user->operands.size() && user->operands[j + 1] == instr &&
              called.computation != nullptr) {
            add(ParameterOf(called.computation, 0));
          }
          ++j;
        }
      } else if (user->opcode == Opcode::kAsyncUpdate || user->opcode == Opcode::kAsyncDone) {
        if (const HloComputation* wrapped = user->Called("calls")) {
          for (const HloInstruction* param : wrapped->parameters) add(param);
        }
      } else if (IsControlFlowCaller(user->opcode)) {
        for (const ir::CalledComputation& called : user->called_computations()) {
          if (called.computation == nullptr) continue;
          for (size_t i = 0; i < user->operands.size(); ++i) {
            if (user->operands[i] == instr) add(ParameterOf(called.computation, i));
          }
        }
      }
    }
    if (instr->is_root || instr == instr->parent->root) {
      for (const HloInstruction* caller : instr->parent->callers) {
        if (caller->opcode == Opcode::kWhile) {
          add(caller);
          if (const HloComputation* body = caller->Called("body")) add(ParameterOf(body, 0));
          if (const HloComputation* cond = caller->Called("condition")) {
            add(ParameterOf(cond, 0));
          }
        } else if (IsControlFlowCaller(caller->opcode)) {
          add(caller);
        }
      }
    }
  }
}

}  // namespace spmdsim::passes
