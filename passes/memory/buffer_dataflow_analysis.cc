#include "passes/memory/buffer_dataflow_analysis.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_set>

namespace spmdsim::passes {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;
using ir::Shape;

std::string ShapeIndexToString(const ShapeIndex& index) {
  std::string out = "{";
  for (size_t i = 0; i < index.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(index[i]);
  }
  return out + "}";
}

bool MayUseOperandValue(const ShapeIndex& index, const HloInstruction& user) {
  switch (user.opcode) {
    case Opcode::kGetTupleElement:
    case Opcode::kCopy:
      return index.empty();
    case Opcode::kDomain:
    case Opcode::kTuple:
      return false;
    default:
      return true;
  }
}

CallContext DataflowAnalysis::Context(const HloComputation* computation) const {
  auto it = context_.find(computation);
  return it == context_.end() ? CallContext::kNone : it->second;
}

int32_t DataflowAnalysis::FirstSlot(const HloInstruction* instruction) const {
  const auto id = static_cast<size_t>(instruction->id);
  return id < first_slot_.size() ? first_slot_[id] : -1;
}

int32_t DataflowAnalysis::SlotCount(const HloInstruction* instruction) const {
  const int32_t first = FirstSlot(instruction);
  return first < 0 ? 0 : slot_span_[first];
}

int32_t DataflowAnalysis::ChildSlot(int32_t slot, int64_t k) const {
  int32_t child = slot + 1;
  for (int64_t i = 0; i < k; ++i) child += slot_span_[child];
  return child;
}

int32_t DataflowAnalysis::SlotAt(const HloInstruction* instruction, const ShapeIndex& index) const {
  int32_t slot = FirstSlot(instruction);
  if (slot < 0) return -1;
  for (int64_t k : index) {
    const Shape& shape = *slot_shape_[slot];
    if (!shape.IsTuple() || k < 0 || k >= static_cast<int64_t>(shape.tuple_shapes().size())) {
      return -1;
    }
    slot = ChildSlot(slot, k);
  }
  return slot;
}

ShapeIndex DataflowAnalysis::SlotIndex(int32_t slot) const {
  ShapeIndex index;
  for (int32_t s = slot; slot_parent_[s] >= 0; s = slot_parent_[s]) {
    index.push_back(slot_element_[s]);
  }
  std::reverse(index.begin(), index.end());
  return index;
}

int32_t DataflowAnalysis::UniqueValueAt(int32_t slot) const {
  if (slot < 0) return -1;
  const auto& set = value_sets_[slot];
  return set.size() == 1 ? set[0] : -1;
}

std::string DataflowAnalysis::ValueName(const HloValue& value) const {
  std::string name(value.instruction->name);
  if (value.instruction->shape.IsTuple()) name += ShapeIndexToString(SlotIndex(value.slot));
  return name;
}

// Builds a DataflowAnalysis: call graph, slots, initial values, propagation to a fixed point,
// phi simplification, positions and uses.
class DataflowBuilder {
 public:
  explicit DataflowBuilder(const ir::HloModule& module) { a_.module_ = &module; }

  DataflowAnalysis Build() {
    const ir::HloModule& module = *a_.module_;
    if (module.entry == nullptr) return std::move(a_);
    ComputeCallGraph();
    AssignSlots();
    for (const HloComputation* computation : a_.control_flow_) {
      for (const HloInstruction* instr : computation->instructions) DefineValues(instr);
    }
    Propagate();
    OptimizePhis();
    Compact();
    ComputePositionsAndUses();
    return std::move(a_);
  }

 private:
  // --- Call graph ---------------------------------------------------------------------------

  static bool IsControlFlowCaller(Opcode opcode) {
    return opcode == Opcode::kWhile || opcode == Opcode::kCall || opcode == Opcode::kConditional ||
           opcode == Opcode::kAsyncStart || opcode == Opcode::kAsyncUpdate ||
           opcode == Opcode::kAsyncDone;
  }

