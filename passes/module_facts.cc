#include "passes/module_facts.h"

#include <string_view>

namespace spmdsim::passes {
namespace {

bool IsPartitionerMarker(std::string_view target) {
  return target == "Sharding" || target == "SPMDFullToShardShape" ||
         target == "SPMDShardToFullShape";
}

}  // namespace

bool IsUnpartitioned(const ir::HloModule& module, StageHint stage) {
  if (module.num_partitions <= 1 || module.entry == nullptr) return false;
  if (stage == StageHint::kBeforeOptimizations) return true;
  if (stage == StageHint::kAfterOptimizations || module.is_scheduled) return false;
  bool channel_collective = false;
  for (const ir::HloComputation* computation : module.computations) {
    for (const ir::HloInstruction* instr : computation->instructions) {
      if (instr->opcode == ir::Opcode::kCustomCall &&
          IsPartitionerMarker(instr->custom_call_target())) {
        return true;
      }
      channel_collective = channel_collective || instr->channel_id() >= 0;
    }
  }
  if (channel_collective) return false;
  for (const ir::HloInstruction* instr : module.entry->instructions) {
    if (instr->sharding() != nullptr) return true;
  }
  return false;
}

}  // namespace spmdsim::passes
