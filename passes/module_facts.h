// Facts about a module that every analysis and command must agree on, each decided here once:
// whether its shapes are still global (before XLA's SPMD partitioner) or per device.
//
// A module's file name usually says how far XLA got with it ("...before_optimizations.txt",
// "...<platform>_after_optimizations.txt"); the tool passes that on as a StageHint. Without one
// (a renamed file, standard input, a benchmark module such as XLA's
// hlo_llama3_8b_cp_bf16_1x4.hlo: partitioned for 4 devices, not scheduled, parameters still
// annotated with shardings) the module's own contents decide:
//   - a scheduled module has been partitioned: XLA schedules after its SPMD pipeline;
//   - custom calls the SPMD partitioner consumes and removes ("Sharding", "SPMDFullToShardShape",
//     "SPMDShardToFullShape") mean it has not run;
//   - a collective with a channel id means it has: before partitioning, JAX writes channel
//     collectives only inside shard_map bodies, which always come with the custom calls above;
//   - otherwise shardings on the entry computation's instructions mean global shapes.
#pragma once

#include "ir/hlo.h"

namespace spmdsim::passes {

enum class StageHint { kUnknown, kBeforeOptimizations, kAfterOptimizations };

// True for a module whose shapes are global (per-device sizes then come from its shardings).
bool IsUnpartitioned(const ir::HloModule& module, StageHint stage = StageHint::kUnknown);

// True when the module carries marks only XLA:GPU writes: GpuBackendConfig fields in backend
// configs (xla/service/gpu/backend_configs.proto: "fusion_backend_config",
// "force_earliest_schedule", "operation_queue_id", "collective_backend_config") or the custom
// calls only XLA:GPU emits (__cublas$..., __cudnn$..., __triton...). A scan of every
// instruction: ModuleAnalyses::HasGpuBackendMarks keeps the answer.
bool HasGpuBackendMarks(const ir::HloModule& module);

}  // namespace spmdsim::passes
