#include "passes/memory/allocation_timeline.h"

#include <algorithm>
#include <climits>
#include <utility>
#include <vector>

namespace spmdsim::passes {

bool AllocationTimeline::StrictlyOverlaps(const TimeBound& range) const {
  auto it = hull_.lower_bound({range.end, INT64_MIN});
  if (it == hull_.begin()) return false;
  --it;
  return it->second > range.start;
}

namespace {

constexpr std::pair<int64_t, int64_t> kBeforeAll{INT64_MIN, INT64_MIN};
constexpr std::pair<int64_t, int64_t> kAfterAll{INT64_MAX, INT64_MAX};

}  // namespace

AllocationGapIndex::AllocationGapIndex(std::vector<int64_t> gap_starts)
    : starts_(std::move(gap_starts)) {
  starts_.push_back(INT64_MIN);
  std::sort(starts_.begin(), starts_.end());
  starts_.erase(std::unique(starts_.begin(), starts_.end()), starts_.end());
  ends_at_.resize(starts_.size());
  max_end_.assign(2 * starts_.size(), INT64_MIN);
}

void AllocationGapIndex::Insert(int64_t start, int64_t end) {
  const auto it = std::lower_bound(starts_.begin(), starts_.end(), start);
  if (it == starts_.end() || *it != start) {
    off_ = true;
    return;
  }
  const auto leaf = static_cast<size_t>(it - starts_.begin());
  ends_at_[leaf].push_back(end);
  Refresh(leaf);
}

void AllocationGapIndex::Erase(int64_t start, int64_t end) {
  const auto it = std::lower_bound(starts_.begin(), starts_.end(), start);
  if (it == starts_.end() || *it != start) return;
  const auto leaf = static_cast<size_t>(it - starts_.begin());
  std::vector<int64_t>& ends = ends_at_[leaf];
  const auto found = std::find(ends.begin(), ends.end(), end);
  if (found == ends.end()) return;
  *found = ends.back();
  ends.pop_back();
  Refresh(leaf);
}

void AllocationGapIndex::Refresh(size_t leaf) {
  const std::vector<int64_t>& ends = ends_at_[leaf];
  const size_t n = starts_.size();
  size_t node = leaf + n;
  max_end_[node] = ends.empty() ? INT64_MIN : *std::max_element(ends.begin(), ends.end());
  for (node /= 2; node >= 1; node /= 2) {
    max_end_[node] = std::max(max_end_[2 * node], max_end_[2 * node + 1]);
  }
}

bool AllocationGapIndex::AnyContains(const TimeBound& range) const {
  if (off_) return true;
  // The gaps starting at or before range.start: leaves [0, last].
  const auto last = static_cast<size_t>(
      std::upper_bound(starts_.begin(), starts_.end(), range.start) - starts_.begin());
  int64_t latest = INT64_MIN;
  const size_t n = starts_.size();
  for (size_t lo = n, hi = last + n; lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1) latest = std::max(latest, max_end_[lo++]);
    if (hi & 1) latest = std::max(latest, max_end_[--hi]);
  }
  return latest >= range.end;
}

void AllocationTimeline::TrackGaps(AllocationGapIndex* index) {
  gaps_ = index;
  Interval previous = kBeforeAll;
  for (const Interval& interval : hull_) {
    gaps_->Insert(previous.second, interval.first);
    previous = interval;
  }
  gaps_->Insert(previous.second, kAfterAll.first);
}

void AllocationTimeline::ReplaceGaps(const Interval& before, const std::vector<Interval>& removed,
                                     const Interval& added, const Interval& after) {
  Interval previous = before;
  for (const Interval& interval : removed) {
    gaps_->Erase(previous.second, interval.first);
    previous = interval;
  }
  gaps_->Erase(previous.second, after.first);
  gaps_->Insert(before.second, added.first);
  gaps_->Insert(added.second, after.first);
}

void AllocationTimeline::Add(int32_t value_id, const TimeBound& range) {
  starts_.emplace(range.start, value_id);
  ends_.emplace(range.end, value_id);
  const auto neighbours = [&](std::set<Interval>::iterator added) {
    const Interval before = added == hull_.begin() ? kBeforeAll : *std::prev(added);
    const auto next = std::next(added);
    return std::make_pair(before, next == hull_.end() ? kAfterAll : *next);
  };
  if (range.start == range.end) {
    // A point inside an interval's interior adds nothing to the union's interior.
    if (StrictlyOverlaps(range)) return;
    const auto [added, inserted] = hull_.insert({range.start, range.end});
    if (inserted && gaps_ != nullptr) {
      const auto [before, after] = neighbours(added);
      ReplaceGaps(before, {}, *added, after);
    }
    return;
  }
  std::vector<Interval> removed;
  int64_t start = range.start;
  int64_t end = range.end;
  auto it = hull_.lower_bound({start, INT64_MIN});
  if (it != hull_.begin()) {
    const auto before = std::prev(it);
    if (before->second > start) it = before;  // reaches into the new range
  }
  // Everything starting before the new end meets the new interior, but a point at its start.
  while (it != hull_.end() && it->first < end) {
    if (it->first == it->second && it->first == range.start && it->first == start) {
      ++it;
      continue;
    }
    start = std::min(start, it->first);
    end = std::max(end, it->second);
    if (gaps_ != nullptr) removed.push_back(*it);
    it = hull_.erase(it);
  }
  const auto added = hull_.insert({start, end}).first;
  if (gaps_ != nullptr) {
    const auto [before, after] = neighbours(added);
    ReplaceGaps(before, removed, *added, after);
  }
}

}  // namespace spmdsim::passes
