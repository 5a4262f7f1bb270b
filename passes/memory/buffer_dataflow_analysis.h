// Which instructions define buffers and which only pass them on: the values of a module, the way
// XLA's HloDataflowAnalysis (SSA form, bitcasts not defining values) finds them for buffer
// assignment.
//
// A *slot* is one (instruction, shape index) pair: every subshape of an analysed instruction's
// shape, numbered in pre-order (the top-level shape first, then each tuple element's subtree in
// order). A *value* is a buffer defined at one slot; its *positions* are every slot that holds
// it, its *uses* the operands that read it.
//
//   %a = f32[8] add(%x, %y)                defines a value at a{}
//   %b = f32[2,4] bitcast(%a)              no value: b{} holds a's value
//   %t = (f32[8], s32[]) tuple(%a, %c)     defines only the tuple table t{}; t{0} holds a
//   %g = f32[8] get-tuple-element(%t), index=0   no value: g{} holds a
//   %w = (...) while(%t), ...              a phi value at w{i} where the loop changes element i
//
// Only computations reached through control flow (the entry, while bodies and conditions, call
// and conditional targets, async wrapped computations) are analysed; the bodies of fusions,
// reductions, sorts and the like run inside one instruction and never hold a module buffer.
//
// Phi values follow XLA: a while, its body and condition parameters, and a conditional get a phi
// where different values meet; phis that turn out to carry one value are replaced by it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/hlo.h"
#include "passes/memory/input_output_alias_index.h"

namespace spmdsim::passes {

// Path of tuple element numbers from the top of a shape: {} is the top, {1,0} element 0 of
// element 1.
using ShapeIndex = std::vector<int64_t>;

// "{}", "{1,0}".
std::string ShapeIndexToString(const ShapeIndex& index);

// How a computation is reached from the entry.
enum class CallContext : uint8_t {
  kNone,         // not reachable (dead) or not analysed
  kControlFlow,  // entry, while/call/conditional/async targets: its values are module buffers
  kEmbedded,     // fusion, reduce, sort, map, scatter, all-reduce to_apply...: thread-local
};

struct HloUse {
  const ir::HloInstruction* user = nullptr;
  int32_t operand_number = 0;
  int32_t operand_slot = 0;  // the slot of the operand that is read
  bool operator==(const HloUse&) const = default;
};

struct HloValue {
  int32_t id = 0;  // dense, in creation order (XLA's value ids are in the same order)
  const ir::HloInstruction* instruction = nullptr;  // the defining instruction
  int32_t slot = 0;                                 // the defining slot
  bool is_phi = false;
  bool live_out = false;  // appears at the entry computation's root
  // Views into the analysis's flat arrays (a million values: no allocation each).
  std::span<const int32_t> positions;  // slots holding the value; the defining slot first
  std::span<const HloUse> uses;
};

struct DataflowOptions {};

class DataflowAnalysis {
 public:
  DataflowAnalysis() = default;
  DataflowAnalysis(DataflowAnalysis&&) = default;
  DataflowAnalysis& operator=(DataflowAnalysis&&) = default;
  // The values view the analysis's own arrays, which a copy would not own.
  DataflowAnalysis(const DataflowAnalysis&) = delete;
  DataflowAnalysis& operator=(const DataflowAnalysis&) = delete;

  static DataflowAnalysis Run(const ir::HloModule& module, const DataflowOptions& options = {});

  const ir::HloModule& module() const { return *module_; }
  // The module's input_output_alias pairs, indexed by output and by parameter.
  const InputOutputAliasIndex& InputOutputAliases() const { return io_aliases_; }
  CallContext Context(const ir::HloComputation* computation) const;
  // Control-flow computations in post order (callees before callers, the entry last).
  const std::vector<const ir::HloComputation*>& ControlFlowComputations() const {
    return control_flow_;
  }

  // Slots. An instruction outside the analysed computations has none (FirstSlot() == -1).
  int32_t FirstSlot(const ir::HloInstruction* instruction) const {
    const auto id = static_cast<size_t>(instruction->id);
    return id < first_slot_.size() ? first_slot_[id] : -1;
  }
  int32_t SlotCount(const ir::HloInstruction* instruction) const {
    const int32_t first = FirstSlot(instruction);
    return first < 0 ? 0 : slot_span_[first];
  }
  int32_t SlotAt(const ir::HloInstruction* instruction, const ShapeIndex& index) const;
  const ir::HloInstruction* SlotInstruction(int32_t slot) const { return slot_instr_[slot]; }
  const ir::Shape& SlotShape(int32_t slot) const { return *slot_shape_[slot]; }
  ShapeIndex SlotIndex(int32_t slot) const;
  bool SlotIsTop(int32_t slot) const { return slot_parent_[slot] < 0; }
  // Slot of element `k` of the tuple at `slot`.
  int32_t ChildSlot(int32_t slot, int64_t k) const;
  // Number of slots in the subtree rooted at `slot`, itself included.
  int32_t SlotSpan(int32_t slot) const { return slot_span_[slot]; }

  // The values at a slot, sorted by id (one value for every analysed slot in SSA form).
  std::span<const int32_t> ValueSet(int32_t slot) const {
    return {set_ids_.data() + set_begin_[slot], set_ids_.data() + set_begin_[slot + 1]};
  }
  // The single value at a slot, or -1 when there is none or several.
  int32_t UniqueValueAt(int32_t slot) const;
  const std::vector<HloValue>& values() const { return values_; }
  const HloValue& value(int32_t id) const { return values_[id]; }

  // "name{1,0}" as XLA prints values in its live-range and buffer-assignment files: the index is
  // printed only when the instruction's shape is a tuple.
  std::string ValueName(const HloValue& value) const;

 private:
  friend class DataflowBuilder;
  const ir::HloModule* module_ = nullptr;
  InputOutputAliasIndex io_aliases_;
  std::unordered_map<const ir::HloComputation*, CallContext> context_;
  std::vector<const ir::HloComputation*> control_flow_;
  std::vector<int32_t> first_slot_;  // by instruction id; -1 when not analysed
  std::vector<const ir::HloInstruction*> slot_instr_;
  std::vector<const ir::Shape*> slot_shape_;
  std::vector<int32_t> slot_parent_;   // -1 for the top
  std::vector<int32_t> slot_element_;  // element number within the parent tuple
  std::vector<int32_t> slot_span_;     // slots in the subtree, itself included
  // The value sets, slot by slot: slot s holds set_ids_[set_begin_[s], set_begin_[s + 1]).
  std::vector<uint32_t> set_begin_;
  std::vector<int32_t> set_ids_;
  std::vector<HloValue> values_;
  // What the values' positions and uses view.
  std::vector<int32_t> positions_;
  std::vector<HloUse> uses_;
};

// True when `user` may read the buffer at an index of an operand (XLA's MayUseOperandValue):
// get-tuple-element and copy read only the top level ({}); tuple and domain read nothing.
bool MayUseOperandValue(bool top_level, const ir::HloInstruction& user);

}  // namespace spmdsim::passes
