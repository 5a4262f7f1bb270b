#include "passes/sharding/partition_offsets.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_set>

namespace spmdsim::passes {
namespace {

using ir::HloInstruction;
using ir::Opcode;

constexpr int kMaxDepth = 32;
// Devices evaluated at most; larger meshes are counted on this many (a shard count above it is
// reported as this many).
constexpr int64_t kMaxDevices = 4096;

bool IsIntegerScalar(const HloInstruction* instr) {
  return instr->shape.IsArray() && instr->shape.ElementCount() == 1 &&
         ir::IsIntegralType(instr->shape.element_type());
}

// The integers of a constant's payload, "{0, 4, 8}" or "7".
std::vector<int64_t> ConstantValues(const HloInstruction* instr) {
  std::vector<int64_t> values;
  const std::string_view text = instr->payload;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '-' || (c >= '0' && c <= '9')) {
      size_t end = i + 1;
      while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
      int64_t value = 0;
      bool negative = c == '-';
      for (size_t k = negative ? i + 1 : i; k < end; ++k) {
        if (value > (INT64_MAX - 9) / 10) return {};
        value = value * 10 + (text[k] - '0');
      }
      values.push_back(negative ? -value : value);
      i = end;
    } else if (c == 't' || c == 'f') {  // true / false
      values.push_back(c == 't' ? 1 : 0);
      while (i < text.size() && text[i] >= 'a' && text[i] <= 'z') ++i;
    } else {
      ++i;
    }
  }
  return values;
}

// The fusion whose computation is being evaluated, and the one around it: a fused parameter is
// the fusion's operand, evaluated where the fusion is.
struct Binding {
  const HloInstruction* fusion = nullptr;
  const Binding* outer = nullptr;
};

// `instr` itself, or for a fused parameter the operand it stands for (with where to read it).
std::pair<const HloInstruction*, const Binding*> Resolve(const HloInstruction* instr,
                                                         const Binding* binding) {
  for (int hops = 0; hops < kMaxDepth && instr->opcode == Opcode::kParameter && binding != nullptr;
       ++hops) {
    const int64_t n = instr->parameter_number;
    if (n < 0 || n >= static_cast<int64_t>(binding->fusion->operands.size())) break;
    instr = binding->fusion->operands[n];
    binding = binding->outer;
  }
  return {instr, binding};
}

// `value` as the integer type holds it: wrapped to its width, sign-extended when signed.
std::optional<int64_t> AsType(int64_t value, ir::PrimitiveType type) {
  const int width = ir::PrimitiveTypeBitWidth(type);
  if (width <= 0 || width > 64) return std::nullopt;
  if (width == 64)
    return type == ir::PrimitiveType::kU64 && value < 0 ? std::nullopt : std::optional(value);
  const uint64_t mask = (uint64_t{1} << width) - 1;
  const uint64_t bits = static_cast<uint64_t>(value) & mask;
  const bool is_signed = type == ir::PrimitiveType::kS8 || type == ir::PrimitiveType::kS16 ||
                         type == ir::PrimitiveType::kS32;
  if (is_signed && (bits >> (width - 1)) != 0) {
    return static_cast<int64_t>(bits) - static_cast<int64_t>(mask) - 1;
  }
  return static_cast<int64_t>(bits);
}

// XLA's bitwise and shift ops on integers of `type` (a shift by the width or more gives 0, or
// the sign for an arithmetic shift right).
std::optional<int64_t> BitwiseOp(Opcode opcode, int64_t a, int64_t b, ir::PrimitiveType type) {
  const int width = ir::PrimitiveTypeBitWidth(type);
  const std::optional<int64_t> x = AsType(a, type);
  if (!x || width <= 0 || width > 64) return std::nullopt;
  const uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  const uint64_t ux = static_cast<uint64_t>(*x) & mask;
  const uint64_t ub = static_cast<uint64_t>(b) & mask;
  switch (opcode) {
    case Opcode::kAnd:
      return AsType(static_cast<int64_t>(ux & ub), type);
    case Opcode::kOr:
      return AsType(static_cast<int64_t>(ux | ub), type);
    case Opcode::kXor:
      return AsType(static_cast<int64_t>(ux ^ ub), type);
    case Opcode::kShiftLeft:
      return AsType(b < 0 || b >= width ? 0 : static_cast<int64_t>(ux << b), type);
    case Opcode::kShiftRightLogical:
      return AsType(b < 0 || b >= width ? 0 : static_cast<int64_t>(ux >> b), type);
    default:  // arithmetic: the sign fills in
      return b < 0 || b >= width ? (*x < 0 ? -1 : 0) : *x >> b;
  }
}

