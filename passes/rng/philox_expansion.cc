#include "passes/rng/philox_expansion.h"

#include <vector>

#include "passes/rng/threefry_hashes.h"

namespace spmdsim::passes {
namespace {

using ir::HloInstruction;
using ir::Opcode;

bool IsWideInteger(ir::PrimitiveType type) {
  return type == ir::PrimitiveType::kU32 || type == ir::PrimitiveType::kU64 ||
         type == ir::PrimitiveType::kS32 || type == ir::PrimitiveType::kS64;
}

bool IsU32Array(const ir::Shape& shape) {
  return shape.IsArray() && shape.element_type() == ir::PrimitiveType::kU32;
}

}  // namespace

std::optional<PhiloxExpansion> FindPhiloxExpansion(const ir::HloComputation* computation) {
  if (computation == nullptr) return std::nullopt;
  bool first = false;
  bool second = false;
  const HloInstruction* generated = nullptr;  // the largest u32 array: the generator's output
  std::vector<const HloInstruction*> slices;
  std::string_view op_name;
  ForEachNested(computation, [&](const HloInstruction* instr) {
    if (instr->opcode == Opcode::kMultiply && instr->shape.IsArray() &&
        IsWideInteger(instr->shape.element_type())) {
      for (const HloInstruction* operand : instr->operands) {
        const std::optional<int64_t> value = ScalarConstant(operand);
        if (value == kPhiloxMultiplier0 && !first) op_name = instr->metadata().op_name;
        first |= value == kPhiloxMultiplier0;
        second |= value == kPhiloxMultiplier1;
      }
    }
    if (!IsU32Array(instr->shape)) return;
    if (generated == nullptr || instr->shape.ElementCount() > generated->shape.ElementCount()) {
      generated = instr;
    }
    if ((instr->opcode == Opcode::kDynamicSlice || instr->opcode == Opcode::kSlice) &&
        !instr->operands.empty()) {
      slices.push_back(instr);
    }
  });
  if (!first || !second || generated == nullptr) return std::nullopt;
  PhiloxExpansion expansion;
  expansion.op_name = op_name;
  expansion.generated_words = generated->shape.ElementCount();
  expansion.kept_words = expansion.generated_words;
  // The device's part: the largest slice taken from an array of the generated size (the words
  // of one 128-bit counter are sliced too, but from smaller arrays).
  for (const HloInstruction* slice : slices) {
    if (slice->operands[0]->shape.ElementCount() != expansion.generated_words) continue;
    if (expansion.kept_shape == nullptr ||
        slice->shape.ElementCount() > expansion.kept_shape->ElementCount()) {
      expansion.kept_shape = &slice->shape.get();
    }
  }
  if (expansion.kept_shape != nullptr) expansion.kept_words = expansion.kept_shape->ElementCount();
  return expansion;
}

}  // namespace spmdsim::passes
