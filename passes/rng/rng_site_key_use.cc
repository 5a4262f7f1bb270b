// Whether a site's words are keys: what it draws is read only as other sites' keys (split and
// fold_in under every PRNG implementation, unsafe_rbg's included, which derives keys with
// rng-bit-generator itself). Followed through calls, loops, remat barriers and tuples.
#include <set>
#include <utility>
#include <vector>

#include "passes/rng/rng_site_finder.h"

namespace spmdsim::passes::rng_internal {

namespace {

// Key words are unsigned integers; random values used as numbers or masks are not.
bool HoldsOnlyWords(const ir::Shape& shape) {
  if (shape.IsTuple()) {
    for (const ir::Shape& element : shape.tuple_shapes()) {
      if (!HoldsOnlyWords(element)) return false;
    }
    return true;
  }
  return shape.IsArray() && (shape.element_type() == PrimitiveType::kU32 ||
                             shape.element_type() == PrimitiveType::kU64);
}

// Where a site takes its key in: its anchor (a generator's state operand, a fused hash), the
// fusions holding its first rounds, its key inputs, or its loop's initial state.
bool TakesKeysAt(const SiteWork& work, const HloInstruction* instr) {
  if (instr == work.anchor) return true;
  if (std::find(work.holders.begin(), work.holders.end(), instr) != work.holders.end()) {
    return true;
  }
  if (std::find(work.keys.begin(), work.keys.end(), instr) != work.keys.end()) return true;
  return work.anchor->opcode == Opcode::kWhile && !work.anchor->operands.empty() &&
         LoopInitTuple(work.anchor->operands[0]) == instr;
}

}  // namespace

bool RngSiteFinder::FeedsOnlyKeys(const SiteWork& work, int self) {
  constexpr size_t kMaxVisits = 4096;
  // (instruction, element): the words are that instruction's value, or with element >= 0 that
  // element of its tuple (a key carried through a remat barrier, a loop or a call's arguments).
  using Place = std::pair<const HloInstruction*, int64_t>;
  std::vector<Place> stack;
  std::set<Place> seen;
  // A call reads its operand as its callee's parameter: a module before optimizations passes the
  // key into the JAX function that draws with it (a callee that several call sites share).
  const auto push_reader = [&](const HloInstruction* value, int64_t element,
                               const HloInstruction* user) {
    const HloComputation* callee = user->opcode == Opcode::kCall    ? user->Called("to_apply")
                                   : user->opcode == Opcode::kWhile ? user->Called("body")
                                                                    : nullptr;
    for (size_t k = 0; k < user->operands.size(); ++k) {
      if (user->operands[k] != value) continue;
      if (callee != nullptr) {
        if (k < callee->parameters.size() && callee->parameters[k] != nullptr) {
          stack.emplace_back(callee->parameters[k], element);
        }
        if (user->opcode == Opcode::kWhile) stack.emplace_back(user, element);
      } else if (user->opcode == Opcode::kTuple) {
        if (element < 0)
          stack.emplace_back(user, static_cast<int64_t>(k));
        else
          return false;  // a tuple of tuples: not followed
      } else if (element < 0 || user->opcode == Opcode::kOptimizationBarrier) {
        stack.emplace_back(user, element);
      } else if (user->opcode == Opcode::kGetTupleElement) {
        if (user->tuple_index == element) stack.emplace_back(user, -1);
      } else {
        return false;
      }
    }
    return true;
  };
  for (const HloInstruction* member : work.members) {
    for (const HloInstruction* user : member->users) {
      if (work.members.count(user) == 0 && ReadsSiteValue(work, member, user) &&
          !push_reader(member, -1, user)) {
        return false;
      }
    }
  }
  bool keys = false;
  while (!stack.empty()) {
    const auto [instr, element] = stack.back();
    stack.pop_back();
    if (!seen.insert({instr, element}).second) continue;
    if (seen.size() > kMaxVisits) return false;
    const auto other = site_of_.find(instr);
    if ((other != site_of_.end() && other->second != self &&
         TakesKeysAt(sites_[other->second], instr)) ||
        shared_anchors_.count(instr) != 0) {
      keys = true;
      continue;
    }
    if (work.members.count(instr) != 0) continue;
    const bool entry_result = instr->is_root && instr->parent == module_.entry;
    // A called computation's result is its callers' (a JAX function returning a key).
    if (instr->is_root && !entry_result && instr->parent != nullptr) {
      for (const HloInstruction* caller : instr->parent->callers) {
        if (caller->opcode != Opcode::kCall && caller->opcode != Opcode::kWhile) return false;
        stack.emplace_back(caller, element);
      }
    }
    if (element >= 0) {
      // An element of a tuple: followed to where it is taken out again; returned as the
      // program's result (the next step's key) it is done.
      if (entry_result) continue;
      for (const HloInstruction* user : instr->users) {
        if (!push_reader(instr, element, user)) return false;
      }
      continue;
    }
    // Key schedules are computed from keys alone and stay words (XLA:TPU fuses their adds and
    // regroupings apart from the hash); what also reads data, or turns the words into numbers
    // or masks, uses them as random bits.
    // The entry's result: the words are returned (the next step's key).
    if (entry_result && instr->opcode == Opcode::kTuple) continue;
    if (!HoldsOnlyWords(instr->shape) || !RandomOnly(instr)) return false;
    // Returned, or dead (a module before optimizations keeps what nothing reads).
    if (entry_result || instr->users.empty()) continue;
    for (const HloInstruction* user : instr->users) {
      if (!push_reader(instr, -1, user)) return false;
    }
  }
  return keys;
}

}  // namespace spmdsim::passes::rng_internal
