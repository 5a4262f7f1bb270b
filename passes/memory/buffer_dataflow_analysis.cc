#include "passes/memory/buffer_dataflow_analysis.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_set>

#include "passes/memory/dataflow_builder.h"

namespace spmdsim::passes {

std::string ShapeIndexToString(const ShapeIndex& index) {
  std::string out = "{";
  for (size_t i = 0; i < index.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(index[i]);
  }
  return out + "}";
}

bool MayUseOperandValue(bool top_level, const HloInstruction& user) {
  switch (user.opcode) {
    case Opcode::kGetTupleElement:
    case Opcode::kCopy:
      return top_level;
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

int32_t DataflowAnalysis::ChildSlot(int32_t slot, int64_t k) const {
  // A tuple of arrays (every element one slot, the common wide tuple) in one step; otherwise
  // past the subtrees of the elements before k.
  const auto elements = static_cast<int64_t>(slot_shape_[slot]->tuple_shapes().size());
  if (slot_span_[slot] == elements + 1) return slot + 1 + static_cast<int32_t>(k);
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
  const std::span<const int32_t> set = ValueSet(slot);
  return set.size() == 1 ? set[0] : -1;
}

std::string DataflowAnalysis::ValueName(const HloValue& value) const {
  std::string name(value.instruction->name);
  if (value.instruction->shape.IsTuple()) name += ShapeIndexToString(SlotIndex(value.slot));
  return name;
}

DataflowAnalysis DataflowBuilder::Build() {
  const ir::HloModule& module = *a_.module_;
  if (module.entry == nullptr) return std::move(a_);
  ComputeCallGraph();
  AssignSlots();
  // At most one value a slot before propagation adds phis: no regrowth of a million values.
  a_.values_.reserve(a_.slot_instr_.size());
  deleted_.reserve(a_.slot_instr_.size());
  forwards_nothing_.assign(a_.first_slot_.size(), false);
  for (const HloComputation* computation : a_.control_flow_) {
    for (const HloInstruction* instr : computation->instructions) DefineValues(instr);
  }
  Propagate();
  OptimizePhis();
  Compact();
  ComputePositionsAndUses();
  FlattenValueSets();
  return std::move(a_);
}

void DataflowBuilder::ComputeCallGraph() {
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

void DataflowBuilder::MarkEmbedded(const HloComputation* computation) {
  auto [it, inserted] = a_.context_.emplace(computation, CallContext::kEmbedded);
  if (!inserted) return;
  for (const HloInstruction* instr : computation->instructions) {
    for (const ir::CalledComputation& called : instr->called_computations()) {
      if (called.computation != nullptr) MarkEmbedded(called.computation);
    }
  }
}

void DataflowBuilder::AddSlots(const HloInstruction* instr, const Shape& shape, int32_t parent,
                               int32_t element) {
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

void DataflowBuilder::AssignSlots() {
  a_.first_slot_.assign(a_.module_->instruction_id_bound, -1);
  for (const HloComputation* computation : a_.control_flow_) {
    for (const HloInstruction* instr : computation->instructions) {
      a_.first_slot_[static_cast<size_t>(instr->id)] = static_cast<int32_t>(a_.slot_instr_.size());
      AddSlots(instr, instr->shape, -1, 0);
    }
  }
  sets_.resize(a_.slot_instr_.size());
}

void DataflowBuilder::DefineAt(const HloInstruction* instr, int32_t slot) {
  sets_[slot] = {NewValue(instr, slot, false)};
}

bool DataflowBuilder::ParameterDefinesValues(const HloInstruction* instr) const {
  const HloComputation* computation = instr->parent;
  if (computation == a_.module_->entry) return true;
  for (const HloInstruction* caller : computation->callers) {
    if (IsControlFlowCaller(caller->opcode)) return false;
  }
  return true;
}

void DataflowBuilder::DefineValues(const HloInstruction* instr) {
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
      // Forwards nothing: it defines every value it holds, and propagation leaves it alone.
      DefineWhere(instr, all);
      forwards_nothing_[static_cast<size_t>(instr->id)] = true;
      return;
  }
}

bool DataflowBuilder::CopySlots(int32_t to, int32_t from, int32_t count, bool skip_first) {
  bool changed = false;
  for (int32_t k = skip_first ? 1 : 0; k < count; ++k) {
    if (sets_[to + k] != sets_[from + k]) {
      sets_[to + k] = sets_[from + k];
      changed = true;
    }
  }
  return changed;
}

bool DataflowBuilder::CopyInstruction(const HloInstruction* to, const HloInstruction* from) {
  const int32_t count = std::min(Count(to), Count(from));
  if (First(from) < 0) return false;
  return CopySlots(First(to), First(from), count);
}

DataflowAnalysis DataflowAnalysis::Run(const ir::HloModule& module, const DataflowOptions&) {
  return DataflowBuilder(module).Build();
}

}  // namespace spmdsim::passes
