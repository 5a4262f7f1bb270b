#include "passes/rng/threefry_hashes.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace spmdsim::passes {
namespace {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;

// Operands before users, whatever order the text lists the instructions in (the parser resolves
// names after a computation closes). Iterative: a fused computation may hold thousands.
std::vector<const HloInstruction*> PostOrder(const HloComputation* computation) {
  std::vector<const HloInstruction*> order;
  std::unordered_map<const HloInstruction*, bool> done;  // false: on the stack
  order.reserve(computation->instructions.size());
  for (const HloInstruction* start : computation->instructions) {
    if (done.count(start) != 0) continue;
    std::vector<std::pair<const HloInstruction*, size_t>> stack = {{start, 0}};
    done[start] = false;
    while (!stack.empty()) {
      auto& [instr, next] = stack.back();
      if (next < instr->operands.size()) {
        const HloInstruction* operand = instr->operands[next++];
        if (operand->parent == computation && done.count(operand) == 0) {
          done[operand] = false;
          stack.push_back({operand, 0});
        }
        continue;
      }
      done[instr] = true;
      order.push_back(instr);
      stack.pop_back();
    }
  }
  return order;
}

// Adds the elements of `from` to the sorted, duplicate-free `into`.
template <typename T>
void Merge(std::vector<T>& into, const std::vector<T>& from) {
  if (from.empty()) return;
  std::vector<T> merged;
  merged.reserve(into.size() + from.size());
  std::set_union(into.begin(), into.end(), from.begin(), from.end(), std::back_inserter(merged));
  into = std::move(merged);
}

// The operands of the root that stand for its elements: a tuple's operands, or the root itself.
std::vector<const HloInstruction*> RootElements(const HloComputation* computation) {
  const HloInstruction* root = computation->root;
  if (root == nullptr) return {};
  if (root->opcode == Opcode::kTuple) {
    return std::vector<const HloInstruction*>(root->operands.begin(), root->operands.end());
  }
  return {root};
}

}  // namespace

std::optional<int64_t> ScalarConstant(const HloInstruction* instr) {
  if (instr->opcode == Opcode::kBroadcast && instr->operands.size() == 1) {
    instr = instr->operands[0];
  }
  if (instr->opcode != Opcode::kConstant || instr->shape.ElementCount() != 1) return std::nullopt;
  std::string_view text = instr->payload;
  while (!text.empty() && (text.front() == '{' || text.front() == ' ')) text.remove_prefix(1);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc()) return std::nullopt;
  return value;
}

bool IsRotationShift(const HloInstruction* instr) {
  if (instr->opcode != Opcode::kShiftLeft || instr->operands.size() != 2) return false;
  const std::optional<int64_t> amount = ScalarConstant(instr->operands[1]);
  return amount && std::find(std::begin(kThreefryRotations), std::end(kThreefryRotations),
                             *amount) != std::end(kThreefryRotations);
}

