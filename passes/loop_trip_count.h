// How many times a while loop runs: XLA's own figure when it states one (backend_config
// known_trip_count, which XLA:CPU and XLA:GPU's WhileLoopTripCountAnnotator write), else the
// count the loop's induction variable gives, derived as XLA's while_loop_analysis does:
//   - the condition's root compares one element of the loop state, the induction variable
//     (get-tuple-element k of the condition's parameter, maybe through a copy or convert, maybe
//     inside a fusion), with a bound: a constant, or an element of the state the body passes on
//     unchanged whose initial value is a constant;
//   - the body's root tuple sets element k to element k plus (or minus) a constant step;
//   - the loop's initial tuple holds a constant at k (maybe behind copies: XLA:TPU copies it).
// Then LT runs ceil((bound - init) / step) times, LE one more when the bound is reached, GT/GE
// the same with a negative step, NE when the step reaches the bound exactly; never below 0.
// XLA:TPU writes no known_trip_count, so its loops are counted this way.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "ir/hlo.h"

namespace spmdsim::passes {

// backend_config={"known_trip_count":{"n":"4"}}; nullopt when the loop has none.
std::optional<int64_t> KnownTripCount(const ir::HloInstruction& loop);

// The count the induction variable gives; nullopt when the loop does not have that form.
// Saturates at INT64_MAX.
std::optional<int64_t> InductionTripCount(const ir::HloInstruction& loop);

// KnownTripCount, else InductionTripCount, else -1 (unknown).
int64_t WhileTripCount(const ir::HloInstruction& loop);

// How many times each computation runs per execution of the entry computation.
struct ComputationExecutions {
  std::unordered_map<const ir::HloComputation*, int64_t> runs;
  // Whether every loop on the way has a known trip count (1 assumed where not).
  std::unordered_map<const ir::HloComputation*, bool> known;
};
// ModuleAnalyses::Executions keeps them for a module.
ComputationExecutions ComputationExecutionCounts(const ir::HloModule& module);

}  // namespace spmdsim::passes
