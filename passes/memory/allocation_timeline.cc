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
  leaf_gap_.resize(starts_.size());
  more_gaps_.resize(starts_.size());
  max_end_.assign(2 * starts_.size(), INT64_MIN);
}

void AllocationGapIndex::SetTrailingStart(int32_t owner, int64_t start) {
  const auto at = static_cast<size_t>(owner);
  if (at >= trailing_start_.size()) trailing_start_.resize(at + 1, INT64_MAX);
  trailing_start_[at] = start;
  if (at >= owner_leaves_) {
    // Grow the tree to the next power of two and rebuild it.
    owner_leaves_ = std::max<size_t>(owner_leaves_, 1);
    while (owner_leaves_ <= at) owner_leaves_ *= 2;
    earliest_trailing_.assign(2 * owner_leaves_, INT64_MAX);
    for (size_t o = 0; o < trailing_start_.size(); ++o) {
      earliest_trailing_[owner_leaves_ + o] = trailing_start_[o];
    }
    for (size_t node = owner_leaves_ - 1; node >= 1; --node) {
      earliest_trailing_[node] =
          std::min(earliest_trailing_[2 * node], earliest_trailing_[2 * node + 1]);
    }
    return;
  }
  size_t node = owner_leaves_ + at;
  earliest_trailing_[node] = start;
  for (node /= 2; node >= 1; node /= 2) {
    earliest_trailing_[node] =
        std::min(earliest_trailing_[2 * node], earliest_trailing_[2 * node + 1]);
  }
}

int32_t AllocationGapIndex::HighestTrailingBelow(int64_t start, int32_t below) const {
  if (below <= 0 || owner_leaves_ == 0) return -1;
  // Walk up from the leaf left of `below` to the first left sibling subtree with a start by
  // `start`, then down its rightmost such path.
  size_t node = owner_leaves_ + static_cast<size_t>(below) - 1;
  if (earliest_trailing_[node] <= start) return below - 1;
  while (true) {
    // Move to the previous subtree at this level: a left sibling, else climb.
    while (node > 1 && node % 2 == 0) node /= 2;
    if (node <= 1) return -1;
    --node;  // the left sibling
    if (earliest_trailing_[node] <= start) break;
  }
  while (node < owner_leaves_) {
    node = earliest_trailing_[2 * node + 1] <= start ? 2 * node + 1 : 2 * node;
  }
  return static_cast<int32_t>(node - owner_leaves_);
}

void AllocationGapIndex::Insert(int64_t start, int64_t end, int32_t owner) {
  if (end == INT64_MAX) {
    SetTrailingStart(owner, start);
    return;
  }
  const auto it = std::lower_bound(starts_.begin(), starts_.end(), start);
  if (it == starts_.end() || *it != start) {
    off_ = true;
    return;
  }
  const auto leaf = static_cast<size_t>(it - starts_.begin());
  LeafGap& first = leaf_gap_[leaf];
  if (first.owner < 0) {
    first.end = end;
    first.owner = owner;
  } else {
    more_gaps_[leaf].push_back(Gap{end, owner});
    ++first.more;
  }
  Refresh(leaf);
}

void AllocationGapIndex::Erase(int64_t start, int64_t end, int32_t owner) {
  if (end == INT64_MAX) {
    if (static_cast<size_t>(owner) < trailing_start_.size() &&
        trailing_start_[static_cast<size_t>(owner)] == start) {
      SetTrailingStart(owner, INT64_MAX);
    }
    return;
  }
  const auto it = std::lower_bound(starts_.begin(), starts_.end(), start);
  if (it == starts_.end() || *it != start) return;
  const auto leaf = static_cast<size_t>(it - starts_.begin());
  LeafGap& first = leaf_gap_[leaf];
  std::vector<Gap>& more = more_gaps_[leaf];
  if (first.owner == owner && first.end == end) {
    if (first.more == 0) {
      first = LeafGap{};
    } else {
      first.end = more.back().end;
      first.owner = more.back().owner;
      more.pop_back();
      --first.more;
    }
    Refresh(leaf);
    return;
  }
  const auto found = std::find_if(more.begin(), more.end(), [&](const Gap& gap) {
    return gap.end == end && gap.owner == owner;
  });
  if (found == more.end()) return;
  *found = more.back();
  more.pop_back();
  --first.more;
  Refresh(leaf);
}

void AllocationGapIndex::Refresh(size_t leaf) {
  const LeafGap& first = leaf_gap_[leaf];
  int64_t latest = first.end;  // INT64_MIN when the leaf holds none
  if (first.more > 0) {
    for (const Gap& gap : more_gaps_[leaf]) latest = std::max(latest, gap.end);
  }
  size_t node = leaf + starts_.size();
  if (max_end_[node] == latest) return;
  max_end_[node] = latest;
  // Up to the first ancestor whose latest end does not change: the ones above it keep theirs.
  for (node /= 2; node >= 1; node /= 2) {
    const int64_t updated = std::max(max_end_[2 * node], max_end_[2 * node + 1]);
    if (max_end_[node] == updated) break;
    max_end_[node] = updated;
  }
}

