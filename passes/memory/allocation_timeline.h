// When the values placed in one allocation are live, for XLA's buffer assignment (memory_analysis):
// whether a new value's live range overlaps them by more than a touching end, and which of them
// touch it (those decide by the operand-sharing rules). Both in O(log n), so an allocation that
// many temporaries reuse (an output buffer of a flat million-instruction graph) costs no more
// per query than a small one.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "passes/memory/live_range_analysis.h"
#include "passes/memory/sorted_intervals.h"

namespace spmdsim::passes {

// The free stretches (gaps) of many allocations' timelines at once, to answer "can any of them
// take this range?" in O(log n) instead of asking each: XLA's assignment offers a temporary to
// every reusable allocation, and on a large flat graph almost every offer is refused.
class AllocationGapIndex {
 public:
  static constexpr int32_t kListedGaps = 256;

  // `gap_starts`: every time a gap may start at, i.e. the end of every range the tracked
  // timelines will hold. A gap starting elsewhere turns the index off (AnyContains is then
  // always true, which only costs the scan it saves). A leaf with more than `listed_gaps`
  // gaps besides its first is crowded (below); tests pass a small bound to reach that often.
  explicit AllocationGapIndex(std::vector<int64_t> gap_starts, int32_t listed_gaps = kListedGaps);

  // A gap [start, end] of the timeline `owner` (ends are INT64_MIN / INT64_MAX before the first
  // range and after the last) joins or leaves the index; gaps are a multiset.
  void Insert(int64_t start, int64_t end, int32_t owner);
  void Erase(int64_t start, int64_t end, int32_t owner);

  // Some tracked gap holds `range` whole: start <= range.start and range.end <= end. Exactly
  // "some tracked timeline does not StrictlyOverlap `range`".
  bool AnyContains(const TimeBound& range) const;

  // The owners of the tracked gaps that hold `range` whole (sorted, each once), i.e. exactly the
  // tracked timelines that do not StrictlyOverlap it; false (and `owners` untouched) when the
  // index is off and cannot tell. Owners are small non-negative numbers (the answer is built in
  // a bitmap as large as the largest).
  bool OwnersContaining(const TimeBound& range, std::vector<int32_t>* owners) const;

  // The same owners, highest first, passed to `visit` until it returns true; false when the
  // index is off. The owners free after their last range (most of them, on a large module) come
  // one at a time from a tree over owners, so a visit that stops at the first costs O(log n)
  // for them however many there are.
  template <typename Visit>
  bool VisitOwnersContaining(const TimeBound& range, Visit&& visit) const {
    if (off_) return false;
    std::vector<int32_t>& inner = InnerOwnersContaining(range);
    int32_t below = static_cast<int32_t>(trailing_start_.size());
    auto next_inner = inner.rbegin();
    while (true) {
      const int32_t trailing = HighestTrailingBelow(range.start, below);
      const int32_t from_inner = next_inner == inner.rend() ? -1 : *next_inner;
      const int32_t from_crowded = HighestCrowdedBelow(range.end, below);
      const int32_t owner = std::max({trailing, from_inner, from_crowded});
      if (owner < 0) return true;
      if (owner == from_inner) ++next_inner;
      below = owner;  // an owner in both lists is visited once
      if (visit(owner)) return true;
    }
  }

 private:
  struct Gap {
    int64_t end;
    int32_t owner;
  };
  // Rescans a leaf's gaps for its latest end.
  void Refresh(size_t leaf);
  // Sets a leaf's latest end and its ancestors'.
  void SetLatest(size_t leaf, int64_t latest);
  // The number of leaves holding the gaps that start at or before `start`.
  size_t LeavesStartingBy(int64_t start) const;
  // The leaf of the gaps starting at `start`; -1 when it is not one of starts_.
  int64_t LeafStartingAt(int64_t start) const;
  // The owners of the gaps that end before INT64_MAX and hold `range`, sorted, each once, but
  // those of crowded leaves: the crowded leaves holding such gaps are left in crowded_hits_.
  std::vector<int32_t>& InnerOwnersContaining(const TimeBound& range) const;
  // The highest owner below `below` of a gap ending at or after `end` in the crowded leaves
  // InnerOwnersContaining left (-1: none).
  int32_t HighestCrowdedBelow(int64_t end, int32_t below) const;
  // The highest owner below `below` whose gap after its last range starts by `start`; -1: none.
  int32_t HighestTrailingBelow(int64_t start, int32_t below) const;
  void SetTrailingStart(int32_t owner, int64_t start);

