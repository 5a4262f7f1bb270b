// When each value is live, in positions of the module's flattened schedule (XLA's HloLiveRange,
// module-scoped):
//
//   - the schedule is the entry computation's sequence with the sequences of called control-flow
//     computations spliced in just before their caller (a while: condition, then body);
//   - a value lives from its definition (a parameter: from the start of its computation) to its
//     last position or use; a computation's root lives to the end of the computation; a use by a
//     while ends at the start of the loop body; uses by a call are replaced by the uses inside;
//   - entry parameters that are not donated live to the end of the program;
//   - values that share a buffer are trimmed so that each ends where the next one starts.
//
// The sequence is the text order of each computation: for a module with is_scheduled=true that
// is XLA's schedule; otherwise it is a dependency order, and `scheduled` is false.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "passes/memory/buffer_alias_analysis.h"
#include "passes/memory/buffer_dataflow_analysis.h"

namespace spmdsim::passes {

struct TimeBound {
  int64_t start = 0;
  int64_t end = 0;  // inclusive
  bool operator==(const TimeBound&) const = default;
};

struct LiveRangeOptions {};

class LiveRangeAnalysis {
 public:
  static LiveRangeAnalysis Run(const DataflowAnalysis& dataflow, const AliasAnalysis& alias,
                               const LiveRangeOptions& options = {});

  // The flattened schedule; position t holds sequence()[t].
  const std::vector<const ir::HloInstruction*>& sequence() const { return sequence_; }
  // XLA's schedule_end_time: one past the last position (entry roots and entry parameters end
  // here).
  int64_t EndTime() const { return static_cast<int64_t>(sequence_.size()); }
  // The position of an instruction, or -1 when it is not in the flattened schedule.
  int64_t TimeOf(const ir::HloInstruction* instruction) const;
  bool HasRange(int32_t value_id) const { return has_range_[value_id]; }
  const TimeBound& Range(int32_t value_id) const { return ranges_[value_id]; }
  // True when the module carried a schedule (is_scheduled=true); false when the order is a
  // dependency order of the text.
  bool scheduled() const { return scheduled_; }

 private:
  friend class LiveRangeBuilder;
  std::vector<const ir::HloInstruction*> sequence_;
  std::vector<int64_t> time_;  // by instruction id
  std::vector<TimeBound> ranges_;
  std::vector<bool> has_range_;
  bool scheduled_ = false;
};

}  // namespace spmdsim::passes
