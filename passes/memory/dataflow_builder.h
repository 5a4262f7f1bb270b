// Internal to passes/memory/: the builder of a DataflowAnalysis, shared by the files that
// implement it: buffer_dataflow_analysis.cc (call graph, slots, the values each instruction
// defines), buffer_dataflow_propagation.cc (propagation to a fixed point) and
// buffer_dataflow_phis.cc (phi simplification, compaction, positions and uses). Nothing else
// includes this; the API is buffer_dataflow_analysis.h.
#pragma once

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "passes/memory/buffer_dataflow_analysis.h"
#include "passes/memory/value_id_set.h"

namespace spmdsim::passes {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;
using ir::Shape;

// Builds a DataflowAnalysis: call graph, slots, initial values, propagation to a fixed point,
// phi simplification, positions and uses.
class DataflowBuilder {
 public:
  explicit DataflowBuilder(const ir::HloModule& module) {
    a_.module_ = &module;
    a_.io_aliases_ = InputOutputAliasIndex(module);
  }

  DataflowAnalysis Build();

 private:
  // --- Call graph ---------------------------------------------------------------------------

  static bool IsControlFlowCaller(Opcode opcode) {
    return opcode == Opcode::kWhile || opcode == Opcode::kCall || opcode == Opcode::kConditional ||
           opcode == Opcode::kAsyncStart || opcode == Opcode::kAsyncUpdate ||
           opcode == Opcode::kAsyncDone;
  }

  void ComputeCallGraph();

  void MarkEmbedded(const HloComputation* computation);

  // --- Slots --------------------------------------------------------------------------------

  void AddSlots(const HloInstruction* instr, const Shape& shape, int32_t parent, int32_t element);

  void AssignSlots();

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

  void DefineAt(const HloInstruction* instr, int32_t slot);

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

  bool ParameterDefinesValues(const HloInstruction* instr) const;

  void DefineValues(const HloInstruction* instr);

  // --- Propagation --------------------------------------------------------------------------

  // Copies the value sets of `count` slots starting at `from` to `to`; true when any changed.
  bool CopySlots(int32_t to, int32_t from, int32_t count, bool skip_first = false);

  // The whole value-set tree of `from` copied onto `to` where the shapes have the same slots.
  bool CopyInstruction(const HloInstruction* to, const HloInstruction* from);

  bool UnionInto(int32_t to, const std::vector<int32_t>& inputs_first, int32_t count);

  // Phi: merges the value sets of `inputs` (instructions shaped like `instr`) slot by slot.
  bool Phi(const HloInstruction* instr, const std::vector<const HloInstruction*>& inputs);

  bool UpdateParameter(const HloInstruction* param);

  bool UpdateGetTupleElement(const HloInstruction* gte);

  bool UpdateTuple(const HloInstruction* tuple);

  // Copies operand slot `from` (and its subtree) to instruction slot `to` (and its subtree).
  bool CopySubtree(int32_t to, int32_t from);

  bool UpdateAsyncStart(const HloInstruction* start);

  // Copies the value sets of array-shaped slots of the subtree at `from` onto `to`.
  bool CopyArrayLeaves(int32_t to, int32_t from);

  bool UpdateAsyncUpdateOrDone(const HloInstruction* instr);

  bool UpdateInstruction(const HloInstruction* instr);

  void ComputeOrdinals(const HloComputation* computation, int64_t& ordinal);

  void Propagate();

  static const HloInstruction* ParameterOf(const HloComputation* computation, size_t n);

  // --- Phi graph (XLA's PhiGraph): phis whose inputs reduce to one value are replaced by it ---

  struct PhiNode {
    bool is_phi = false;
    bool dead = false;
    int32_t value_id = 0;
    std::vector<int32_t> operands;  // node indices
    std::vector<int32_t> users;
  };

  int32_t NodeFor(int32_t value_id);

  void RegisterPhi(int32_t phi, const std::vector<int32_t>& inputs);

  bool PhiInputsEqual(int32_t phi, const std::vector<int32_t>& inputs);

  void ReplaceNodeWith(int32_t node, int32_t replace);

  void OptimizePhiGraph();

  void OptimizePhis();

  // Drops deleted values and renumbers the rest densely, keeping their order.
  void Compact();

  // --- Positions and uses -------------------------------------------------------------------

  void ComputePositionsAndUses();

  // Moves the value sets into the analysis's flat arrays and frees the builder's.
  void FlattenValueSets();

  DataflowAnalysis a_;
  // The value sets while they change (propagation, phis); FlattenValueSets hands them over.
  std::vector<ValueIdSet> sets_;
  std::vector<bool> deleted_;
  // By instruction id: DefineValues defined a value at every slot of it (its opcode forwards
  // none of its operands' values), so propagation never has to visit it.
  std::vector<bool> forwards_nothing_;
  std::vector<int64_t> ordinal_;
  std::unordered_set<const HloComputation*> ordered_;
  std::vector<PhiNode> nodes_;
  std::unordered_map<int32_t, int32_t> node_of_value_;
  std::unordered_map<int32_t, std::vector<int32_t>> values_of_node_;
};

}  // namespace spmdsim::passes
