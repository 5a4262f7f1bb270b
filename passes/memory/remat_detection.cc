#include "passes/memory/remat_detection.h"

#include <cctype>

namespace spmdsim::passes {

bool OpNameIsRematerialized(std::string_view op_name) {
  // Components are separated by '/' and transforms wrap them in "name(...)".
  size_t start = 0;
  while (start <= op_name.size()) {
    size_t end = start;
    while (end < op_name.size() && op_name[end] != '/' && op_name[end] != '(' &&
           op_name[end] != ')') {
      ++end;
    }
    const std::string_view part = op_name.substr(start, end - start);
    if (part == "checkpoint" || part == "remat" || part == "rematted_computation") return true;
    start = end + 1;
  }
  return false;
}

bool InstructionNameIsRematerialized(std::string_view name) {
  constexpr std::string_view kMark = ".remat";
  for (size_t at = name.find(kMark); at != std::string_view::npos; at = name.find(kMark, at + 1)) {
    size_t end = at + kMark.size();
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
    if (end == name.size() || name[end] == '.') return true;
  }
  return false;
}

RematEvidence FindRemat(const ir::HloModule& module) {
  RematEvidence xla;
  for (const ir::HloComputation* computation : module.computations) {
    for (const ir::HloInstruction* instr : computation->instructions) {
      const std::string_view op_name = instr->metadata().op_name;
      if (OpNameIsRematerialized(op_name)) {
        return {true, "jax.checkpoint", std::string(instr->name), std::string(op_name)};
      }
      if (!xla.found && InstructionNameIsRematerialized(instr->name)) {
        xla = {true, "XLA rematerialization", std::string(instr->name), std::string(op_name)};
      }
    }
  }
  return xla;  // jax.checkpoint evidence is preferred: it is what the user wrote
}

}  // namespace spmdsim::passes
