#include "testing/xla_random_values.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/attribute_parsers.h"

namespace spmdsim::testing {

bool IsDrawComponent(std::string_view c) {
  for (const std::string_view wrapper : {"transpose(", "jvp(", "vmap(", "checkpoint("}) {
    while (c.size() > wrapper.size() && c.substr(0, wrapper.size()) == wrapper && c.back() == ')') {
      c = c.substr(wrapper.size(), c.size() - wrapper.size() - 1);
    }
  }
  if (c == "random_bits") return true;
  if (c.size() < 6 || c.substr(0, 5) != "jit(_" || c.back() != ')') return false;
  const std::string_view f = c.substr(5, c.size() - 6);
  for (const std::string_view draw :
       {"uniform", "bernoulli", "normal", "normal_real", "truncated_normal", "randint", "gumbel",
        "exponential", "gamma", "beta", "categorical", "poisson", "laplace", "logistic", "cauchy",
        "choice", "permutation", "shuffle", "random_bits"}) {
    if (f == draw) return true;
  }
  return false;
}

bool IsKeyComponent(std::string_view c) {
  for (const std::string_view key : {"threefry_split", "random_split", "_split)", "fold_in"}) {
    if (c.find(key) != std::string_view::npos) return true;
  }
  return false;
}

bool InDrawScope(std::string_view op_name) {
  bool draw = false;
  while (!op_name.empty()) {
    const size_t slash = op_name.find('/');
    const std::string_view c = op_name.substr(0, slash);
    if (IsKeyComponent(c)) return false;
    draw |= IsDrawComponent(c);
    if (slash == std::string_view::npos) break;
    op_name.remove_prefix(slash + 1);
  }
  return draw;
}

namespace {

size_t ElementOf(std::string_view index) {
  size_t k = 0;
  for (size_t i = 1; i < index.size() && index[i] >= '0' && index[i] <= '9'; ++i) {
    k = k * 10 + static_cast<size_t>(index[i] - '0');
  }
  return k;
}

}  // namespace

std::string_view OpNameOf(const ir::HloInstruction& instr, std::string_view index, int depth) {
  if (depth > 64) return {};
  const bool element = index.size() >= 3;
  const size_t k = element ? ElementOf(index) : 0;
  // An element of a multi-output fusion: the fused instruction computing it (XLA names the
  // fusion after its root alone).
  const ir::HloComputation* fused = instr.Called("calls");
  if (instr.opcode == ir::Opcode::kFusion && element && fused != nullptr &&
      fused->root != nullptr && fused->root->opcode == ir::Opcode::kTuple &&
      k < fused->root->operands.size()) {
    return fused->root->operands[k]->metadata().op_name;
  }
  // An element of a loop's state: what the body computes there (the while's own op_name covers
  // its whole state: counters, key words, rotation amounts).
  const ir::HloComputation* body = instr.Called("body");
  if (instr.opcode == ir::Opcode::kWhile && element && body != nullptr && body->root != nullptr &&
      body->root->opcode == ir::Opcode::kTuple && k < body->root->operands.size()) {
    return OpNameOf(*body->root->operands[k], "{}", depth + 1);
  }
  if (!instr.metadata().op_name.empty()) return instr.metadata().op_name;
  // A fusion XLA wrote no op_name for (XLA:GPU's dynamic-slice fusion around a kernel) is its
  // root's, as XLA names fusions.
  if (instr.opcode == ir::Opcode::kFusion && fused != nullptr && fused->root != nullptr) {
    return fused->root->metadata().op_name;
  }
  // XLA's copy insertion writes no metadata: a copy holds what it copies; an element of a tuple
  // or of a loop body's state is what its producer computed.
  if (instr.opcode == ir::Opcode::kGetTupleElement && !instr.operands.empty()) {
    return OpNameOf(*instr.operands[0], "{" + std::to_string(instr.tuple_index) + "}", depth + 1);
  }
  if (instr.opcode == ir::Opcode::kTuple && element && k < instr.operands.size()) {
    return OpNameOf(*instr.operands[k], "{}", depth + 1);
  }
  // A parameter of the computation an async pair wraps: the async-start's operand.
  if (instr.opcode == ir::Opcode::kParameter && instr.parent != nullptr &&
      instr.parent->callers.size() == 1 &&
      instr.parent->callers[0]->opcode == ir::Opcode::kAsyncStart &&
      static_cast<size_t>(instr.parameter_number) < instr.parent->callers[0]->operands.size()) {
    return OpNameOf(
        *instr.parent->callers[0]->operands[static_cast<size_t>(instr.parameter_number)], "{}",
        depth + 1);
  }
  if (instr.opcode == ir::Opcode::kParameter && element && instr.parent != nullptr &&
      instr.parent->callers.size() == 1 && instr.parent->callers[0]->opcode == ir::Opcode::kWhile) {
    return OpNameOf(*instr.parent->callers[0], index, depth + 1);
  }
  switch (instr.opcode) {
    case ir::Opcode::kCopy:
    case ir::Opcode::kCopyStart:
    case ir::Opcode::kCopyDone:
    case ir::Opcode::kBitcast:
    case ir::Opcode::kReshape:
    case ir::Opcode::kTranspose:
      return instr.operands.empty() ? std::string_view{}
                                    : OpNameOf(*instr.operands[0], "{}", depth + 1);
    default:
      return {};
  }
}

// A collective moving such a value: element k of a combined collective moves operand k.
bool MovesRandomValue(const ir::HloInstruction& instr, std::string_view index) {
  if (ir::CollectiveKindOf(instr.opcode) == ir::CollectiveKind::kNone) return false;
  std::vector<const ir::HloInstruction*> moved;
  if (instr.operands.size() > 1 && index.size() >= 3) {
    // {k} of a combined collective; {0,k} / {1,k} of its start form.
    size_t k = ElementOf(index);
    const size_t comma = index.find(',');
    if (comma != std::string_view::npos) k = ElementOf(index.substr(comma));
    if (k < instr.operands.size()) moved.push_back(instr.operands[k]);
  } else {
    moved.assign(instr.operands.begin(), instr.operands.end());
  }
  for (const ir::HloInstruction* operand : moved) {
    if (InDrawScope(OpNameOf(*operand, "{}"))) return true;
  }
  return false;
}

std::map<std::string, int64_t> XlaRandomValues(const ir::HloModule& module,
                                               const dump::XlaBufferAssignment& assignment) {
  std::unordered_map<std::string_view, const ir::HloInstruction*> by_name;
  for (const ir::HloComputation* c : module.computations) {
    for (const ir::HloInstruction* instr : c->instructions) by_name.emplace(instr->name, instr);
  }
  std::map<std::string, int64_t> out;
  for (const auto& allocation : assignment.allocations) {
    if (allocation.constant) continue;
    for (const auto& value : allocation.values) {
      const auto found = by_name.find(value.name);
      if (found == by_name.end()) continue;
      const ir::HloInstruction* instr = found->second;
      if (instr->opcode == ir::Opcode::kConstant) continue;
      // A tuple's value is its table of pointers, not data.
      const std::optional<ir::Shape> shape = ir::ParseShape(value.shape);
      if (shape && (!shape->IsArray() || shape->ElementCount() <= 1)) continue;
      const std::string index = value.index.empty() ? "{}" : value.index;
      // A combined collective's op_name lists every op it combines: each element is named by
      // the operand it moves.
      const bool combined = ir::CollectiveKindOf(instr->opcode) != ir::CollectiveKind::kNone &&
                            instr->operands.size() > 1;
      const bool random =
          (!combined && InDrawScope(OpNameOf(*instr, index))) || MovesRandomValue(*instr, index);
      if (random) out.emplace(value.Key(), value.size);
    }
  }
  return out;
}

int64_t XlaRandomBytes(const std::map<std::string, int64_t>& random,
                       const std::vector<std::vector<std::string>>& buffers) {
  int64_t bytes = 0;
  for (const std::vector<std::string>& values : buffers) {
    int64_t size = -1;
    for (const std::string& value : values) {
      const auto found = random.find(value);
      if (found != random.end()) size = std::max(size, found->second);
    }
    if (size > 0) bytes += size;
  }
  return bytes;
}

}  // namespace spmdsim::testing
