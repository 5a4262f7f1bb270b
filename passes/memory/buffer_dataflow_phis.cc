// The dataflow after propagation: phi simplification (XLA's PhiGraph), compaction of the
// values, and each value's positions and uses.
#include <algorithm>
#include <climits>
#include <functional>
#include <queue>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "passes/memory/dataflow_builder.h"
#include "passes/memory/operand_numbers.h"

namespace spmdsim::passes {

const HloInstruction* DataflowBuilder::ParameterOf(const HloComputation* computation, size_t n) {
  return n < computation->parameters.size() ? computation->parameters[n] : nullptr;
}

int32_t DataflowBuilder::NodeFor(int32_t value_id) {
  auto it = node_of_value_.find(value_id);
  if (it != node_of_value_.end()) return it->second;
  const auto node = static_cast<int32_t>(nodes_.size());
  nodes_.push_back(PhiNode{false, false, value_id, {}, {}});
  node_of_value_[value_id] = node;
  values_of_node_[node].push_back(value_id);
  return node;
}

void DataflowBuilder::RegisterPhi(int32_t phi, const std::vector<int32_t>& inputs) {
  const int32_t node = NodeFor(phi);
  nodes_[node].is_phi = true;
  nodes_[node].operands.clear();
  for (int32_t input : inputs) {
    const int32_t input_node = NodeFor(input);
    nodes_[node].operands.push_back(input_node);
  }
}

bool DataflowBuilder::PhiInputsEqual(int32_t phi, const std::vector<int32_t>& inputs) {
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

void DataflowBuilder::ReplaceNodeWith(int32_t node, int32_t replace) {
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

void DataflowBuilder::OptimizePhiGraph() {
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

void DataflowBuilder::OptimizePhis() {
  if (nodes_.empty()) return;
  OptimizePhiGraph();
  for (auto& set : sets_) {
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

void DataflowBuilder::Compact() {
  // In place: a copy of a million values would double their memory for a moment.
  if (std::find(deleted_.begin(), deleted_.end(), true) == deleted_.end()) return;
  std::vector<int32_t> new_id(a_.values_.size(), -1);
  size_t kept = 0;
  for (HloValue& value : a_.values_) {
    if (deleted_[value.id]) continue;
    new_id[value.id] = static_cast<int32_t>(kept);
    value.id = static_cast<int32_t>(kept);
    if (&value != &a_.values_[kept]) a_.values_[kept] = std::move(value);
    ++kept;
  }
  a_.values_.resize(kept);
  // The map keeps the order of the ids, so the sets stay sorted.
  for (auto& set : sets_) {
    for (int32_t& id : set) id = new_id[id];
    set.Truncate(static_cast<size_t>(std::remove(set.begin(), set.end(), -1) - set.begin()));
  }
}

namespace {

// What the uses walk asks of wide instructions, answered without rescanning them per value:
// a tuple of thousands of outputs is the user of each of its operands, and a loop's state tuple
// has thousands of users, each reading one element.
class UseLookup {
 public:
  // Calls fn(i) for each i where user.operands[i] is `operand`, in operand order.
  template <typename Fn>
  void ForEachOperandNumber(const HloInstruction& user, const HloInstruction* operand, Fn&& fn) {
    operand_numbers_.ForEach(user, operand, fn);
  }

  // The users of `at` that may read a value at an index inside it (MayUseOperandValue for a
  // nested index) or are their computation's root, in users order: no other user can use a
  // value at a nested position.
  std::span<const HloInstruction* const> NestedUsers(const HloInstruction& at) {
    if (at.users.size() <= kScanned) return at.users;
    auto [it, inserted] = nested_users_.try_emplace(&at);
    if (inserted) {
      for (const HloInstruction* user : at.users) {
        if (MayUseOperandValue(/*top_level=*/false, *user) || user == user->parent->root) {
          it->second.push_back(user);
        }
      }
    }
    return it->second;
  }

 private:
  static constexpr size_t kScanned = 16;  // a bound on a scan's cost, not on the answer
  OperandNumbers operand_numbers_;
  std::unordered_map<const HloInstruction*, std::vector<const HloInstruction*>> nested_users_;
};

}  // namespace

void DataflowBuilder::ComputePositionsAndUses() {
  // Positions: the defining slot, then every other slot holding the value in program order,
  // laid out value by value in one flat array. Most slots hold only the value they define, so
  // the others are listed in one walk and then counted into place.
  std::vector<std::pair<int32_t, int32_t>> others;  // (value, slot) in program order
  for (const HloComputation* computation : a_.control_flow_) {
    for (const HloInstruction* instr : computation->instructions) {
      const int32_t first = First(instr);
      for (int32_t s = first; s < first + Count(instr); ++s) {
        for (int32_t id : sets_[s]) {
          if (a_.values_[id].instruction != instr) others.emplace_back(id, s);
        }
      }
    }
  }
  std::vector<uint32_t> begin(a_.values_.size() + 1, 0);
  for (const HloValue& value : a_.values_) begin[value.id + 1] = 1;
  for (const auto& [id, slot] : others) ++begin[id + 1];
  for (size_t v = 0; v < a_.values_.size(); ++v) begin[v + 1] += begin[v];
  a_.positions_.assign(begin.back(), 0);
  std::vector<uint32_t> filled(begin.begin(), begin.end() - 1);
  for (const HloValue& value : a_.values_) a_.positions_[filled[value.id]++] = value.slot;
  for (const auto& [id, slot] : others) a_.positions_[filled[id]++] = slot;
  for (HloValue& value : a_.values_) {
    value.positions = {a_.positions_.data() + begin[value.id],
                       a_.positions_.data() + begin[value.id + 1]};
  }

  // Uses, value by value into one array; the views are set once it no longer grows. (Not
  // shrunk after: a copy of the array costs more than the untouched capacity, never paged in.)
  const HloInstruction* entry_root = a_.module_->entry->root;
  std::vector<uint32_t> uses_begin(a_.values_.size() + 1, 0);
  std::vector<const HloInstruction*> roots;
  UseLookup lookup;
  for (HloValue& value : a_.values_) {
    roots.clear();
    for (int32_t slot : value.positions) {
      const HloInstruction* at = a_.slot_instr_[slot];
      if (at == at->parent->root) roots.push_back(at);
      if (at == entry_root) value.live_out = true;
    }
    for (int32_t slot : value.positions) {
      const HloInstruction* at = a_.slot_instr_[slot];
      const bool top_level = a_.SlotIsTop(slot);
      const std::span<const HloInstruction* const> users =
          top_level ? std::span<const HloInstruction* const>(at->users) : lookup.NestedUsers(*at);
      for (const HloInstruction* user : users) {
        const bool root_use = user == user->parent->root &&
                              std::find(roots.begin(), roots.end(), user) != roots.end();
        if (!MayUseOperandValue(top_level, *user) && !root_use) continue;
        lookup.ForEachOperandNumber(*user, at, [&](int32_t number) {
          a_.uses_.push_back(HloUse{user, number, slot});
        });
      }
    }
    uses_begin[value.id + 1] = static_cast<uint32_t>(a_.uses_.size());
  }
  for (HloValue& value : a_.values_) {
    value.uses = {a_.uses_.data() + uses_begin[value.id],
                  a_.uses_.data() + uses_begin[value.id + 1]};
  }
}

void DataflowBuilder::FlattenValueSets() {
  a_.set_begin_.assign(sets_.size() + 1, 0);
  size_t ids = 0;
  for (size_t s = 0; s < sets_.size(); ++s) {
    ids += sets_[s].size();
    a_.set_begin_[s + 1] = static_cast<uint32_t>(ids);
  }
  a_.set_ids_.reserve(ids);
  for (const auto& set : sets_) a_.set_ids_.insert(a_.set_ids_.end(), set.begin(), set.end());
  std::vector<ValueIdSet>().swap(sets_);
}

}  // namespace spmdsim::passes
