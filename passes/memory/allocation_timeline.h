// When the values placed in one allocation are live, for XLA's buffer assignment (memory_analysis):
// whether a new value's live range overlaps them by more than a touching end, and which of them
// touch it (those decide by the operand-sharing rules). Both in O(log n), so an allocation that
// many temporaries reuse (an output buffer of a flat million-instruction graph) costs no more
// per query than a small one.
#pragma once

#include <cstdint>
#include <set>
#include <unordered_map>
#include <utility>

#include "passes/memory/live_range_analysis.h"

namespace spmdsim::passes {

class AllocationTimeline {
 public:
  void Add(int32_t value_id, const TimeBound& range);

  // Some value is live strictly inside [range.start, range.end]: its range starts before the
  // end and ends after the start.
  bool StrictlyOverlaps(const TimeBound& range) const;

  // Calls visit(value_id) for each value whose range ends where `range` starts or starts where
  // it ends (a value may be visited twice).
  template <typename Visit>
  void ForEachTouching(const TimeBound& range, Visit&& visit) const {
    const auto ending = ends_.equal_range(range.start);
    for (auto it = ending.first; it != ending.second; ++it) visit(it->second);
    const auto starting = starts_.equal_range(range.end);
    for (auto it = starting.first; it != starting.second; ++it) visit(it->second);
  }

 private:
  // The union of the ranges as intervals with disjoint interiors, sorted by (start, end); a
  // point range is kept only where it lies in no interval's interior. Merging ranges whose
  // interiors meet keeps StrictlyOverlaps exact (it asks whether the query meets an interior),
  // and with disjoint interiors the ends rise with the starts, so the last interval starting
  // before the query's end has the latest end among them.
  std::set<std::pair<int64_t, int64_t>> hull_;
  std::unordered_multimap<int64_t, int32_t> starts_;
  std::unordered_multimap<int64_t, int32_t> ends_;
};

}  // namespace spmdsim::passes