  void ComputeCallGraph() {
    const HloComputation* entry = a_.module_->entry;
    std::unordered_set<const HloComputation*> visited;
    // Post order: a computation follows everything it calls through control flow. The parser
    // bounds the recursion (an acyclic call graph at most ir::kMaxCallNesting deep).
    std::function<void(const HloComputation*)> visit = [&](const HloComputation* computation) {
      if (!visited.insert(computation).second) return;
      a_.context_[computation] = CallContext::kControlFlow;
      for (const HloInstruction* instr : computation->instructions) {
        for (const ir::CalledComputation& called : instr->called_computations()) {
          if (called.computation == nullptr) continue;
          if (IsControlFlowCaller(instr->opcode)) {
            visit(called.computation);
          } else {
            MarkEmbedded(called.computation);
          }
        }
      }
      a_.control_flow_.push_back(computation);
    };
    visit(entry);
  }

  void MarkEmbedded(const HloComputation* computation) {
    auto [it, inserted] = a_.context_.emplace(computation, CallContext::kEmbedded);
    if (!inserted) return;
    for (const HloInstruction* instr : computation->instructions) {
      for (const ir::CalledComputation& called : instr->called_computations()) {
        if (called.computation != nullptr) MarkEmbedded(called.computation);
      }
    }
  }

  // --- Slots --------------------------------------------------------------------------------

  void AddSlots(const HloInstruction* instr, const Shape& shape, int32_t parent, int32_t element) {
    const auto slot = static_cast<int32_t>(a_.slot_instr_.size());
    a_.slot_instr_.push_back(instr);
    a_.slot_shape_.push_back(&shape);
    a_.slot_parent_.push_back(parent);
    a_.slot_element_.push_back(element);
    a_.slot_span_.push_back(1);
    if (shape.IsTuple()) {
      int32_t k = 0;
      for (const Shape& element_shape : shape.tuple_shapes()) {
        AddSlots(instr, element_shape, slot, k++);
      }
      a_.slot_span_[slot] = static_cast<int32_t>(a_.slot_instr_.size()) - slot;
    }
  }

  void AssignSlots() {
    int64_t max_id = -1;
    for (const HloComputation* computation : a_.module_->computations) {
      for (const HloInstruction* instr : computation->instructions) {
        max_id = std::max<int64_t>(max_id, instr->id);
      }
    }
    a_.first_slot_.assign(static_cast<size_t>(max_id + 1), -1);
    for (const HloComputation* computation : a_.control_flow_) {
      for (const HloInstruction* instr : computation->instructions) {
        a_.first_slot_[static_cast<size_t>(instr->id)] =
            static_cast<int32_t>(a_.slot_instr_.size());
        AddSlots(instr, instr->shape, -1, 0);
      }
    }
    a_.value_sets_.resize(a_.slot_instr_.size());
  }

  int32_t First(const HloInstruction* instr) const { return a_.FirstSlot(instr); }
  int32_t Count(const HloInstruction* instr) const { return a_.SlotCount(instr); }

  // --- Values -------------------------------------------------------------------------------

  int32_t NewValue(const HloInstruction* instr, int32_t slot, bool is_phi) {
    HloValue value;
    value.id = static_cast<int32_t>(a_.values_.size());
    value.instruction = instr;
    value.slot = slot;
    value.is_phi = is_phi;
    a_.values_.push_back(std::move(value));
    deleted_.push_back(false);
    return a_.values_.back().id;
  }

  void DefineAt(const HloInstruction* instr, int32_t slot) {
    a_.value_sets_[slot] = {NewValue(instr, slot, false)};
  }

  // Defines a value at every slot for which `pred(slot)` holds.
  template <typename Pred>
  void DefineWhere(const HloInstruction* instr, Pred pred) {
    const int32_t first = First(instr);
    for (int32_t s = first; s < first + Count(instr); ++s) {
      if (pred(s)) DefineAt(instr, s);
    }
  }

  bool IsTupleSlot(int32_t slot) const { return a_.slot_shape_[slot]->IsTuple(); }
  // First element of the slot's index ({} -> -1).
  int64_t FrontIndex(int32_t slot) const {
    int32_t s = slot;
    if (a_.slot_parent_[s] < 0) return -1;
    while (a_.slot_parent_[a_.slot_parent_[s]] >= 0) s = a_.slot_parent_[s];
    return a_.slot_element_[s];
  }

  bool ParameterDefinesValues(const HloInstruction* instr) const {
    const HloComputation* computation = instr->parent;
    if (computation == a_.module_->entry) return true;
    for (const HloInstruction* caller : computation->callers) {
      if (IsControlFlowCaller(caller->opcode)) return false;
    }
    return true;
  }