size_t AllocationGapIndex::LeavesStartingBy(int64_t start) const {
  return static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), start) -
                             starts_.begin());
}

bool AllocationGapIndex::AnyContains(const TimeBound& range) const {
  if (off_) return true;
  if (owner_leaves_ > 0 && earliest_trailing_[1] <= range.start) return true;
  int64_t latest = INT64_MIN;
  const size_t n = starts_.size();
  for (size_t lo = n, hi = LeavesStartingBy(range.start) + n; lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1) latest = std::max(latest, max_end_[lo++]);
    if (hi & 1) latest = std::max(latest, max_end_[--hi]);
  }
  return latest >= range.end;
}

std::vector<int32_t>& AllocationGapIndex::InnerOwnersContaining(const TimeBound& range) const {
  std::vector<int32_t>& owners = inner_owners_;
  owners.clear();
  const size_t n = starts_.size();
  // The subtrees of the prefix's canonical nodes hold only leaves of the prefix; descend only
  // where some gap ends late enough. Owners are marked in a bitmap (they are few and dense), so
  // the answer comes out sorted and each once without a sort.
  pending_.clear();
  for (size_t lo = n, hi = LeavesStartingBy(range.start) + n; lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1) pending_.push_back(lo++);
    if (hi & 1) pending_.push_back(--hi);
  }
  size_t words = 0;
  while (!pending_.empty()) {
    const size_t node = pending_.back();
    pending_.pop_back();
    if (max_end_[node] < range.end) continue;
    if (node >= n) {
      const auto mark = [&](int64_t end, int32_t owner) {
        if (end < range.end) return;
        const auto word = static_cast<size_t>(owner) / 64;
        if (word >= owner_bits_.size()) owner_bits_.resize(word + 1, 0);
        owner_bits_[word] |= uint64_t{1} << (owner % 64);
        words = std::max(words, word + 1);
      };
      const LeafGap& first = leaf_gap_[node - n];
      mark(first.end, first.owner);  // a leaf under a late enough end holds a first gap
      if (first.more > 0) {
        for (const Gap& gap : more_gaps_[node - n]) mark(gap.end, gap.owner);
      }
      continue;
    }
    pending_.push_back(2 * node);
    pending_.push_back(2 * node + 1);
  }
  for (size_t word = 0; word < words; ++word) {
    for (uint64_t bits = owner_bits_[word]; bits != 0; bits &= bits - 1) {
      owners.push_back(static_cast<int32_t>(word * 64) + __builtin_ctzll(bits));
    }
    owner_bits_[word] = 0;
  }
  return owners;
}

bool AllocationGapIndex::OwnersContaining(const TimeBound& range,
                                          std::vector<int32_t>* owners) const {
  if (off_) return false;
  owners->clear();
  VisitOwnersContaining(range, [&](int32_t owner) {
    owners->push_back(owner);
    return false;
  });
  std::reverse(owners->begin(), owners->end());
  return true;
}

ValueTouchIndex::ValueTouchIndex(size_t value_count, size_t time_count)
    : first_ending_(time_count, -1),
      first_starting_(time_count, -1),
      next_ending_(value_count, -1),
      next_starting_(value_count, -1),
      owner_(value_count, -1) {}

void ValueTouchIndex::Push(std::vector<int32_t>& heads, std::vector<int32_t>& next, int64_t time,
                           int32_t value_id) {
  const auto at = static_cast<size_t>(time);
  next[static_cast<size_t>(value_id)] = heads[at];
  heads[at] = value_id;
}

void ValueTouchIndex::Add(int32_t value_id, const TimeBound& range, int32_t owner) {
  owner_[static_cast<size_t>(value_id)] = owner;
  const auto inside = [&](int64_t time) {
    return time >= 0 && static_cast<uint64_t>(time) < first_ending_.size();
  };
  if (!inside(range.start) || !inside(range.end)) {
    outside_.emplace_back(value_id, range);
    return;
  }
  Push(first_ending_, next_ending_, range.end, value_id);
  Push(first_starting_, next_starting_, range.start, value_id);
}

void AllocationTimeline::TrackGaps(AllocationGapIndex* index, int32_t owner) {
  gaps_ = index;
  owner_ = owner;
  Interval previous = kBeforeAll;
  for (const Interval& interval : hull_) {
    gaps_->Insert(previous.second, interval.first, owner_);
    previous = interval;
  }
  gaps_->Insert(previous.second, kAfterAll.first, owner_);
}

void AllocationTimeline::ReplaceGaps(const Interval& before, const std::vector<Interval>& removed,
                                     const Interval& added, const Interval& after) {
  Interval previous = before;
  for (const Interval& interval : removed) {
    gaps_->Erase(previous.second, interval.first, owner_);
    previous = interval;
  }
  gaps_->Erase(previous.second, after.first, owner_);
  gaps_->Insert(before.second, added.first, owner_);
  gaps_->Insert(added.second, after.first, owner_);
}

void AllocationTimeline::Add(const TimeBound& range) {
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