// Whether the body of `loop` hands element k of its state back unchanged.
bool KeepsElement(const HloInstruction* loop, size_t k) {
  const ir::HloComputation* body = loop->Called("body");
  if (body == nullptr || body->root == nullptr || body->root->opcode != Opcode::kTuple ||
      k >= body->root->operands.size() || body->parameters.empty()) {
    return false;
  }
  const HloInstruction* back = body->root->operands[k];
  return back->opcode == Opcode::kGetTupleElement && back->tuple_index == static_cast<int32_t>(k) &&
         !back->operands.empty() && back->operands[0] == body->parameters[0];
}

// The element a loop starts with, for element k of a loop's state that every iteration hands
// back unchanged (XLA passes a loop the table it reads as loop state), read inside the body (a
// get-tuple-element of its parameter) or from the loop's result; nullptr otherwise.
const HloInstruction* LoopInvariantInit(const HloInstruction* gte) {
  if (gte->opcode != Opcode::kGetTupleElement || gte->operands.empty() || gte->tuple_index < 0) {
    return nullptr;
  }
  const auto k = static_cast<size_t>(gte->tuple_index);
  const HloInstruction* tuple = gte->operands[0];
  const HloInstruction* loop = nullptr;
  if (tuple->opcode == Opcode::kWhile) {
    loop = tuple;
  } else if (tuple->opcode == Opcode::kParameter && tuple->parent != nullptr &&
             tuple->parent->callers.size() == 1 &&
             tuple->parent->callers[0]->opcode == Opcode::kWhile &&
             tuple->parent->callers[0]->Called("body") == tuple->parent) {
    loop = tuple->parent->callers[0];
  }
  if (loop == nullptr || loop->operands.empty() || !KeepsElement(loop, k)) return nullptr;
  const HloInstruction* init = loop->operands[0];
  if (init->opcode != Opcode::kTuple || k >= init->operands.size()) return nullptr;
  return init->operands[k];
}

// The instruction a table's values come from, through moves that keep them: fused parameters,
// copies, bitcasts and reshapes, and XLA:TPU's copy-start/copy-done pairs that prefetch a
// constant into another memory space (copy-start's operand is the source).
const HloInstruction* TableSource(const HloInstruction* instr, const Binding* binding) {
  for (int hops = 0; hops < kMaxDepth; ++hops) {
    std::tie(instr, binding) = Resolve(instr, binding);
    const bool moves = instr->opcode == Opcode::kCopy || instr->opcode == Opcode::kBitcast ||
                       instr->opcode == Opcode::kReshape || instr->opcode == Opcode::kCopyDone ||
                       instr->opcode == Opcode::kCopyStart;
    if (const HloInstruction* init = LoopInvariantInit(instr)) {
      instr = init;
      binding = nullptr;
      continue;
    }
    if (!moves || instr->operands.empty()) break;
    instr = instr->operands[0];
  }
  return instr;
}