  void DefineValues(const HloInstruction* instr) {
    const int32_t first = First(instr);
    const auto all = [](int32_t) { return true; };
    switch (instr->opcode) {
      case Opcode::kBitcast:
      case Opcode::kAddDependency:
      case Opcode::kWhile:
      case Opcode::kCall:
      case Opcode::kConditional:
      case Opcode::kGetTupleElement:
      case Opcode::kDomain:
      case Opcode::kOptimizationBarrier:
      case Opcode::kCopyDone:
      case Opcode::kAllReduceDone:
        return;
      case Opcode::kParameter:
        if (ParameterDefinesValues(instr)) DefineWhere(instr, all);
        return;
      case Opcode::kCopy:
      case Opcode::kTuple:
        DefineAt(instr, first);
        return;
      case Opcode::kAsyncStart:
        DefineWhere(instr, [&](int32_t s) { return IsTupleSlot(s) || FrontIndex(s) > 1; });
        return;
      case Opcode::kAsyncUpdate:
      case Opcode::kAsyncDone:
        DefineWhere(instr, [&](int32_t s) { return IsTupleSlot(s); });
        return;
      case Opcode::kCopyStart:
        DefineWhere(instr, [&](int32_t s) {
          return s == first || (a_.slot_parent_[s] == first &&
                                (a_.slot_element_[s] == 0 || a_.slot_element_[s] == 2));
        });
        return;
      case Opcode::kAllGatherStart:
        DefineWhere(instr, [&](int32_t s) { return IsTupleSlot(s) || FrontIndex(s) == 1; });
        return;
      case Opcode::kAllGatherDone:
      case Opcode::kCollectivePermuteDone:
        if (instr->shape.IsTuple()) DefineAt(instr, first);
        return;
      case Opcode::kCollectivePermuteStart: {
        const bool in_place = instr->operands.size() == 4;
        DefineWhere(instr, [&](int32_t s) {
          if (s == first) return true;
          const int32_t parent = a_.slot_parent_[s];
          if (parent == first) return a_.slot_element_[s] >= 1;
          if (parent >= 0 && a_.slot_parent_[parent] == first && a_.slot_element_[parent] == 1) {
            return in_place ? instr->operands[1]->shape.IsTuple() : instr->operands.size() > 1;
          }
          return false;
        });
        return;
      }
      case Opcode::kRecvDone:
        DefineWhere(instr, [&](int32_t s) {
          return s == first || (a_.slot_parent_[s] == first && a_.slot_element_[s] == 1);
        });
        return;
      case Opcode::kSend:
        DefineWhere(instr, [&](int32_t s) {
          return s == first || (a_.slot_parent_[s] == first && a_.slot_element_[s] >= 1);
        });
        return;
      default:
        DefineWhere(instr, all);
        return;
    }
  }

  // --- Propagation --------------------------------------------------------------------------

  // Copies the value sets of `count` slots starting at `from` to `to`; true when any changed.
  bool CopySlots(int32_t to, int32_t from, int32_t count, bool skip_first = false) {
    bool changed = false;
    for (int32_t k = skip_first ? 1 : 0; k < count; ++k) {
      if (a_.value_sets_[to + k] != a_.value_sets_[from + k]) {
        a_.value_sets_[to + k] = a_.value_sets_[from + k];
        changed = true;
      }
    }
    return changed;
  }

  // The whole value-set tree of `from` copied onto `to` where the shapes have the same slots.
  bool CopyInstruction(const HloInstruction* to, const HloInstruction* from) {
    const int32_t count = std::min(Count(to), Count(from));
    if (First(from) < 0) return false;
    return CopySlots(First(to), First(from), count);
  }

  bool UnionInto(int32_t to, const std::vector<int32_t>& inputs_first, int32_t count) {
    bool changed = false;
    for (int32_t k = 0; k < count; ++k) {
      std::vector<int32_t> merged;
      for (int32_t input : inputs_first) {
        const auto& set = a_.value_sets_[input + k];
        merged.insert(merged.end(), set.begin(), set.end());
      }
      std::sort(merged.begin(), merged.end());
      merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
      if (merged != a_.value_sets_[to + k]) {
        a_.value_sets_[to + k] = std::move(merged);
        changed = true;
      }
    }
    return changed;
  }

