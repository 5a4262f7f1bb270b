// Where a site's values flow (rng_value_flow.h).
#include "passes/rng/rng_value_flow.h"

#include <set>

#include "passes/rng/threefry_hashes.h"

namespace spmdsim::passes::rng_internal {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;
using ir::PrimitiveType;

namespace {

// The done that ends the async pair `start` begins.
const HloInstruction* DoneOf(const HloInstruction& start) {
  for (const HloInstruction* user : start.users) {
    if (user->opcode == Opcode::kAllGatherDone || user->opcode == Opcode::kCollectivePermuteDone ||
        user->opcode == Opcode::kAsyncDone) {
      return user;
    }
  }
  return nullptr;
}

}  // namespace

bool IsMovingCollective(Opcode opcode) {
  return opcode == Opcode::kAllGather || opcode == Opcode::kCollectivePermute ||
         opcode == Opcode::kAllToAll;
}

bool IsCollectiveStart(const HloInstruction& instr) {
  if (instr.opcode == Opcode::kAllGatherStart || instr.opcode == Opcode::kCollectivePermuteStart) {
    return true;
  }
  // An async pair wrapping an all-gather, collective-permute or all-to-all.
  const HloComputation* wrapped =
      instr.opcode == Opcode::kAsyncStart ? instr.Called("calls") : nullptr;
  return wrapped != nullptr && wrapped->root != nullptr &&
         IsMovingCollective(wrapped->root->opcode);
}

// A fusion that only moves data (slices, bitcasts, concatenations of its parameters).
bool MovesDataOnly(const HloInstruction& instr) {
  if (instr.opcode != Opcode::kFusion) return false;
  const HloComputation* fused = instr.Called("calls");
  if (fused == nullptr) return false;
  for (const HloInstruction* i : fused->instructions) {
    switch (i->opcode) {
      case Opcode::kParameter:
      case Opcode::kSlice:
      case Opcode::kDynamicSlice:
      case Opcode::kBitcast:
      case Opcode::kReshape:
      case Opcode::kCopy:
      case Opcode::kConcatenate:
      case Opcode::kConstant:
        break;
      default:
        return false;
    }
  }
  return true;
}

// Where the random values a collective moves are read: the users of the part of its result
// that holds operand `operand` (a combined collective gathers several sites' values, one tuple
// element each), through its done, get-tuple-elements, bitcasts, copies and data-moving fusions.
void ReadersPastCollective(const HloInstruction& collective, int64_t operand,
                           std::vector<const HloInstruction*>& out) {
  const HloInstruction* result = &collective;
  if (!IsMovingCollective(collective.opcode)) result = DoneOf(collective);
  if (result == nullptr) return;
  const bool per_operand = collective.operands.size() > 1 && result->shape.IsTuple();
  std::vector<const HloInstruction*> frontier;
  for (const HloInstruction* user : result->users) {
    if (!per_operand) {
      frontier.push_back(user);
    } else if (user->opcode == Opcode::kGetTupleElement && user->tuple_index == operand) {
      frontier.push_back(user);
    }
  }
  std::set<const HloInstruction*> visited;
  while (!frontier.empty()) {
    const HloInstruction* at = frontier.back();
    frontier.pop_back();
    if (!visited.insert(at).second || visited.size() > 4096) continue;
    const bool pass = at->opcode == Opcode::kGetTupleElement || at->opcode == Opcode::kBitcast ||
                      at->opcode == Opcode::kCopy || at->opcode == Opcode::kReshape ||
                      MovesDataOnly(*at);
    if (!pass) {
      out.push_back(at);
      continue;
    }
    for (const HloInstruction* user : at->users) frontier.push_back(user);
  }
}

// Whether `instr` hands its operand's values on without computing from them: a change of shape
// or layout, a copy (also into another memory space), a data-moving fusion, or a reduce over
// dimensions of extent 1 only (its output has as many elements as its input: each element is
// reduced with the init value alone; XLA:TPU ends its all-to-all of counters with one).
bool HandsValuesOn(const HloInstruction& instr) {
  switch (instr.opcode) {
    case Opcode::kGetTupleElement:
    case Opcode::kBitcast:
    case Opcode::kCopy:
    case Opcode::kCopyStart:
    case Opcode::kCopyDone:
    case Opcode::kReshape:
    case Opcode::kTranspose:
      return true;
    case Opcode::kReduce:
      return instr.operands.size() == 2 && instr.shape.IsArray() &&
             instr.operands[0]->shape.IsArray() &&
             instr.shape.ElementCount() == instr.operands[0]->shape.ElementCount();
    default:
      return MovesDataOnly(instr);
  }
}

// The instructions that compute from what `reader` reads (it among them when it computes),
// found past the instructions and collectives that only hand values on. `stop` ends the walk at
// an instruction another analysis owns (a site's member). Each comes with the first collective
// the values went through, or null.
void ComputingReaders(const HloInstruction* reader, const HloInstruction* via,
                      const std::function<bool(const HloInstruction*)>& stop,
                      std::vector<std::pair<const HloInstruction*, const HloInstruction*>>& out) {
  std::vector<std::pair<const HloInstruction*, const HloInstruction*>> frontier{{reader, via}};
  std::set<const HloInstruction*> visited;
  while (!frontier.empty()) {
    const auto [at, through] = frontier.back();
    frontier.pop_back();
    if (!visited.insert(at).second || visited.size() > 4096) continue;
    if (stop(at) || !HandsValuesOn(*at) || at->users.empty()) {
      out.emplace_back(at, through);
      continue;
    }
    for (const HloInstruction* user : at->users) {
      if (!IsMovingCollective(user->opcode) && !IsCollectiveStart(*user)) {
        frontier.emplace_back(user, through);
        continue;
      }
      std::vector<const HloInstruction*> past;
      for (size_t k = 0; k < user->operands.size(); ++k) {
        if (user->operands[k] == at) ReadersPastCollective(*user, static_cast<int64_t>(k), past);
      }
      if (past.empty()) out.emplace_back(user, through);
      for (const HloInstruction* next : past) frontier.emplace_back(next, through ? through : user);
    }
  }
}

// Whether `instr` holds a mask the site computed: a pred array from a compare (alone or in a
// fusion), handed on through copies and reshapes.
bool ComputesMask(const HloInstruction& instr) {
  if (!instr.shape.IsArray() || instr.shape.element_type() != PrimitiveType::kPred) return false;
  const HloInstruction* at = &instr;
  for (int step = 0; step < 64 && at != nullptr; ++step) {
    if (at->opcode == Opcode::kCompare) return true;
    if (at->opcode == Opcode::kFusion) {
      bool compare = false;
      ForEachNested(at->Called("calls"),
                    [&](const HloInstruction* i) { compare |= i->opcode == Opcode::kCompare; });
      return compare;
    }
    if (!HandsValuesOn(*at) || at->operands.empty()) return false;
    at = at->operands[0];
  }
  return false;
}

// ComputingReaders of `reader` reading `value`, through the collective `reader` may be.
void ComputingReadersOf(const HloInstruction* value, const HloInstruction* reader,
                        const std::function<bool(const HloInstruction*)>& stop,
                        std::vector<std::pair<const HloInstruction*, const HloInstruction*>>& out) {
  if (!IsMovingCollective(reader->opcode) && !IsCollectiveStart(*reader)) {
    ComputingReaders(reader, nullptr, stop, out);
    return;
  }
  std::vector<const HloInstruction*> past;
  for (size_t k = 0; k < reader->operands.size(); ++k) {
    if (reader->operands[k] == value) ReadersPastCollective(*reader, static_cast<int64_t>(k), past);
  }
  if (past.empty()) out.emplace_back(reader, nullptr);
  for (const HloInstruction* next : past) ComputingReaders(next, reader, stop, out);
}

// A consumer that computes the dropout mask (a pred array) for a later instruction to select
// with: the dropout ends there.
bool SelectsWithMask(const HloInstruction& mask) {
  if (!mask.shape.IsArray() || mask.shape.element_type() != PrimitiveType::kPred) return false;
  std::vector<std::pair<const HloInstruction*, const HloInstruction*>> readers;
  for (const HloInstruction* user : mask.users) {
    ComputingReaders(
        user, nullptr, [](const HloInstruction*) { return false; }, readers);
  }
  for (const auto& [user, via] : readers) {
    bool select = user->opcode == Opcode::kSelect;
    if (user->opcode == Opcode::kFusion) {
      ForEachNested(user->Called("calls"),
                    [&](const HloInstruction* i) { select |= i->opcode == Opcode::kSelect; });
    }
    if (select) return true;
  }
  return false;
}

// Whether `value` carries what a member of the site computed: it is one, or it is handed on from
// one through reshapes, copies and moving collectives.
bool FromSite(const HloInstruction* value,
              const std::unordered_set<const HloInstruction*>& members) {
  std::vector<const HloInstruction*> frontier{value};
  std::set<const HloInstruction*> visited;
  while (!frontier.empty()) {
    const HloInstruction* at = frontier.back();
    frontier.pop_back();
    if (!visited.insert(at).second || visited.size() > 256) continue;
    if (members.count(at) != 0) return true;
    const bool moves = HandsValuesOn(*at) || IsMovingCollective(at->opcode) ||
                       IsCollectiveStart(*at) || at->opcode == Opcode::kAllGatherDone ||
                       at->opcode == Opcode::kCollectivePermuteDone ||
                       at->opcode == Opcode::kAsyncDone || at->opcode == Opcode::kTuple;
    if (!moves) continue;
    for (const HloInstruction* operand : at->operands) frontier.push_back(operand);
  }
  return false;
}

// The largest select in `consumer` whose predicate is computed (through elementwise ops) by a
// compare of values read from the operands `from_site` marks: a dropout keeps or zeroes each
// element of its input by the random bits, so the select has the random tensor's shape, wherever
// the consumer reduces or reshapes the result afterwards. Null: none.
const ir::Shape* DropoutSelectShape(const HloInstruction& consumer,
                                    const std::function<bool(const HloInstruction*)>& from_site) {
  std::vector<const HloInstruction*> body;
  std::set<const HloInstruction*> bits;  // computed from the site's values
  if (consumer.opcode == Opcode::kFusion) {
    const HloComputation* fused = consumer.Called("calls");
    if (fused == nullptr) return nullptr;
    body.assign(fused->instructions.begin(), fused->instructions.end());  // operands first
    for (const HloInstruction* i : body) {
      if (i->opcode == Opcode::kParameter && i->parameter_number >= 0 &&
          i->parameter_number < static_cast<int64_t>(consumer.operands.size()) &&
          from_site(consumer.operands[i->parameter_number])) {
        bits.insert(i);
      }
    }
  } else {
    return nullptr;
  }
  std::set<const HloInstruction*> masks;  // pred values from a compare of bits
  const ir::Shape* best = nullptr;
  for (const HloInstruction* i : body) {
    if (i->opcode == Opcode::kParameter) continue;
    bool reads_bits = false;
    bool reads_mask = false;
    for (const HloInstruction* operand : i->operands) {
      reads_bits |= bits.count(operand) != 0;
      reads_mask |= masks.count(operand) != 0;
    }
    if (i->opcode == Opcode::kSelect && !i->operands.empty() && masks.count(i->operands[0]) != 0 &&
        i->shape.IsArray() && (best == nullptr || i->shape.ElementCount() > best->ElementCount())) {
      best = &i->shape.get();
    }
    if (reads_bits) bits.insert(i);
    const bool pred = i->shape.IsArray() && i->shape.element_type() == PrimitiveType::kPred;
    if (pred && ((i->opcode == Opcode::kCompare && reads_bits) ||
                 (reads_mask && i->opcode != Opcode::kSelect))) {
      masks.insert(i);
    }
  }
  return best;
}

}  // namespace spmdsim::passes::rng_internal
