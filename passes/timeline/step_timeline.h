// One step of a module on one device, simulated over its schedule: when each instruction runs
// on the compute track, when each collective runs on the collectives track, and when the walk
// reaches each instruction's position (for placing the memory curve). The trace view renders
// this timeline; it decides nothing itself.
//
// Timing model (a sketch of the step's shape, not a performance prediction):
//   - order: the entry computation's instructions in text order, which is XLA's schedule for a
//     module with is_scheduled=true (a dependency order otherwise). A control-flow caller walks
//     its computations in place, each once, as the flattened schedule of the memory analysis does
//     (while: condition, then body; conditional: every branch; call: the callee); its slice spans
//     them. Loops are not unrolled: a body shows one pass, whatever its trip count.
//   - compute: max(min_slice_us, bytes of the instruction's output / compute_bandwidth_GBps).
//   - collectives (passes/collectives/collective_analysis.h): one execution's estimated time on
//     the topology (min_slice_us without one). A synchronous collective holds the compute track
//     until it ends; an X-start / async-start lets it run on and its X-done / async-done waits
//     for the end. Collectives run one at a time on their track.
//   - free (no slice, no time): parameter, constant, get-tuple-element, tuple, bitcast,
//     partition-id, replica-id, after-all, add-dependency, opt-barrier, domain, X-done.
// Times are integer nanoseconds, so the result is the same on every run; one instruction's time
// saturates at kMaxStepNs and the clock at INT64_MAX / 2, so hostile sizes cannot overflow it.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/hlo.h"
#include "passes/collectives/collective_analysis.h"

namespace spmdsim::passes {

struct StepTimelineOptions {
  // Rate at which an instruction writes its output: 1000 GB/s, HBM-class (1 MiB takes ~1 us).
  double compute_bandwidth_GBps = 1000;
  // Shortest slice, and the time of a collective without a topology estimate.
  double min_slice_us = 1.0;
};

// The longest time one instruction takes, in nanoseconds (about 13 days).
inline constexpr int64_t kMaxStepNs = int64_t{1} << 50;

enum class StepTrack { kCompute, kCollectives };

enum class StepSliceKind {
  kCompute,      // an instruction that writes its output
  kControlFlow,  // a while, call or conditional: spans one pass of its callees
  kCollective,   // on the collectives track
};

struct StepSlice {
  const ir::HloInstruction* instruction = nullptr;
  StepSliceKind kind = StepSliceKind::kCompute;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  // kCollective: the analysis' record of it, and whether the compute track runs on meanwhile
  // (an X-start / async-start).
  const CollectiveOp* collective = nullptr;
  bool asynchronous = false;

  StepTrack track() const {
    return kind == StepSliceKind::kCollective ? StepTrack::kCollectives : StepTrack::kCompute;
  }
};

struct StepTimeline {
  // In walk order: a control-flow caller before the slices of its callees.
  std::vector<StepSlice> slices;
  // The compute track's time when the walk reaches each instruction's position in the flattened
  // schedule (a caller's position comes after its callees). Keys view the module's names.
  std::unordered_map<std::string_view, int64_t> position_ns;
  // When the compute track finishes the entry computation.
  int64_t step_ns = 0;
  StepTimelineOptions options;  // what the step was laid out with
};

// `collectives` is the collective analysis of `module` (its ops name the instructions).
StepTimeline SimulateStep(const ir::HloModule& module, const CollectiveResult& collectives,
                          const StepTimelineOptions& options = {});

}  // namespace spmdsim::passes
