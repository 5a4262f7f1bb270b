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
#include <vector>

#include "passes/memory/live_range_analysis.h"

namespace spmdsim::passes {

// The free stretches (gaps) of many allocations' timelines at once, to answer "can any of them
// take this range?" in O(log n) instead of asking each: XLA's assignment offers a temporary to
// every reusable allocation, and on a large flat graph almost every offer is refused.
class AllocationGapIndex {
 public:
  // `gap_starts`: every time a gap may start at, i.e. the end of every range the tracked
  // timelines will hold. A gap starting elsewhere turns the index off (AnyContains is then
  // always true, which only costs the scan it saves).
  explicit AllocationGapIndex(std::vector<int64_t> gap_starts);

  // A gap [start, end] of the timeline `owner` (ends are INT64_MIN / INT64_MAX before the first
  // range and after the last) joins or leaves the index; gaps are a multiset.
  void Insert(int64_t start, int64_t end, int32_t owner);
  void Erase(int64_t start, int64_t end, int32_t owner);

  // Some tracked gap holds `range` whole: start <= range.start and range.end <= end. Exactly
  // "some tracked timeline does not StrictlyOverlap `range`".
  bool AnyContains(const TimeBound& range) const;

  // The owners of the tracked gaps that hold `range` whole (sorted, each once), i.e. exactly the
  // tracked timelines that do not StrictlyOverlap it, in O((k + 1) log n) for k of them; false
  // (and `owners` untouched) when the index is off and cannot tell.
  bool OwnersContaining(const TimeBound& range, std::vector<int32_t>* owners) const;

 private:
  struct Gap {
    int64_t end;
    int32_t owner;
  };
  void Refresh(size_t leaf);
  // The number of leaves holding the gaps that start at or before `start`.
  size_t LeavesStartingBy(int64_t start) const;

  bool off_ = false;
  std::vector<int64_t> starts_;            // sorted, unique, starts_[0] = INT64_MIN
  std::vector<std::vector<Gap>> gaps_at_;  // the gaps starting at each
  std::vector<int64_t> max_end_;           // segment tree over starts_: the latest end
};

class AllocationTimeline {
 public:
  void Add(int32_t value_id, const TimeBound& range);

  // From now on keeps `index` holding this timeline's gaps under the name `owner` (its current
  // ones are added now).
  void TrackGaps(AllocationGapIndex* index, int32_t owner);

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
  using Interval = std::pair<int64_t, int64_t>;
  // The index learns the gaps between `before`, the removed intervals and `after` (set order)
  // are gone, and those around `added` are new.
  void ReplaceGaps(const Interval& before, const std::vector<Interval>& removed,
                   const Interval& added, const Interval& after);

  std::set<Interval> hull_;
  AllocationGapIndex* gaps_ = nullptr;
  int32_t owner_ = -1;
  std::unordered_multimap<int64_t, int32_t> starts_;
  std::unordered_multimap<int64_t, int32_t> ends_;
};

}  // namespace spmdsim::passes