std::optional<int64_t> Evaluate(const HloInstruction* instr, int64_t partition, int64_t replica,
                                const Binding* binding, int depth) {
  if (depth > kMaxDepth) return std::nullopt;
  const auto operand = [&](size_t k) -> std::optional<int64_t> {
    if (k >= instr->operands.size()) return std::nullopt;
    return Evaluate(instr->operands[k], partition, replica, binding, depth + 1);
  };
  switch (instr->opcode) {
    case Opcode::kParameter: {
      const auto [source, where] = Resolve(instr, binding);
      if (source == instr) return std::nullopt;
      return Evaluate(source, partition, replica, where, depth + 1);
    }
    case Opcode::kPartitionId:
      return partition;
    case Opcode::kReplicaId:
      return replica;
    case Opcode::kConstant: {
      const std::vector<int64_t> values = ConstantValues(instr);
      if (values.size() != 1) return std::nullopt;
      return values[0];
    }
    case Opcode::kConvert:
    case Opcode::kBitcast:
    case Opcode::kReshape:
    case Opcode::kCopy:
    case Opcode::kBroadcast:
      if (instr->shape.IsArray() && instr->shape.ElementCount() != 1) return std::nullopt;
      return operand(0);
    case Opcode::kAdd:
    case Opcode::kSubtract:
    case Opcode::kMultiply:
    case Opcode::kDivide:
    case Opcode::kRemainder:
    case Opcode::kMaximum:
    case Opcode::kMinimum: {
      const std::optional<int64_t> a = operand(0);
      const std::optional<int64_t> b = operand(1);
      if (!a || !b) return std::nullopt;
      int64_t out = 0;
      switch (instr->opcode) {
        case Opcode::kAdd:
          if (__builtin_add_overflow(*a, *b, &out)) return std::nullopt;
          return out;
        case Opcode::kSubtract:
          if (__builtin_sub_overflow(*a, *b, &out)) return std::nullopt;
          return out;
        case Opcode::kMultiply:
          if (__builtin_mul_overflow(*a, *b, &out)) return std::nullopt;
          return out;
        case Opcode::kDivide:
          if (*b == 0 || (*a == INT64_MIN && *b == -1)) return std::nullopt;
          return *a / *b;
        case Opcode::kRemainder:
          if (*b == 0 || (*a == INT64_MIN && *b == -1)) return std::nullopt;
          return *a % *b;
        case Opcode::kMaximum:
          return std::max(*a, *b);
        default:
          return std::min(*a, *b);
      }
    }
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightLogical:
    case Opcode::kShiftRightArithmetic: {
      // The 64-bit counters of partitionable threefry are computed as two 32-bit words: masks
      // and shifts of the device's offset.
      const std::optional<int64_t> a = operand(0);
      const std::optional<int64_t> b = operand(1);
      if (!a || !b || !instr->shape.IsArray()) return std::nullopt;
      return BitwiseOp(instr->opcode, *a, *b, instr->shape.element_type());
    }
    case Opcode::kDynamicSlice:
    case Opcode::kGather: {
      // One element of a rank-1 constant table at a computed index.
      if (instr->operands.size() < 2 || instr->shape.ElementCount() != 1) return std::nullopt;
      const HloInstruction* source = TableSource(instr->operands[0], binding);
      if (source->opcode != Opcode::kConstant) return std::nullopt;
      const std::vector<int64_t> table = ConstantValues(source);
      const std::optional<int64_t> index = operand(1);
      if (!index || table.empty()) return std::nullopt;
      // XLA clamps a dynamic-slice's start into the operand.
      const int64_t at = std::clamp<int64_t>(*index, 0, static_cast<int64_t>(table.size()) - 1);
      return table[at];
    }
    case Opcode::kFusion: {
      // A fused scalar computation: its root with the parameters bound to the operands.
      const ir::HloComputation* fused = instr->Called("calls");
      if (fused == nullptr || fused->root == nullptr || !IsIntegerScalar(instr)) {
        return std::nullopt;
      }
      const Binding inner{instr, binding};
      return Evaluate(fused->root, partition, replica, &inner, depth + 1);
    }
    default:
      return std::nullopt;
  }
}

// Whether `instr`'s value depends on partition-id or replica-id. Memoized per (instruction,
// binding): the operand graph is a DAG with many paths to each node (XLA:TPU's modules reach
// the same fusion operands thousands of ways).
using DeviceMemo = std::map<std::pair<const HloInstruction*, const Binding*>, bool>;

bool DependsOnDevice(const HloInstruction* instr, const Binding* binding, int depth,
                     DeviceMemo& memo) {
  if (depth > kMaxDepth) return false;
  const auto known = memo.find({instr, binding});
  if (known != memo.end()) return known->second;
  bool result = false;
  if (instr->opcode == Opcode::kParameter) {
    const auto [source, where] = Resolve(instr, binding);
    result = source != instr && DependsOnDevice(source, where, depth + 1, memo);
  } else if (instr->opcode == Opcode::kPartitionId || instr->opcode == Opcode::kReplicaId) {
    result = true;
  } else {
    for (const HloInstruction* operand : instr->operands) {
      if (DependsOnDevice(operand, binding, depth + 1, memo)) {
        result = true;
        break;
      }
    }
  }
  memo[{instr, binding}] = result;
  return result;
}

bool DependsOnDevice(const HloInstruction* instr) {
  DeviceMemo memo;
  return DependsOnDevice(instr, nullptr, 0, memo);
}

}  // namespace

std::optional<int64_t> EvaluateOnDevice(const HloInstruction* instr, int64_t partition,
                                        int64_t replica) {
  return Evaluate(instr, partition, replica, nullptr, 0);
}