namespace {

// Rotation indices, sorted and distinct: the rotations nearest upstream of a value.
using Rotations = std::vector<int>;

// What reaches a value: the rotations nearest upstream, and a value number (equal for values
// computed the same way from the same values of non-fusion computations, across fusions), which
// tells copies of one hash from hashes of other keys.
struct Flow {
  Rotations nearest;
  uint64_t number = 0;
};

uint64_t Mix(uint64_t seed, uint64_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

uint64_t HashText(std::string_view text) { return std::hash<std::string_view>()(text); }

// Attributes that do not change what an instruction computes.
bool Descriptive(std::string_view name) {
  return name == "metadata" || name == "backend_config" || name == "calls" ||
         name == "frontend_attributes" || name == "sharding" || name == "statistics" ||
         name == "control-predecessors" || name == "origin";
}

// The value number of `instr` inside a fused computation, from its operands'.
uint64_t ValueNumber(const HloInstruction* instr, const std::vector<uint64_t>& operands) {
  uint64_t h = Mix(static_cast<uint64_t>(instr->opcode), instr->shape.ElementCount());
  if (instr->shape.IsArray()) {
    h = Mix(h, static_cast<uint64_t>(instr->shape.element_type()));
    for (const int64_t d : instr->shape.dims()) h = Mix(h, static_cast<uint64_t>(d));
  }
  h = Mix(h, HashText(instr->payload));
  h = Mix(h, static_cast<uint64_t>(instr->tuple_index + 1));
  for (const ir::Attribute& attribute : instr->attributes) {
    if (Descriptive(attribute.name)) continue;
    h = Mix(Mix(h, HashText(attribute.name)), HashText(attribute.value));
  }
  for (const uint64_t operand : operands) h = Mix(h, operand);
  return h;
}

// Instructions whose value is not determined by their opcode, attributes and operands alone.
bool NumberedByIdentity(const HloInstruction& instr) {
  switch (instr.opcode) {
    case Opcode::kParameter:
    case Opcode::kRng:
    case Opcode::kRngGetAndUpdateState:
    case Opcode::kCustomCall:
    case Opcode::kInfeed:
    case Opcode::kRecv:
    case Opcode::kRecvDone:
    case Opcode::kUnknown:
      return true;
    default:
      return false;
  }
}

// Follows rotation chains through the whole module: fused computations are visited from their
// fusion instruction, their parameters seeded with what reaches the operands.
class DrawFinder {
 public:
  explicit DrawFinder(const ir::HloModule& module) : module_(module) {}

  std::vector<ThreefryDraw> Run(int min_rounds) {
    bool any = false;
    for (const HloComputation* c : module_.computations) {
      for (const HloInstruction* instr : c->instructions) any = any || IsRotationShift(instr);
    }
    if (!any) return {};
    for (const HloComputation* c : module_.computations) {
      if (!c->IsFusionComputation()) Visit(c, {}, nullptr, 0);
    }
    return Draws(min_rounds);
  }

 private:
  // What reaches the root's elements of `computation` ({root} for an array root).
  std::vector<Flow> Visit(const HloComputation* computation, const std::vector<Flow>& parameters,
                          const HloInstruction* holder, int depth) {
    if (computation == nullptr || depth > kMaxFusionNesting) return {};
    std::unordered_map<const HloInstruction*, Flow> flow;
    std::unordered_map<const HloInstruction*, std::vector<Flow>> elements;
    const auto of = [&](const HloInstruction* operand) -> const Flow& {
      static const Flow kNone;
      const auto found = flow.find(operand);
      return found == flow.end() ? kNone : found->second;
    };
    for (const HloInstruction* instr : PostOrder(computation)) {
      Flow up;
      std::vector<uint64_t> operand_numbers;
      for (const HloInstruction* operand : instr->operands) {
        operand_numbers.push_back(of(operand).number);
      }
      if (instr->opcode == Opcode::kParameter) {
        if (instr->parameter_number >= 0 &&
            instr->parameter_number < static_cast<int64_t>(parameters.size())) {
          up = parameters[instr->parameter_number];
        }
      } else if (instr->opcode == Opcode::kGetTupleElement && !instr->operands.empty() &&
                 elements.count(instr->operands[0]) != 0) {
        const std::vector<Flow>& parts = elements[instr->operands[0]];
        if (instr->tuple_index >= 0 && instr->tuple_index < static_cast<int64_t>(parts.size())) {
          up = parts[instr->tuple_index];
        }
      } else if (instr->opcode == Opcode::kFusion) {
        std::vector<Flow> seeds;
        for (const HloInstruction* operand : instr->operands) seeds.push_back(of(operand));
        std::vector<Flow> parts =
            Visit(instr->Called("calls"), seeds, holder != nullptr ? holder : instr, depth + 1);
        for (const Flow& part : parts) Merge(up.nearest, part.nearest);
        if (instr->shape.IsTuple()) elements[instr] = std::move(parts);
      } else {
        for (const HloInstruction* operand : instr->operands)
          Merge(up.nearest, of(operand).nearest);
        if (instr->opcode == Opcode::kTuple) {
          std::vector<Flow>& parts = elements[instr];
          for (const HloInstruction* operand : instr->operands) parts.push_back(of(operand));
        }
      }
      // Values are numbered by what they compute, from their operands' numbers, so XLA's
      // copies of a hash (and of the key derivation feeding it, which it may also duplicate)
      // number alike; a fused parameter is its operand's value. Parameters of non-fusion
      // computations and instructions whose result is not a function of their operands (rng,
      // custom calls, infeed, receives) are numbered by identity.
      if (holder == nullptr) {
        up.number = NumberedByIdentity(*instr)
                        ? Mix(0x51ed270b27f1ab5dULL, static_cast<uint64_t>(instr->id))
                        : ValueNumber(instr, operand_numbers);
      } else if (instr->opcode != Opcode::kParameter) {
        up.number = ValueNumber(instr, operand_numbers);
      }
      if (IsRotationShift(instr)) {
        auto [at, inserted] = index_.try_emplace(instr, static_cast<int>(rotations_.size()));
        if (inserted) {
          rotations_.push_back(instr);
          holders_.push_back(holder != nullptr ? holder : instr);
          preds_.emplace_back();
          numbers_.emplace_back(up.number);
        }
        const int64_t lanes = instr->shape.ElementCount();
        for (const int p : up.nearest) {
          if (p != at->second && rotations_[p]->shape.ElementCount() == lanes) {
            preds_[at->second].push_back(p);
          }
        }
        up.nearest = Rotations{at->second};
      }
      flow[instr] = std::move(up);
    }
    std::vector<Flow> root;
    const HloInstruction* r = computation->root;
    if (r != nullptr && r->opcode == Opcode::kTuple) {
      for (const HloInstruction* operand : r->operands) root.push_back(of(operand));
    } else if (r != nullptr) {
      root.push_back(of(r));
    }
    return root;
  }

  int Find(std::vector<int>& parent, int i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  }

  // Per element of the anchor's fused root, the draws (components) it is computed from.
  std::vector<std::vector<int>> Reaching(const HloComputation* computation,
                                         const std::vector<std::vector<int>>& parameters,
                                         const std::vector<int>& component, int depth) {
    std::vector<std::vector<int>> result;
    if (computation == nullptr || depth > kMaxFusionNesting) return result;
    std::unordered_map<const HloInstruction*, std::vector<int>> from;
    for (const HloInstruction* instr : PostOrder(computation)) {
      std::vector<int>& mine = from[instr];
      if (instr->opcode == Opcode::kParameter && instr->parameter_number >= 0 &&
          instr->parameter_number < static_cast<int64_t>(parameters.size())) {
        mine = parameters[instr->parameter_number];
      }
      if (instr->opcode == Opcode::kFusion) {
        std::vector<std::vector<int>> seeds;
        for (const HloInstruction* operand : instr->operands) seeds.push_back(from[operand]);
        for (const auto& part : Reaching(instr->Called("calls"), seeds, component, depth + 1)) {
          Merge(mine, part);
        }
      } else {
        for (const HloInstruction* operand : instr->operands) {
          if (operand != instr) Merge(mine, from[operand]);
        }
      }
      const auto rotation = index_.find(instr);
      if (rotation != index_.end()) Merge(mine, std::vector<int>{component[rotation->second]});
    }
    const HloInstruction* r = computation->root;
    if (r != nullptr && r->opcode == Opcode::kTuple) {
      for (const HloInstruction* operand : r->operands) result.push_back(from[operand]);
    } else if (r != nullptr) {
      result.push_back(from[r]);
    }
    return result;
  }

  std::vector<ThreefryDraw> Draws(int min_rounds) {
    const int n = static_cast<int>(rotations_.size());
    std::vector<int> depth(n, 0);
    std::vector<bool> continued(n, false);
    std::vector<int> parent(n);
    for (int i = 0; i < n; ++i) parent[i] = i;
    // Upstream rotations were found first, so index order is a topological order.
    for (int i = 0; i < n; ++i) {
      for (const int p : preds_[i]) {
        if (p < i) depth[i] = std::max(depth[i], depth[p]);
        continued[p] = true;
        parent[Find(parent, i)] = Find(parent, p);
      }
      ++depth[i];
    }
    std::vector<int> component(n);
    for (int i = 0; i < n; ++i) component[i] = Find(parent, i);
    // Per component: its chosen chain end, the longest chain and its holders.
    const auto earlier = [&](int a, int b) {
      return std::make_pair(holders_[a]->id, rotations_[a]->id) <
             std::make_pair(holders_[b]->id, rotations_[b]->id);
    };
    std::map<int, int> end_of;  // component -> rotation
    std::map<int, int> rounds;
    for (int i = 0; i < n; ++i) {
      if (continued[i] || depth[i] < min_rounds) continue;
      const auto [at, inserted] = end_of.try_emplace(component[i], i);
      if (!inserted && earlier(i, at->second)) at->second = i;
      rounds[component[i]] = std::max(rounds[component[i]], depth[i]);
    }
    std::map<int, std::set<const HloInstruction*>> holders;
    std::map<int, std::vector<const HloInstruction*>> members;
    for (int i = 0; i < n; ++i) {
      if (end_of.count(component[i]) == 0) continue;
      holders[component[i]].insert(holders_[i]);
      members[component[i]].push_back(rotations_[i]);
    }
    std::unordered_map<const HloInstruction*, std::vector<std::vector<int>>> reaching;
    std::vector<ThreefryDraw> draws;
    for (const auto& [c, end] : end_of) {
      ThreefryDraw draw;
      draw.last_rotation = rotations_[end];
      draw.lanes = &rotations_[end]->shape.get();
      draw.rounds = rounds[c];
      draw.anchor = holders_[end];
      draw.value_number = numbers_[end];
      draw.rotations = std::move(members[c]);
      for (const HloInstruction* holder : holders[c]) {
        if (holder != draw.anchor) draw.other_holders.push_back(holder);
      }
      std::sort(draw.other_holders.begin(), draw.other_holders.end(),
                [](const HloInstruction* a, const HloInstruction* b) { return a->id < b->id; });
      if (draw.anchor->opcode == Opcode::kFusion) {
        auto found = reaching.find(draw.anchor);
        if (found == reaching.end()) {
          found = reaching
                      .emplace(draw.anchor,
                               Reaching(draw.anchor->Called("calls"),
                                        std::vector<std::vector<int>>(draw.anchor->operands.size()),
                                        component, 0))
                      .first;
        }
        for (size_t e = 0; e < found->second.size(); ++e) {
          const std::vector<int>& from = found->second[e];
          if (std::binary_search(from.begin(), from.end(), c)) {
            draw.outputs.push_back(static_cast<int64_t>(e));
          }
        }
      } else {
        draw.outputs.push_back(0);
      }
      draws.push_back(std::move(draw));
    }
    std::sort(draws.begin(), draws.end(), [](const ThreefryDraw& a, const ThreefryDraw& b) {
      return std::make_pair(a.anchor->id, a.last_rotation->id) <
             std::make_pair(b.anchor->id, b.last_rotation->id);
    });
    // Copies of one hash (XLA duplicates a hash into each consumer fusion): the same value
    // computed again from the same instruction of the program (its op_name). The first keeps the
    // draw; the copies' fusions hold its rounds. A remat recomputation draws the same value
    // again from another instruction (the backward's op_name): a draw of its own.
    std::map<std::pair<uint64_t, std::string_view>, size_t> first;
    std::vector<ThreefryDraw> kept;
    for (ThreefryDraw& draw : draws) {
      const auto [at, inserted] = first.try_emplace(
          std::make_pair(draw.value_number,
                         std::string_view(draw.last_rotation->metadata().op_name)),
          kept.size());
      if (inserted) {
        kept.push_back(std::move(draw));
        continue;
      }
      ThreefryDraw& original = kept[at->second];
      ++original.copies;
      original.other_holders.push_back(draw.anchor);
      original.other_holders.insert(original.other_holders.end(), draw.other_holders.begin(),
                                    draw.other_holders.end());
      original.rotations.insert(original.rotations.end(), draw.rotations.begin(),
                                draw.rotations.end());
    }
    for (ThreefryDraw& draw : kept) {
      std::sort(draw.other_holders.begin(), draw.other_holders.end(),
                [](const HloInstruction* a, const HloInstruction* b) { return a->id < b->id; });
      draw.other_holders.erase(std::unique(draw.other_holders.begin(), draw.other_holders.end()),
                               draw.other_holders.end());
      draw.other_holders.erase(
          std::remove(draw.other_holders.begin(), draw.other_holders.end(), draw.anchor),
          draw.other_holders.end());
    }
    return kept;
  }

  // Fusions nest a few levels (a loop fusion inside an output fusion); hostile input may nest
  // more than the stack should follow.
  static constexpr int kMaxFusionNesting = 64;

  const ir::HloModule& module_;
  std::vector<const HloInstruction*> rotations_;
  std::vector<const HloInstruction*> holders_;  // per rotation
  std::vector<std::vector<int>> preds_;         // same-size rotations nearest upstream
  std::vector<uint64_t> numbers_;               // per rotation: its value number
  std::unordered_map<const HloInstruction*, int> index_;
};

}  // namespace

std::vector<ThreefryDraw> FindThreefryDraws(const ir::HloModule& module, int min_rounds) {
  return DrawFinder(module).Run(min_rounds);
}

std::vector<std::vector<int64_t>> RootParameters(const HloComputation* computation) {
  std::vector<std::vector<int64_t>> result;
  if (computation == nullptr) return result;
  const std::vector<const HloInstruction*> order = PostOrder(computation);
  std::unordered_map<const HloInstruction*, std::vector<int64_t>> reads;
  for (const HloInstruction* instr : order) {
    std::vector<int64_t>& mine = reads[instr];
    if (instr->opcode == Opcode::kParameter) mine.push_back(instr->parameter_number);
    for (const HloInstruction* operand : instr->operands) {
      const auto found = reads.find(operand);
      if (found != reads.end() && found->first != instr) Merge(mine, found->second);
    }
  }
  for (const HloInstruction* element : RootElements(computation)) {
    const auto found = reads.find(element);
    result.push_back(found == reads.end() ? std::vector<int64_t>{} : found->second);
  }
  return result;
}

}  // namespace spmdsim::passes

