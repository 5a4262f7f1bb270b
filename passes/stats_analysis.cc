#include "passes/stats_analysis.h"

#include <set>

#include "ir/checked_math.h"
#include "ir/device_count.h"

namespace spmdsim::passes {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;

ir::CollectiveKind CollectiveStarted(const HloInstruction& instruction) {
  if (instruction.opcode == Opcode::kAsyncStart) {
    const HloComputation* wrapped = instruction.Called("calls");
    if (wrapped == nullptr || wrapped->root == nullptr) return ir::CollectiveKind::kNone;
    return ir::CollectiveKindOf(wrapped->root->opcode);
  }
  if (ir::IsAsyncDone(instruction.opcode)) return ir::CollectiveKind::kNone;
  return ir::CollectiveKindOf(instruction.opcode);
}

StatsResult ComputeStats(const ir::HloModule& module, const StatsOptions&) {
  StatsResult stats;
  stats.name = std::string(module.name);
  stats.computation_count = static_cast<int64_t>(module.computations.size());
  stats.is_scheduled = module.is_scheduled;
  stats.num_partitions = module.num_partitions;
  stats.replica_count = module.replica_count;
  stats.devices = ir::DeviceCount(module);
  stats.devices_from_collectives = ir::DevicesFromCollectives(module);
  stats.warning_count = module.warning_count;

  // Computations wrapped by async-start: their instructions are counted through the wrapper.
  std::set<const HloComputation*> async_wrapped;
  for (const HloComputation* computation : module.computations) {
    for (const HloInstruction* instr : computation->instructions) {
      if (instr->opcode == Opcode::kAsyncStart) {
        for (const auto& called : instr->called_computations())
          async_wrapped.insert(called.computation);
      }
    }
  }
  for (const HloComputation* computation : module.computations) {
    const bool wrapped = async_wrapped.count(computation) > 0;
    for (const HloInstruction* instr : computation->instructions) {
      ++stats.instruction_count;
      ++stats.instructions_by_opcode[std::string(instr->opcode_name())];
      if (instr->opcode == Opcode::kCustomCall) {
        ++stats.custom_call_targets[std::string(instr->custom_call_target())];
      }
      if (wrapped) continue;
      const ir::CollectiveKind kind = CollectiveStarted(*instr);
      if (kind != ir::CollectiveKind::kNone)
        ++stats.collectives[std::string(ir::CollectiveKindName(kind))];
    }
  }
  if (module.entry != nullptr) {
    for (const HloInstruction* param : module.entry->parameters) {
      if (param == nullptr) continue;
      ++stats.parameter_count;
      stats.parameter_bytes = ir::SaturatingAdd(stats.parameter_bytes, param->shape.LeafBytes());
    }
    if (module.entry->root != nullptr) stats.output_bytes = module.entry->root->shape.LeafBytes();
  }
  return stats;
}

}  // namespace spmdsim::passes