std::vector<DeviceOffset> DeviceOffsets(const std::vector<const HloInstruction*>& roots) {
  std::vector<DeviceOffset> offsets;
  std::unordered_set<const HloInstruction*> seen;
  std::vector<std::pair<const HloInstruction*, int>> stack;
  for (const HloInstruction* root : roots) stack.push_back({root, 0});
  while (!stack.empty()) {
    const auto [instr, level] = stack.back();
    stack.pop_back();
    if (!seen.insert(instr).second) continue;
    // The outermost scalar values that depend on the device: what the counters add.
    if (IsIntegerScalar(instr) && instr->opcode != Opcode::kConstant && DependsOnDevice(instr)) {
      offsets.push_back({instr, nullptr});
      continue;
    }
    // A fusion that builds counters from the device's position (a table lookup fused in): the
    // outermost scalars inside it that depend on the device.
    if (instr->opcode == Opcode::kFusion && !IsIntegerScalar(instr) && DependsOnDevice(instr)) {
      const ir::HloComputation* fused = instr->Called("calls");
      const Binding binding{instr, nullptr};
      DeviceMemo memo;  // one binding for the whole loop
      bool inside = false;
      for (const HloInstruction* i :
           fused != nullptr ? fused->instructions : std::vector<ir::HloInstruction*>{}) {
        if (!IsIntegerScalar(i) || i->opcode == Opcode::kConstant ||
            !DependsOnDevice(i, &binding, 0, memo)) {
          continue;
        }
        bool outermost = i->users.empty();
        for (const HloInstruction* user : i->users) outermost |= !IsIntegerScalar(user);
        if (!outermost) continue;
        offsets.push_back({i, instr});
        inside = true;
      }
      if (inside) continue;
    }
    if (level >= 6) continue;
    for (const HloInstruction* operand : instr->operands) stack.push_back({operand, level + 1});
  }
  std::sort(offsets.begin(), offsets.end(),
            [](const DeviceOffset& a, const DeviceOffset& b) { return a.value->id < b.value->id; });
  return offsets;
}

int64_t DistinctDeviceSlices(const std::vector<DeviceOffset>& offsets, int64_t partitions,
                             int64_t replicas) {
  if (offsets.empty()) return 0;
  std::set<std::vector<int64_t>> distinct;
  int64_t devices = 0;
  for (int64_t r = 0; r < std::max<int64_t>(replicas, 1); ++r) {
    for (int64_t p = 0; p < std::max<int64_t>(partitions, 1); ++p) {
      if (++devices > kMaxDevices) return static_cast<int64_t>(distinct.size());
      std::vector<int64_t> values;
      for (const DeviceOffset& offset : offsets) {
        const Binding binding{offset.fusion, nullptr};
        const std::optional<int64_t> value =
            Evaluate(offset.value, p, r, offset.fusion != nullptr ? &binding : nullptr, 0);
        if (!value) return 0;
        values.push_back(*value);
      }
      distinct.insert(std::move(values));
    }
  }
  return static_cast<int64_t>(distinct.size());
}

bool ReadsElidedTable(const std::vector<DeviceOffset>& offsets) {
  struct Pending {
    const HloInstruction* instr;
    Binding binding;  // one level: the offset's fusion
    int depth;
  };
  std::vector<Pending> stack;
  for (const DeviceOffset& offset : offsets)
    stack.push_back({offset.value, {offset.fusion, nullptr}, 0});
  std::unordered_set<const HloInstruction*> seen;
  while (!stack.empty()) {
    const Pending at = stack.back();
    stack.pop_back();
    if (at.depth > kMaxDepth || !seen.insert(at.instr).second) continue;
    const Binding* binding = at.binding.fusion != nullptr ? &at.binding : nullptr;
    const HloInstruction* instr = Resolve(at.instr, binding).first;
    const bool inside = instr == at.instr && binding != nullptr;
    if ((instr->opcode == Opcode::kDynamicSlice || instr->opcode == Opcode::kGather) &&
        !instr->operands.empty()) {
      const HloInstruction* table = TableSource(instr->operands[0], binding);
      if (table->opcode == Opcode::kConstant && table->payload == "{...}") return true;
    }
    for (const HloInstruction* operand : instr->operands) {
      stack.push_back({operand, inside ? at.binding : Binding{}, at.depth + 1});
    }
  }
  return false;
}

}  // namespace spmdsim::passes
