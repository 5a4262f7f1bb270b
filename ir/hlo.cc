#include "ir/hlo.h"

namespace spmdsim::ir {

std::string Metadata::Source() const {
  if (source_file.empty()) return {};
  std::string out(source_file);
  if (source_line > 0) out += ":" + std::to_string(source_line);
  return out;
}

std::string_view HloInstruction::FindAttribute(std::string_view attr_name) const {
  for (const Attribute& attr : attributes) {
    if (attr.name == attr_name) return attr.value;
  }
  return {};
}

bool HloInstruction::HasAttribute(std::string_view attr_name) const {
  for (const Attribute& attr : attributes) {
    if (attr.name == attr_name) return true;
  }
  return false;
}

HloComputation* HloInstruction::Called(std::string_view role) const {
  for (const CalledComputation& called : called_computations) {
    if (called.role == role) return called.computation;
  }
  return nullptr;
}

bool HloComputation::IsFusionComputation() const {
  for (const HloInstruction* caller : callers) {
    if (caller->opcode == Opcode::kFusion) return true;
  }
  return false;
}

int64_t HloModule::InstructionCount() const {
  int64_t count = 0;
  for (const HloComputation* computation : computations) {
    count += static_cast<int64_t>(computation->instructions.size());
  }
  return count;
}

HloComputation* HloModule::FindComputation(std::string_view computation_name) const {
  for (HloComputation* computation : computations) {
    if (computation->name == computation_name) return computation;
  }
  return nullptr;
}

HloComputation* HloModule::NewComputation() {
  HloComputation& computation = computation_storage_.emplace_back();
  computation.parent = this;
  return &computation;
}

HloInstruction* HloModule::NewInstruction() { return &instruction_storage_.emplace_back(); }

}  // namespace spmdsim::ir