  bool off_ = false;
  std::vector<int64_t> starts_;  // sorted, unique, starts_[0] = INT64_MIN
  // When every start given lies in [0, 4 * their count + 1024]: by time t, the number of
  // starts_ up to t (shifted left by one) and whether t is one (the low bit). Empty otherwise.
  std::vector<uint32_t> by_time_;
  // The gaps starting at each, but those to INT64_MAX: the first in place (owner -1: none; it
  // counts the others), the others in more_gaps_. Most leaves hold one gap (the end of one
  // value), and a query reads it without a second cache miss.
  struct LeafGap {
    int64_t end = INT64_MIN;
    int32_t owner = -1;
    int32_t more : 31 = 0;
    bool crowded : 1 = false;  // its others are in crowded_, not in more_gaps_
  };
  std::vector<LeafGap> leaf_gap_;
  std::vector<std::vector<Gap>> more_gaps_;
  // A leaf holding more than listed_gaps_ other gaps is crowded (many values end at one
  // instruction, e.g. the operands of a wide concatenate or all-reduce, each in its own
  // allocation): its other gaps move here, ordered by owner, with the latest end of each block
  // of kOwnerBlock owners. A query then finds the highest owner whose gap ends late enough from
  // the blocks, an erase finds its gap in O(log n), and the leaf's latest end is read, not
  // scanned; listed, each was linear in the leaf's gaps, and so quadratic in all.
  // Bounds on a scan's cost, not on an answer: a leaf becomes crowded above listed_gaps_ others
  // and is listed again at half that, so a leaf near the bound does not move back and forth.
  // (BERT-sized programs have leaves of a few hundred gaps, which a scan serves faster.)
  int32_t listed_gaps_;
  static constexpr int32_t kOwnerBlock = 64;
  struct CrowdedLeaf {
    std::multiset<std::pair<int32_t, int64_t>> by_owner;  // (owner, end)
    std::vector<int64_t> block_latest;                    // by owner / kOwnerBlock
    std::multiset<int64_t> ends;
    void Add(Gap gap);
    void Remove(std::multiset<std::pair<int32_t, int64_t>>::iterator gap);
    void UpdateBlock(int32_t owner);  // rescans the latest end of the owner's block
    // The highest owner below `below` of a gap ending at or after `end`; -1: none.
    int32_t HighestBelow(int64_t end, int32_t below) const;
  };
  std::unordered_map<size_t, CrowdedLeaf> crowded_;
  void AddOther(size_t leaf, Gap gap);
  // Removes one other gap equal to `gap`; false when there is none.
  bool RemoveOther(size_t leaf, Gap gap);
  // Removes and returns some other gap of the leaf, which has one.
  Gap TakeOther(size_t leaf);
  mutable std::vector<const CrowdedLeaf*> crowded_hits_;
  // A tree over starts_ with kFanout children per node (a node's children share a cache
  // line): the latest end of the gaps below each node. Level l's nodes are
  // max_end_[level_begin_[l], level_begin_[l + 1]); level 0 holds the leaves.
  static constexpr size_t kFanout = 8;
  std::vector<int64_t> max_end_;
  std::vector<size_t> level_begin_;
  // Calls visit(level, index) for the nodes whose subtrees hold exactly the leaves [0, leaves):
  // at each level the nodes of the partial block (the whole blocks are left to their parents
  // above), and at the top every node of the prefix.
  template <typename Visit>
  void ForEachPrefixNode(size_t leaves, Visit&& visit) const {
    size_t count = leaves;
    for (size_t level = 0; level < level_begin_.size() && count > 0; ++level) {
      const bool top = level + 1 == level_begin_.size();
      const size_t whole = top ? 0 : count / kFanout * kFanout;
      for (size_t index = whole; index < count; ++index) visit(level, index);
      count /= kFanout;
    }
  }
  // By owner: where its gap to INT64_MAX starts (INT64_MAX: it has none), and a segment tree
  // over owners holding the earliest such start below each node.
  std::vector<int64_t> trailing_start_;
  std::vector<int64_t> earliest_trailing_;
  size_t owner_leaves_ = 0;
  // Scratch, kept to spare an allocation per query.
  mutable std::vector<std::pair<size_t, size_t>> pending_;  // (level, index)
  mutable std::vector<uint64_t> owner_bits_;
  mutable std::vector<int32_t> inner_owners_;
};

// Which values start and end at each time, over all allocations at once, for "which values of
// this allocation touch a new range": a value joins in O(1) with nothing allocated per value
// (a linked list per time through arrays by value id), where a hash map per allocation cost a
// node per value. Only the values ending or starting at one instruction share a list, so a
// query scans few; where many do (the operands and outputs of a combined all-reduce), the
// list's values are also kept by owner, and a query reads only its owner's.
class ValueTouchIndex {
 public:
  // Value ids are below `value_count`, times (schedule positions) in [0, time_count).
  ValueTouchIndex(size_t value_count, size_t time_count);

