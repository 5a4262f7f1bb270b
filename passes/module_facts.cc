#include "passes/module_facts.h"

#include <string_view>

namespace spmdsim::passes {
namespace {

bool IsPartitionerMarker(std::string_view target) {
  return target == "Sharding" || target == "SPMDFullToShardShape" ||
         target == "SPMDShardToFullShape";
}

}  // namespace

bool HasGpuBackendMarks(const ir::HloModule& module) {
  static constexpr std::string_view kConfigFields[] = {
      "\"fusion_backend_config\"", "\"force_earliest_schedule\"", "\"operation_queue_id\"",
      "\"collective_backend_config\""};
  static constexpr std::string_view kTargets[] = {"__cublas$", "__cudnn$", "__triton"};
  for (const ir::HloComputation* computation : module.computations) {
    for (const ir::HloInstruction* instr : computation->instructions) {
      const std::string_view config = instr->backend_config();
      for (std::string_view field : kConfigFields) {
        if (config.find(field) != std::string_view::npos) return true;
      }
      const std::string_view target = instr->custom_call_target();
      for (std::string_view prefix : kTargets) {
        if (target.substr(0, prefix.size()) == prefix) return true;
      }
    }
  }
  return false;
}

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