namespace spmdsim::passes {
namespace {

bool IsParityXor(const HloInstruction* instr) {
  if (instr->opcode != Opcode::kXor || instr->operands.size() != 2) return false;
  for (const HloInstruction* operand : instr->operands) {
    const std::optional<int64_t> value = ScalarConstant(operand);
    if (value && *value == kThreefryParity) return true;
  }
  return false;
}

// Parameter numbers of `computation` the parity words inside it (nested fusions included) are
// computed from.
std::vector<int64_t> KeyParameters(const HloComputation* computation, int depth) {
  std::vector<int64_t> parameters;
  if (computation == nullptr || depth > 16) return parameters;
  std::vector<const HloInstruction*> stack;
  for (const HloInstruction* instr : computation->instructions) {
    if (IsParityXor(instr)) {
      for (const HloInstruction* operand : instr->operands) {
        if (!ScalarConstant(operand)) stack.push_back(operand);
      }
    } else if (instr->opcode == Opcode::kFusion) {
      for (const int64_t p : KeyParameters(instr->Called("calls"), depth + 1)) {
        if (p >= 0 && p < static_cast<int64_t>(instr->operands.size())) {
          stack.push_back(instr->operands[p]);
        }
      }
    }
  }
  std::unordered_map<const HloInstruction*, bool> seen;
  while (!stack.empty()) {
    const HloInstruction* instr = stack.back();
    stack.pop_back();
    if (!seen.emplace(instr, true).second) continue;
    if (instr->opcode == Opcode::kParameter) {
      parameters.push_back(instr->parameter_number);
      continue;
    }
    for (const HloInstruction* operand : instr->operands) stack.push_back(operand);
  }
  std::sort(parameters.begin(), parameters.end());
  parameters.erase(std::unique(parameters.begin(), parameters.end()), parameters.end());
  return parameters;
}

}  // namespace

std::vector<const HloInstruction*> ThreefryKeyOperands(const HloInstruction* fusion) {
  std::vector<const HloInstruction*> keys;
  if (fusion == nullptr || fusion->opcode != Opcode::kFusion) return keys;
  for (const int64_t p : KeyParameters(fusion->Called("calls"), 0)) {
    if (p >= 0 && p < static_cast<int64_t>(fusion->operands.size())) {
      keys.push_back(fusion->operands[p]);
    }
  }
  for (const HloInstruction* operand : fusion->operands) {
    if (IsParityXor(operand) && std::find(keys.begin(), keys.end(), operand) == keys.end()) {
      keys.push_back(operand);
    }
  }
  return keys;
}

}  // namespace spmdsim::passes
