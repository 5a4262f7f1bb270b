#include "passes/loop_trip_count.h"

#include <charconv>
#include <nlohmann/json.hpp>
#include <string_view>

#include "ir/checked_math.h"
#include "ir/limits.h"
#include "ir/parse_int.h"

namespace spmdsim::passes {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;

namespace {

// Chains of these are looked through: they keep an integer scalar's value.
bool KeepsValue(const HloInstruction* instr) {
  return instr->opcode == Opcode::kCopy || instr->opcode == Opcode::kConvert ||
         instr->opcode == Opcode::kBitcast || instr->opcode == Opcode::kReshape ||
         instr->opcode == Opcode::kCopyStart || instr->opcode == Opcode::kCopyDone;
}

// Bounded: a malformed module may chain copies; 64 is far beyond anything XLA writes.
constexpr int kMaxLookThrough = 64;

// A fused parameter stands for the fusion's operand of the same number; anything else is itself.
const HloInstruction* OutsideFusion(const HloInstruction* instr, const HloInstruction* fusion) {
  if (fusion == nullptr || instr->opcode != Opcode::kParameter) return instr;
  const auto n = static_cast<size_t>(instr->parameter_number);
  return n < fusion->operands.size() ? fusion->operands[n] : nullptr;
}

// The operand a parameter of a called computation receives, when one call site gives it (XLA:CPU
// wraps loops in calls); nullptr otherwise.
const HloInstruction* CallerOperand(const HloInstruction* parameter) {
  const HloComputation* computation = parameter->parent;
  if (computation == nullptr || computation->is_entry || computation->callers.size() != 1) {
    return nullptr;
  }
  const HloInstruction* caller = computation->callers.front();
  const auto n = static_cast<size_t>(parameter->parameter_number);
  if (caller->opcode != Opcode::kCall || n >= caller->operands.size()) return nullptr;
  return caller->operands[n];
}

// Looks through value-keeping instructions, fused parameters of `fusion` and parameters of
// wrapper calls.
const HloInstruction* Through(const HloInstruction* instr, const HloInstruction* fusion) {
  for (int i = 0; instr != nullptr && i < kMaxLookThrough; ++i) {
    const HloInstruction* outside = OutsideFusion(instr, fusion);
    if (outside != instr) {
      instr = outside;
      fusion = nullptr;
      continue;
    }
    if (!KeepsValue(instr) || instr->operands.empty()) return instr;
    instr = instr->operands[0];
  }
  return nullptr;
}

// Through(), and beyond it the caller's operand for a wrapper's parameter and the element a
// get-tuple-element takes from a tuple instruction: where a loop's initial values come from.
const HloInstruction* Origin(const HloInstruction* instr) {
  for (int i = 0; instr != nullptr && i < kMaxLookThrough; ++i) {
    instr = Through(instr, nullptr);
    if (instr == nullptr) return nullptr;
    if (instr->opcode == Opcode::kParameter) {
      const HloInstruction* operand = CallerOperand(instr);
      if (operand == nullptr) return instr;
      instr = operand;
    } else if (instr->opcode == Opcode::kGetTupleElement && !instr->operands.empty()) {
      const HloInstruction* tuple = Origin(instr->operands[0]);
      if (tuple == nullptr || tuple->opcode != Opcode::kTuple || instr->tuple_index < 0 ||
          static_cast<size_t>(instr->tuple_index) >= tuple->operands.size()) {
        return instr;
      }
      instr = tuple->operands[static_cast<size_t>(instr->tuple_index)];
    } else {
      return instr;
    }
  }
  return nullptr;
}

// An integer scalar constant, behind value-keeping instructions.
std::optional<int64_t> Constant(const HloInstruction* instr, const HloInstruction* fusion) {
  instr = Through(instr, fusion);
  if (instr == nullptr || instr->opcode != Opcode::kConstant || instr->shape.rank() != 0) {
    return std::nullopt;
  }
  return ir::ParseInt64(instr->payload);
}

// Element k of `computation`'s parameter 0: the index k, or -1.
int64_t StateIndex(const HloInstruction* instr, const HloInstruction* fusion,
                   const HloComputation* computation) {
  instr = Through(instr, fusion);
  if (instr == nullptr || instr->opcode != Opcode::kGetTupleElement || instr->operands.empty()) {
    return -1;
  }
  const HloInstruction* tuple = instr->operands[0];
  if (tuple->opcode != Opcode::kParameter || tuple->parameter_number != 0) return -1;
  if (computation->parameters.empty() || computation->parameters[0] != tuple) return -1;
  return instr->tuple_index;
}

// The root of a computation, or of the fusion it ends in: (instruction, enclosing fusion).
std::pair<const HloInstruction*, const HloInstruction*> RootOf(const HloComputation* computation) {
  const HloInstruction* root = computation->root;
  if (root != nullptr && root->opcode == Opcode::kFusion) {
    if (const HloComputation* fused = root->Called("calls"); fused && fused->root) {
      return {fused->root, root};
    }
  }
  return {root, nullptr};
}

// Element `index` of the initial state, as a constant.
std::optional<int64_t> InitialValue(const HloInstruction& loop, int64_t index) {
  if (loop.operands.empty() || index < 0) return std::nullopt;
  const HloInstruction* init = Origin(loop.operands[0]);
  if (init == nullptr || init->opcode != Opcode::kTuple ||
      static_cast<size_t>(index) >= init->operands.size()) {
    return std::nullopt;
  }
  return Constant(Origin(init->operands[static_cast<size_t>(index)]), nullptr);
}

// The body's new value of element k: element k + step (or - step), as the step.
std::optional<int64_t> Step(const HloComputation* body, int64_t index) {
  const HloInstruction* root = body->root;
  if (root == nullptr || root->opcode != Opcode::kTuple ||
      static_cast<size_t>(index) >= root->operands.size()) {
    return std::nullopt;
  }
  const HloInstruction* update = root->operands[static_cast<size_t>(index)];
  const HloInstruction* fusion = nullptr;
  update = Through(update, nullptr);
  if (update != nullptr && update->opcode == Opcode::kFusion) {
    const HloComputation* fused = update->Called("calls");
    if (fused == nullptr || fused->root == nullptr) return std::nullopt;
    fusion = update;
    update = fused->root;
  }
  if (update == nullptr || update->operands.size() != 2) return std::nullopt;
  const HloInstruction* a = update->operands[0];
  const HloInstruction* b = update->operands[1];
  if (update->opcode == Opcode::kAdd) {
    if (StateIndex(a, fusion, body) == index) return Constant(b, fusion);
    if (StateIndex(b, fusion, body) == index) return Constant(a, fusion);
  } else if (update->opcode == Opcode::kSubtract && StateIndex(a, fusion, body) == index) {
    const std::optional<int64_t> step = Constant(b, fusion);
    if (step && *step != INT64_MIN) return -*step;
  }
  return std::nullopt;
}

// Element `index` is passed through the body unchanged.
bool Invariant(const HloComputation* body, int64_t index) {
  const HloInstruction* root = body->root;
  return root != nullptr && root->opcode == Opcode::kTuple &&
         static_cast<size_t>(index) < root->operands.size() &&
         StateIndex(root->operands[static_cast<size_t>(index)], nullptr, body) == index;
}

// The bound: a constant, or an unchanged element of the state with a constant initial value.
std::optional<int64_t> Bound(const HloInstruction& loop, const HloInstruction* operand,
                             const HloInstruction* fusion, const HloComputation* condition,
                             const HloComputation* body) {
  if (const std::optional<int64_t> c = Constant(operand, fusion)) return c;
  const int64_t index = StateIndex(operand, fusion, condition);
  if (index < 0 || !Invariant(body, index)) return std::nullopt;
  return InitialValue(loop, index);
}

__extension__ using Wide = __int128;  // exact for any two int64 values' difference

// Iterations of `i = init; while (i <dir> bound) i += step`, exactly.
std::optional<int64_t> Iterations(std::string_view direction, int64_t init, int64_t bound,
                                  int64_t step) {
  const Wide distance = static_cast<Wide>(bound) - init;
  Wide trips = 0;
  if (direction == "LT" || direction == "LE") {
    if (step <= 0) return std::nullopt;  // never ends, or a pattern we do not know
    const Wide reach = distance + (direction == "LE" ? 1 : 0);
    trips = reach <= 0 ? 0 : (reach + step - 1) / step;
  } else if (direction == "GT" || direction == "GE") {
    if (step >= 0) return std::nullopt;
    const Wide reach = -distance + (direction == "GE" ? 1 : 0);
    trips = reach <= 0 ? 0 : (reach + (-static_cast<Wide>(step)) - 1) / -static_cast<Wide>(step);
  } else if (direction == "NE") {
    if (step == 0 || distance % step != 0 || distance / step < 0) return std::nullopt;
    trips = distance / step;
  } else {
    return std::nullopt;
  }
  return trips > INT64_MAX ? INT64_MAX : static_cast<int64_t>(trips);
}

std::string_view Mirrored(std::string_view direction) {
  if (direction == "LT") return "GT";
  if (direction == "GT") return "LT";
  if (direction == "LE") return "GE";
  if (direction == "GE") return "LE";
  return direction;
}

}  // namespace

std::optional<int64_t> KnownTripCount(const HloInstruction& loop) {
  if (loop.backend_config().find("known_trip_count") == std::string_view::npos) return std::nullopt;
  if (ir::JsonNestingDepth(loop.backend_config()) > ir::kMaxJsonNesting) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(loop.backend_config(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  const auto trip = j.find("known_trip_count");
  if (trip == j.end() || !trip->is_object()) return std::nullopt;
  const auto n = trip->find("n");
  if (n == trip->end()) return std::nullopt;
  if (n->is_string()) return ir::ParseInt64(n->get<std::string>());
  if (n->is_number_integer()) return n->get<int64_t>();
  return std::nullopt;
}

std::optional<int64_t> InductionTripCount(const HloInstruction& loop) {
  const HloComputation* condition = loop.Called("condition");
  const HloComputation* body = loop.Called("body");
  if (condition == nullptr || body == nullptr) return std::nullopt;
  const auto [compare, fusion] = RootOf(condition);
  if (compare == nullptr || compare->opcode != Opcode::kCompare || compare->operands.size() != 2) {
    return std::nullopt;
  }
  std::string_view direction = compare->FindAttribute("direction");
  const HloInstruction* lhs = compare->operands[0];
  const HloInstruction* rhs = compare->operands[1];
  // The induction variable is the compared element the body steps; the other side the bound.
  for (int side = 0; side < 2; ++side) {
    const HloInstruction* variable = side == 0 ? lhs : rhs;
    const HloInstruction* other = side == 0 ? rhs : lhs;
    const int64_t index = StateIndex(variable, fusion, condition);
    if (index < 0) continue;
    const std::optional<int64_t> step = Step(body, index);
    if (!step) continue;
    const std::optional<int64_t> init = InitialValue(loop, index);
    const std::optional<int64_t> bound = Bound(loop, other, fusion, condition, body);
    if (!init || !bound) return std::nullopt;
    return Iterations(side == 0 ? direction : Mirrored(direction), *init, *bound, *step);
  }
  return std::nullopt;
}

int64_t WhileTripCount(const HloInstruction& loop) {
  if (const std::optional<int64_t> n = KnownTripCount(loop); n && *n >= 0) return *n;
  if (const std::optional<int64_t> n = InductionTripCount(loop)) return *n;
  return -1;
}

ComputationExecutions ComputationExecutionCounts(const ir::HloModule& module) {
  // Callers first over the module's call graph: a computation's count is final before any
  // computation it calls is reached, so each is summed once from its call sites.
  ComputationExecutions executions;
  std::unordered_map<const HloComputation*, int64_t>& counts = executions.runs;
  std::unordered_map<const HloComputation*, bool>& known = executions.known;
  counts.reserve(module.computations.size());
  known.reserve(module.computations.size());
  // A loop's trip count, once for its body and condition (it may parse a backend config).
  std::unordered_map<const HloInstruction*, int64_t> trips;
  const auto order = module.call_graph.CalleesFirst();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const HloComputation* computation = *it;
    if (computation->is_entry) {
      counts[computation] = 1;
      known[computation] = true;
      continue;
    }
    int64_t total = 0;
    bool all = true;
    for (const HloInstruction* caller : computation->callers) {
      if (caller->parent == nullptr) continue;
      const int64_t parent_count = counts[caller->parent];
      all = all && known[caller->parent];
      int64_t factor = 1;
      if (caller->opcode == Opcode::kWhile) {
        const auto [at, first] = trips.try_emplace(caller, 0);
        if (first) at->second = WhileTripCount(*caller);
        int64_t trip = at->second;
        if (trip < 0) {
          all = false;
          trip = 1;
        }
        if (caller->Called("body") == computation) factor = trip;
        if (caller->Called("condition") == computation) factor = ir::SaturatingAdd(trip, 1);
      }
      total = ir::SaturatingAdd(total, ir::SaturatingMul(parent_count, factor));
    }
    counts[computation] = total;
    known[computation] = all;
  }
  return executions;
}

}  // namespace spmdsim::passes
