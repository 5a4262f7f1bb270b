#include "passes/memory/buffer_alias_analysis.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "passes/memory/buffer_sharing_rules.h"

namespace spmdsim::passes {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;

namespace {

class UnionFind {
 public:
  explicit UnionFind(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int32_t Find(int32_t x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  void Union(int32_t a, int32_t b) {
    a = Find(a);
    b = Find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<int32_t> parent_;
};

class Merger {
 public:
  Merger(const DataflowAnalysis& dataflow, UnionFind& sets) : df_(dataflow), sets_(sets) {}

  void MergeAliases(const HloValue& value) {
    MergeInputOutputAliases(value);
    MergeWhileAliases(value);
    MergeConditionalAliases(value);
    MergeInPlaceAliases(value);
  }

 private:
  void UnionWithValueAt(const HloValue& value, const HloInstruction* instr,
                        const ShapeIndex& index) {
    const int32_t other = df_.UniqueValueAt(df_.SlotAt(instr, index));
    if (other >= 0) sets_.Union(value.id, other);
  }

  void MergeInputOutputAliases(const HloValue& value) {
    const ir::HloModule& module = df_.module();
    const InputOutputAliasIndex& io_aliases = df_.InputOutputAliases();
    if (io_aliases.empty()) return;
    const HloInstruction* root = module.entry->root;
    for (int32_t slot : value.positions) {
      if (df_.SlotInstruction(slot) != root) continue;
      for (const ir::InputOutputAlias* pair : io_aliases.ForOutput(df_.SlotIndex(slot))) {
        const ir::InputOutputAlias& alias = *pair;
        const auto n = static_cast<size_t>(alias.parameter_number);
        if (alias.parameter_number < 0 || n >= module.entry->parameters.size() ||
            module.entry->parameters[n] == nullptr) {
          continue;
        }
        UnionWithValueAt(value, module.entry->parameters[n], alias.parameter_index);
      }
    }
  }

  static const HloInstruction* WhileCaller(const HloComputation* computation) {
    for (const HloInstruction* caller : computation->callers) {
      if (caller->opcode == Opcode::kWhile) return caller;
    }
    return nullptr;
  }

  void MergeWhileAliases(const HloValue& value) {
    for (const HloUse& use : value.uses) {
      if (use.user->opcode == Opcode::kWhile) {
        UnionWithValueAt(value, use.user, df_.SlotIndex(use.operand_slot));
      }
    }
    if (value.instruction->opcode == Opcode::kParameter) {
      if (const HloInstruction* loop = WhileCaller(value.instruction->parent)) {
        UnionWithValueAt(value, loop, df_.SlotIndex(value.slot));
      }
    }
    for (int32_t slot : value.positions) {
      const HloInstruction* at = df_.SlotInstruction(slot);
      if (at != at->parent->root) continue;
      for (const HloInstruction* caller : at->parent->callers) {
        if (caller->opcode == Opcode::kWhile && caller->Called("body") == at->parent) {
          UnionWithValueAt(value, caller, df_.SlotIndex(slot));
        }
      }
    }
  }

  void MergeConditionalAliases(const HloValue& value) {
    for (int32_t slot : value.positions) {
      const HloInstruction* at = df_.SlotInstruction(slot);
      if (at != at->parent->root) continue;
      for (const HloInstruction* caller : at->parent->callers) {
        if (caller->opcode == Opcode::kConditional) {
          UnionWithValueAt(value, caller, df_.SlotIndex(slot));
        }
      }
    }
  }

  const std::vector<InPlacePair>& PairsOf(const HloInstruction* instr) {
    return InPlaceInputOutputPairs(*instr, sharing_memo_);
  }

  void MergeInPlaceAliases(const HloValue& value) {
    for (int32_t slot : value.positions) {
      const HloInstruction* at = df_.SlotInstruction(slot);
      const auto& pairs = PairsOf(at);
      if (pairs.empty()) continue;
      const ShapeIndex index = df_.SlotIndex(slot);
      for (const InPlacePair& pair : pairs) {
        if (pair.output_index != index) continue;
        const auto n = static_cast<size_t>(pair.operand_number);
        if (n >= at->operands.size()) continue;
        UnionWithValueAt(value, at->operands[n], pair.operand_index);
      }
    }
    for (const HloUse& use : value.uses) {
      const auto& pairs = PairsOf(use.user);
      if (pairs.empty()) continue;
      const ShapeIndex operand_index = df_.SlotIndex(use.operand_slot);
      for (const InPlacePair& pair : pairs) {
        if (pair.operand_number == use.operand_number && pair.operand_index == operand_index) {
          UnionWithValueAt(value, use.user, pair.output_index);
        }
      }
    }
  }

  const DataflowAnalysis& df_;
  UnionFind& sets_;
  SharingRuleMemo sharing_memo_;
};

}  // namespace

AliasAnalysis AliasAnalysis::Run(const DataflowAnalysis& dataflow, const AliasOptions&) {
  AliasAnalysis result;
  const auto& values = dataflow.values();
  UnionFind sets(values.size());
  Merger merger(dataflow, sets);
  for (const HloValue& value : values) merger.MergeAliases(value);

  // Buffers numbered by their first value; their values counted, then laid out buffer by
  // buffer in ascending order.
  result.buffer_of_.assign(values.size(), -1);
  std::vector<int32_t> buffer_of_root(values.size(), -1);
  std::vector<uint32_t> begin(1, 0);
  for (const HloValue& value : values) {
    const int32_t root = sets.Find(value.id);
    if (buffer_of_root[root] < 0) {
      buffer_of_root[root] = static_cast<int32_t>(result.buffers_.size());
      result.buffers_.push_back(HloBuffer{buffer_of_root[root], {}, false});
      begin.push_back(0);
    }
    HloBuffer& buffer = result.buffers_[buffer_of_root[root]];
    ++begin[buffer.id + 1];
    buffer.live_out |= value.live_out;
    result.buffer_of_[value.id] = buffer.id;
  }
  for (size_t b = 1; b < begin.size(); ++b) begin[b] += begin[b - 1];
  result.buffer_values_.resize(values.size());
  std::vector<uint32_t> filled(begin.begin(), begin.end() - 1);
  for (const HloValue& value : values) {
    result.buffer_values_[filled[result.buffer_of_[value.id]]++] = value.id;
  }
  for (HloBuffer& buffer : result.buffers_) {
    buffer.values = {result.buffer_values_.data() + begin[buffer.id],
                     result.buffer_values_.data() + begin[buffer.id + 1]};
  }
  return result;
}

}  // namespace spmdsim::passes