  void Add(int32_t value_id, const TimeBound& range, int32_t owner);

  // Calls visit(value_id) for each value of `owner` whose range ends where `range` starts or
  // starts where it ends (a value may be visited twice).
  template <typename Visit>
  void ForEachTouching(int32_t owner, const TimeBound& range, Visit&& visit) const {
    VisitList(ending_, range.start, owner, visit);
    VisitList(starting_, range.end, owner, visit);
    for (const auto& [id, bound] : outside_) {
      if (owner_[id] != owner) continue;
      if (bound.end == range.start) visit(id);
      if (bound.start == range.end) visit(id);
    }
  }

 private:
  // A list longer than this is also kept by owner (a bound on a scan's cost, not an answer).
  static constexpr uint8_t kScannedPerTime = 64;
  // The values ending (or starting) at each time: a list per time through `next`, and, for the
  // times whose list is longer than kScannedPerTime, the same values by owner.
  struct Lists {
    std::vector<int32_t> head;    // by time: the first value (-1: none)
    std::vector<uint8_t> length;  // by time, up to kScannedPerTime + 1 (a byte: few misses)
    std::vector<int32_t> next;    // by value
    std::unordered_map<int64_t, std::unordered_map<int32_t, std::vector<int32_t>>> crowded;
  };
  void Push(Lists& lists, int64_t time, int32_t value_id);
  template <typename Visit>
  void VisitList(const Lists& lists, int64_t time, int32_t owner, Visit& visit) const {
    if (time < 0 || static_cast<uint64_t>(time) >= lists.head.size()) return;
    const auto at = static_cast<size_t>(time);
    if (lists.length[at] > kScannedPerTime) {
      const auto& by_owner = lists.crowded.at(time);
      const auto values = by_owner.find(owner);
      if (values == by_owner.end()) return;
      for (int32_t id : values->second) visit(id);
      return;
    }
    for (int32_t id = lists.head[at]; id >= 0; id = lists.next[static_cast<size_t>(id)]) {
      if (owner_[static_cast<size_t>(id)] == owner) visit(id);
    }
  }

  Lists ending_;
  Lists starting_;
  std::vector<int32_t> owner_;  // by value, -1 while in no allocation
  // The ranges with an end outside [0, time_count) (none from LiveRangeAnalysis), checked by
  // every query.
  std::vector<std::pair<int32_t, TimeBound>> outside_;
};

class AllocationTimeline {
 public:
  void Add(const TimeBound& range);

  // From now on keeps `index` holding this timeline's gaps under the name `owner` (its current
  // ones are added now).
  void TrackGaps(AllocationGapIndex* index, int32_t owner);

  // Some value is live strictly inside [range.start, range.end]: its range starts before the
  // end and ends after the start.
  bool StrictlyOverlaps(const TimeBound& range) const;
  // The same; when true, `*witness` is a stretch of the timeline that `range` meets: every later
  // range r with witness->start < r.end and witness->end > r.start overlaps the timeline too
  // (its values only accumulate).
  bool StrictlyOverlaps(const TimeBound& range, TimeBound* witness) const;

 private:
  // The union of the ranges as intervals with disjoint interiors, sorted by (start, end); a
  // point range is kept only where it lies in no interval's interior. Merging ranges whose
  // interiors meet keeps StrictlyOverlaps exact (it asks whether the query meets an interior),
  // and with disjoint interiors the ends rise with the starts, so the last interval starting
  // before the query's end has the latest end among them.
  using Interval = SortedIntervals::Interval;
  // The index learns the gaps between `before`, the removed intervals and `after` (set order)
  // are gone, and those around `added` are new.
  void ReplaceGaps(const Interval& before, const std::vector<Interval>& removed,
                   const Interval& added, const Interval& after);

  SortedIntervals hull_;
  AllocationGapIndex* gaps_ = nullptr;
  int32_t owner_ = -1;
};

}  // namespace spmdsim::passes