  // Phi: merges the value sets of `inputs` (instructions shaped like `instr`) slot by slot.
  bool Phi(const HloInstruction* instr, const std::vector<const HloInstruction*>& inputs) {
    bool changed = false;
    const int32_t first = First(instr);
    const int32_t count = Count(instr);
    for (int32_t k = 0; k < count; ++k) {
      const int32_t slot = first + k;
      auto& set = a_.value_sets_[slot];
      const int32_t current = set.size() == 1 ? set[0] : -1;
      std::vector<int32_t> input_ids;
      for (const HloInstruction* input : inputs) {
        if (k >= Count(input)) continue;
        const auto& input_set = a_.value_sets_[First(input) + k];
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

  bool UpdateParameter(const HloInstruction* param) {
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

  bool UpdateGetTupleElement(const HloInstruction* gte) {
    if (gte->operands.empty()) return false;
    const int32_t from = a_.SlotAt(gte->operands[0], {gte->tuple_index});
    if (from < 0) return false;
    return CopySlots(First(gte), from, std::min(Count(gte), a_.slot_span_[from]));
  }

  bool UpdateTuple(const HloInstruction* tuple) {
    bool changed = false;
    const int32_t first = First(tuple);
    for (size_t i = 0; i < tuple->operands.size(); ++i) {
      const int32_t to = a_.ChildSlot(first, static_cast<int64_t>(i));
      const HloInstruction* operand = tuple->operands[i];
      if (First(operand) < 0) continue;
      changed |= CopySlots(to, First(operand), std::min(a_.slot_span_[to], Count(operand)));
    }
    return changed;
  }

  // Copies operand slot `from` (and its subtree) to instruction slot `to` (and its subtree).
  bool CopySubtree(int32_t to, int32_t from) {
    if (to < 0 || from < 0) return false;
    return CopySlots(to, from, std::min(a_.slot_span_[to], a_.slot_span_[from]));
  }

  bool UpdateAsyncStart(const HloInstruction* start) {
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

  // Copies the value sets of array-shaped slots of the subtree at `from` onto `to`.
  bool CopyArrayLeaves(int32_t to, int32_t from) {
    if (to < 0 || from < 0) return false;
    bool changed = false;
    const int32_t count = std::min(a_.slot_span_[to], a_.slot_span_[from]);
    for (int32_t k = 0; k < count; ++k) {
      if (!a_.slot_shape_[from + k]->IsArray()) continue;
      if (a_.value_sets_[to + k] != a_.value_sets_[from + k]) {
        a_.value_sets_[to + k] = a_.value_sets_[from + k];
        changed = true;
      }
    }
    return changed;
  }

  bool UpdateAsyncUpdateOrDone(const HloInstruction* instr) {
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
        std::vector<int32_t> merged = a_.value_sets_[from];
        if (FrontIndex(from) == 1 && root != nullptr) {
          ShapeIndex index = a_.SlotIndex(from);
          index.erase(index.begin());
          const int32_t root_slot = a_.SlotAt(root, index);
          if (root_slot >= 0) {
            const auto& extra = a_.value_sets_[root_slot];
            merged.insert(merged.end(), extra.begin(), extra.end());
            std::sort(merged.begin(), merged.end());
            merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
          }
        }
        if (merged != a_.value_sets_[first + k]) {
          a_.value_sets_[first + k] = std::move(merged);
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
      std::vector<int32_t> merged = a_.value_sets_[from_top + k];
      if (root != nullptr && k < Count(root)) {
        const auto& extra = a_.value_sets_[First(root) + k];
        merged.insert(merged.end(), extra.begin(), extra.end());
        std::sort(merged.begin(), merged.end());
        merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
      }
      if (merged != a_.value_sets_[first + k]) {
        a_.value_sets_[first + k] = std::move(merged);
        changed = true;
      }
    }
    return changed;
  }

  bool UpdateInstruction(const HloInstruction* instr) {
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
            changed |=
                CopySubtree(a_.SlotAt(instr, {0, static_cast<int64_t>(i)}), operand_first(i));
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

  void ComputeOrdinals(const HloComputation* computation, int64_t& ordinal) {
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

  void Propagate() {
    ordinal_.assign(a_.first_slot_.size(), 0);
    int64_t ordinal = 0;
    ComputeOrdinals(a_.module_->entry, ordinal);
    for (const HloComputation* computation : a_.control_flow_)
      ComputeOrdinals(computation, ordinal);

    using Work = std::pair<int64_t, const HloInstruction*>;
    std::priority_queue<Work, std::vector<Work>, std::greater<Work>> worklist;
    std::vector<bool> queued(a_.first_slot_.size(), false);
    const auto add = [&](const HloInstruction* instr) {
      if (instr == nullptr || First(instr) < 0) return;
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

  static const HloInstruction* ParameterOf(const HloComputation* computation, size_t n) {
    return n < computation->parameters.size() ? computation->parameters[n] : nullptr;
  }

  // --- Phi graph (XLA's PhiGraph): phis whose inputs reduce to one value are replaced by it ---

  struct PhiNode {
    bool is_phi = false;
    bool dead = false;
    int32_t value_id = 0;
    std::vector<int32_t> operands;  // node indices
    std::vector<int32_t> users;
  };

  int32_t NodeFor(int32_t value_id) {
    auto it = node_of_value_.find(value_id);
    if (it != node_of_value_.end()) return it->second;
    const auto node = static_cast<int32_t>(nodes_.size());
    nodes_.push_back(PhiNode{false, false, value_id, {}, {}});
    node_of_value_[value_id] = node;
    values_of_node_[node].push_back(value_id);
    return node;
  }

  void RegisterPhi(int32_t phi, const std::vector<int32_t>& inputs) {
    const int32_t node = NodeFor(phi);
    nodes_[node].is_phi = true;
    nodes_[node].operands.clear();
    for (int32_t input : inputs) {
      const int32_t input_node = NodeFor(input);
      nodes_[node].operands.push_back(input_node);
    }
  }

  bool PhiInputsEqual(int32_t phi, const std::vector<int32_t>& inputs) {
    std::vector<int32_t> existing;
    for (int32_t operand : nodes_[NodeFor(phi)].operands) {
      existing.push_back(nodes_[operand].value_id);
    }
    std::vector<int32_t> wanted = inputs;
    std::sort(existing.begin(), existing.end());
    existing.erase(std::unique(existing.begin(), existing.end()), existing.end());
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    return existing == wanted;
  }

  void ReplaceNodeWith(int32_t node, int32_t replace) {
    if (nodes_[node].dead) return;
    if (nodes_[replace].dead) {
      ReplaceNodeWith(node, node_of_value_[nodes_[replace].value_id]);
      return;
    }
    for (int32_t user : nodes_[node].users) {
      std::replace(nodes_[user].operands.begin(), nodes_[user].operands.end(), node, replace);
    }
    for (int32_t operand : nodes_[node].operands) {
      std::replace(nodes_[operand].users.begin(), nodes_[operand].users.end(), node, replace);
    }
    for (int32_t value_id : values_of_node_[node]) node_of_value_[value_id] = replace;
    auto& moved = values_of_node_[node];
    auto& target = values_of_node_[replace];
    target.insert(target.end(), moved.begin(), moved.end());
    moved.clear();
    nodes_[node].dead = true;
  }

  void OptimizePhiGraph() {
    for (size_t n = 0; n < nodes_.size(); ++n) {
      for (int32_t operand : nodes_[n].operands) {
        nodes_[operand].users.push_back(static_cast<int32_t>(n));
      }
    }
    bool changed = true;
    while (changed) {
      changed = false;
      std::unordered_set<int32_t> checked_for_closure;
      for (size_t n = 0; n < nodes_.size(); ++n) {
        const auto node = static_cast<int32_t>(n);
        if (!nodes_[node].is_phi || nodes_[node].dead) continue;
        auto& operands = nodes_[node].operands;
        operands.erase(std::remove(operands.begin(), operands.end(), node), operands.end());
        auto& users = nodes_[node].users;
        users.erase(std::remove(users.begin(), users.end(), node), users.end());
        if (operands.empty()) continue;
        const int32_t first = operands[0];
        if (std::all_of(operands.begin(), operands.end(),
                        [first](int32_t o) { return o == first; })) {
          ReplaceNodeWith(node, first);
          changed = true;
          continue;
        }
        if (checked_for_closure.count(node)) continue;
        std::unordered_set<int32_t> workset;
        std::vector<int32_t> workset_order;
        std::queue<int32_t> worklist;
        int32_t non_phi = -1;
        bool several = false;
        worklist.push(node);
        while (!worklist.empty()) {
          const int32_t todo = worklist.front();
          worklist.pop();
          if (workset.count(todo)) continue;
          checked_for_closure.insert(todo);
          workset.insert(todo);
          workset_order.push_back(todo);
          for (int32_t operand : nodes_[todo].operands) worklist.push(operand);
          if (!nodes_[todo].is_phi) {
            if (non_phi >= 0 && non_phi != todo) {
              several = true;
              break;
            }
            non_phi = todo;
          }
        }
        if (several || non_phi < 0) continue;
        for (int32_t member : workset_order) {
          if (!nodes_[member].is_phi) continue;
          ReplaceNodeWith(member, non_phi);
          changed = true;
        }
      }
    }
  }

  void OptimizePhis() {
    if (nodes_.empty()) return;
    OptimizePhiGraph();
    for (auto& set : a_.value_sets_) {
      if (set.size() != 1 || !a_.values_[set[0]].is_phi) continue;
      auto it = node_of_value_.find(set[0]);
      if (it == node_of_value_.end()) continue;
      const int32_t optimized = nodes_[it->second].value_id;
      if (optimized != set[0]) {
        deleted_[set[0]] = true;
        set = {optimized};
      }
    }
  }

  // Drops deleted values and renumbers the rest densely, keeping their order.
  void Compact() {
    std::vector<int32_t> new_id(a_.values_.size(), -1);
    std::vector<HloValue> kept;
    for (HloValue& value : a_.values_) {
      if (deleted_[value.id]) continue;
      new_id[value.id] = static_cast<int32_t>(kept.size());
      value.id = static_cast<int32_t>(kept.size());
      kept.push_back(std::move(value));
    }
    a_.values_ = std::move(kept);
    for (auto& set : a_.value_sets_) {
      for (int32_t& id : set) id = new_id[id];
      set.erase(std::remove(set.begin(), set.end(), -1), set.end());
      std::sort(set.begin(), set.end());
    }
  }

  // --- Positions and uses -------------------------------------------------------------------

  void ComputePositionsAndUses() {
    for (HloValue& value : a_.values_) value.positions.push_back(value.slot);
    for (const HloComputation* computation : a_.control_flow_) {
      for (const HloInstruction* instr : computation->instructions) {
        const int32_t first = First(instr);
        for (int32_t s = first; s < first + Count(instr); ++s) {
          for (int32_t id : a_.value_sets_[s]) {
            if (a_.values_[id].instruction != instr) a_.values_[id].positions.push_back(s);
          }
        }
      }
    }
    const HloInstruction* entry_root = a_.module_->entry->root;
    for (HloValue& value : a_.values_) {
      std::vector<const HloInstruction*> roots;
      for (int32_t slot : value.positions) {
        const HloInstruction* at = a_.slot_instr_[slot];
        if (at == at->parent->root) roots.push_back(at);
        if (at == entry_root) value.live_out = true;
      }
      for (int32_t slot : value.positions) {
        const HloInstruction* at = a_.slot_instr_[slot];
        const ShapeIndex index = a_.SlotIndex(slot);
        for (const HloInstruction* user : at->users) {
          const bool root_use = user == user->parent->root &&
                                std::find(roots.begin(), roots.end(), user) != roots.end();
          if (!MayUseOperandValue(index, *user) && !root_use) continue;
          for (size_t i = 0; i < user->operands.size(); ++i) {
            if (user->operands[i] != at) continue;
            value.uses.push_back(HloUse{user, static_cast<int32_t>(i), slot});
          }
        }
      }
    }
  }

  DataflowAnalysis a_;
  std::vector<bool> deleted_;
  std::vector<int64_t> ordinal_;
  std::unordered_set<const HloComputation*> ordered_;
  std::vector<PhiNode> nodes_;
  std::unordered_map<int32_t, int32_t> node_of_value_;
  std::unordered_map<int32_t, std::vector<int32_t>> values_of_node_;
};

DataflowAnalysis DataflowAnalysis::Run(const ir::HloModule& module, const DataflowOptions&) {
  return DataflowBuilder(module).Build();
}

}  // namespace spmdsim::passes
