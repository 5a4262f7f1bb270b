#include "passes/memory/allocation_timeline.h"

#include <algorithm>
#include <climits>
#include <utility>
#include <vector>

namespace spmdsim::passes {

bool AllocationTimeline::StrictlyOverlaps(const TimeBound& range) const {
  const auto it = hull_.LowerBound({range.end, INT64_MIN});
  return !hull_.IsBegin(it) && hull_.At(hull_.Prev(it)).second > range.start;
}

bool AllocationTimeline::StrictlyOverlaps(const TimeBound& range, TimeBound* witness) const {
  const auto it = hull_.LowerBound({range.end, INT64_MIN});
  if (hull_.IsBegin(it)) return false;
  const Interval& interval = hull_.At(hull_.Prev(it));
  if (interval.second <= range.start) return false;
  // The interval's interior is a union of its ranges' (or it is a point range), and intervals
  // only merge into larger ones.
  witness->start = interval.first;
  witness->end = interval.second;
  return true;
}

namespace {

constexpr std::pair<int64_t, int64_t> kBeforeAll{INT64_MIN, INT64_MIN};
constexpr std::pair<int64_t, int64_t> kAfterAll{INT64_MAX, INT64_MAX};

}  // namespace

AllocationGapIndex::AllocationGapIndex(std::vector<int64_t> gap_starts, int32_t listed_gaps)
    : listed_gaps_(std::max(listed_gaps, 1)) {
  // Times of a schedule are small and dense: then the starts are sorted by marking them in a
  // table by time, and the table replaces the binary searches over starts_ (a cache miss per
  // step on a million starts).
  const auto [lowest, highest] = std::minmax_element(gap_starts.begin(), gap_starts.end());
  const bool dense = !gap_starts.empty() && *lowest >= 0 && gap_starts.size() < (size_t{1} << 29) &&
                     *highest <= 4 * static_cast<int64_t>(gap_starts.size()) + 1024;
  if (!dense) {
    starts_ = std::move(gap_starts);
    starts_.push_back(INT64_MIN);
    std::sort(starts_.begin(), starts_.end());
    starts_.erase(std::unique(starts_.begin(), starts_.end()), starts_.end());
  } else {
    by_time_.assign(static_cast<size_t>(*highest) + 1, 0);
    for (int64_t t : gap_starts) by_time_[static_cast<size_t>(t)] = 1;
    starts_.push_back(INT64_MIN);
    uint32_t count = 1;  // starts up to t, INT64_MIN included
    for (size_t t = 0; t < by_time_.size(); ++t) {
      const bool is_start = by_time_[t] != 0;
      if (is_start) {
        starts_.push_back(static_cast<int64_t>(t));
        ++count;
      }
      by_time_[t] = count << 1 | (is_start ? 1U : 0U);
    }
  }
  leaf_gap_.resize(starts_.size());
  more_gaps_.resize(starts_.size());
  // Level 0 holds the leaves; each level above one entry per block of kFanout below, every
  // level padded to whole blocks (with INT64_MIN: no gap) and one block at the top.
  size_t count = starts_.size();
  size_t at = 0;
  while (true) {
    const size_t padded = (count + kFanout - 1) / kFanout * kFanout;
    level_begin_.push_back(at);
    at += padded;
    if (padded == kFanout) break;
    count = padded / kFanout;
  }
  max_end_.assign(at, INT64_MIN);
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
  const int64_t found = LeafStartingAt(start);
  if (found < 0) {
    off_ = true;
    return;
  }
  const auto leaf = static_cast<size_t>(found);
  LeafGap& first = leaf_gap_[leaf];
  if (first.owner < 0) {
    first.end = end;
    first.owner = owner;
  } else {
    AddOther(leaf, Gap{end, owner});
  }
  // The leaf's latest end can only rise (a leaf of thousands of gaps is not scanned again).
  SetLatest(leaf, std::max(max_end_[level_begin_[0] + leaf], end));
}

void AllocationGapIndex::Erase(int64_t start, int64_t end, int32_t owner) {
  if (end == INT64_MAX) {
    if (static_cast<size_t>(owner) < trailing_start_.size() &&
        trailing_start_[static_cast<size_t>(owner)] == start) {
      SetTrailingStart(owner, INT64_MAX);
    }
    return;
  }
  const int64_t at = LeafStartingAt(start);
  if (at < 0) return;
  const auto leaf = static_cast<size_t>(at);
  LeafGap& first = leaf_gap_[leaf];
  // Removing a gap that ends before the leaf's latest leaves that latest end in place.
  const bool keeps_latest = end < max_end_[level_begin_[0] + leaf];
  if (first.owner == owner && first.end == end) {
    if (first.more == 0) {
      first = LeafGap{};
    } else {
      const Gap other = TakeOther(leaf);
      first.end = other.end;
      first.owner = other.owner;
    }
  } else if (!RemoveOther(leaf, Gap{end, owner})) {
    return;
  }
  if (!keeps_latest) Refresh(leaf);
}

void AllocationGapIndex::AddOther(size_t leaf, Gap gap) {
  LeafGap& first = leaf_gap_[leaf];
  if (!first.crowded && first.more < listed_gaps_) {
    more_gaps_[leaf].push_back(gap);
  } else {
    CrowdedLeaf& crowded = crowded_[leaf];
    if (!first.crowded) {
      for (const Gap& listed : more_gaps_[leaf]) crowded.Add(listed);
      std::vector<Gap>().swap(more_gaps_[leaf]);
      first.crowded = true;
    }
    crowded.Add(gap);
  }
  ++first.more;
}

bool AllocationGapIndex::RemoveOther(size_t leaf, Gap gap) {
  LeafGap& first = leaf_gap_[leaf];
  if (!first.crowded) {
    std::vector<Gap>& more = more_gaps_[leaf];
    const auto found = std::find_if(more.begin(), more.end(), [&](const Gap& listed) {
      return listed.end == gap.end && listed.owner == gap.owner;
    });
    if (found == more.end()) return false;
    *found = more.back();
    more.pop_back();
    --first.more;
    return true;
  }
  CrowdedLeaf& crowded = crowded_.at(leaf);
  const auto found = crowded.by_owner.find({gap.owner, gap.end});
  if (found == crowded.by_owner.end()) return false;
  crowded.Remove(found);
  --first.more;
  if (first.more == listed_gaps_ / 2) {  // listed again
    first.crowded = false;
    for (const auto& [owner, end] : crowded.by_owner) more_gaps_[leaf].push_back(Gap{end, owner});
    crowded_.erase(leaf);
  }
  return true;
}

AllocationGapIndex::Gap AllocationGapIndex::TakeOther(size_t leaf) {
  const LeafGap& first = leaf_gap_[leaf];
  Gap gap{};
  if (!first.crowded) {
    gap = more_gaps_[leaf].back();
  } else {
    const auto& [owner, end] = *crowded_.at(leaf).by_owner.begin();
    gap = Gap{end, owner};
  }
  RemoveOther(leaf, gap);
  return gap;
}

void AllocationGapIndex::CrowdedLeaf::Add(Gap gap) {
  by_owner.emplace(gap.owner, gap.end);
  ends.insert(gap.end);
  const auto block = static_cast<size_t>(gap.owner / kOwnerBlock);
  if (block >= block_latest.size()) block_latest.resize(block + 1, INT64_MIN);
  block_latest[block] = std::max(block_latest[block], gap.end);  // a latest end only rises
}

void AllocationGapIndex::CrowdedLeaf::Remove(
    std::multiset<std::pair<int32_t, int64_t>>::iterator gap) {
  const auto [owner, end] = *gap;
  by_owner.erase(gap);
  ends.erase(ends.find(end));
  // The block is rescanned only when the removed gap held its latest end.
  if (end == block_latest[static_cast<size_t>(owner / kOwnerBlock)]) UpdateBlock(owner);
}

void AllocationGapIndex::CrowdedLeaf::UpdateBlock(int32_t owner) {
  const auto block = static_cast<size_t>(owner / kOwnerBlock);
  int64_t latest = INT64_MIN;
  const int32_t first_owner = static_cast<int32_t>(block) * kOwnerBlock;
  for (auto it = by_owner.lower_bound({first_owner, INT64_MIN});
       it != by_owner.end() && it->first < first_owner + kOwnerBlock; ++it) {
    latest = std::max(latest, it->second);
  }
  block_latest[block] = latest;
}

int32_t AllocationGapIndex::CrowdedLeaf::HighestBelow(int64_t end, int32_t below) const {
  if (below <= 0 || block_latest.empty()) return -1;
  auto block = std::min(static_cast<int64_t>((below - 1) / kOwnerBlock),
                        static_cast<int64_t>(block_latest.size()) - 1);
  for (; block >= 0; --block) {
    if (block_latest[static_cast<size_t>(block)] < end) continue;
    const auto first_owner = static_cast<int32_t>(block) * kOwnerBlock;
    auto it = by_owner.lower_bound({std::min(below, first_owner + kOwnerBlock), INT64_MIN});
    while (it != by_owner.begin()) {
      --it;
      if (it->first < first_owner) break;
      if (it->second >= end) return it->first;
    }
  }
  return -1;
}

void AllocationGapIndex::Refresh(size_t leaf) {
  const LeafGap& first = leaf_gap_[leaf];
  int64_t latest = first.end;  // INT64_MIN when the leaf holds none
  if (first.crowded) {
    latest = std::max(latest, *crowded_.at(leaf).ends.rbegin());
  } else if (first.more > 0) {
    for (const Gap& gap : more_gaps_[leaf]) latest = std::max(latest, gap.end);
  }
  SetLatest(leaf, latest);
}

void AllocationGapIndex::SetLatest(size_t leaf, int64_t latest) {
  size_t index = leaf;
  if (max_end_[level_begin_[0] + index] == latest) return;
  max_end_[level_begin_[0] + index] = latest;
  // Up to the first ancestor whose latest end does not change: the ones above it keep theirs.
  for (size_t level = 1; level < level_begin_.size(); ++level) {
    const size_t block = level_begin_[level - 1] + index / kFanout * kFanout;
    const int64_t updated = *std::max_element(
        max_end_.begin() + static_cast<ptrdiff_t>(block),
        max_end_.begin() + static_cast<ptrdiff_t>(block) + static_cast<ptrdiff_t>(kFanout));
    index /= kFanout;
    int64_t& node = max_end_[level_begin_[level] + index];
    if (node == updated) break;
    node = updated;
  }
}

size_t AllocationGapIndex::LeavesStartingBy(int64_t start) const {
  if (!by_time_.empty()) {
    if (start < 0) return 1;  // INT64_MIN only
    if (static_cast<uint64_t>(start) >= by_time_.size()) return starts_.size();
    return by_time_[static_cast<size_t>(start)] >> 1;
  }
  return static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), start) -
                             starts_.begin());
}

int64_t AllocationGapIndex::LeafStartingAt(int64_t start) const {
  if (!by_time_.empty()) {
    if (start == INT64_MIN) return 0;
    if (start < 0 || static_cast<uint64_t>(start) >= by_time_.size()) return -1;
    const uint32_t code = by_time_[static_cast<size_t>(start)];
    return (code & 1) != 0 ? static_cast<int64_t>(code >> 1) - 1 : -1;
  }
  const auto it = std::lower_bound(starts_.begin(), starts_.end(), start);
  if (it == starts_.end() || *it != start) return -1;
  return it - starts_.begin();
}

bool AllocationGapIndex::AnyContains(const TimeBound& range) const {
  if (off_) return true;
  if (owner_leaves_ > 0 && earliest_trailing_[1] <= range.start) return true;
  int64_t latest = INT64_MIN;
  ForEachPrefixNode(LeavesStartingBy(range.start), [&](size_t level, size_t index) {
    latest = std::max(latest, max_end_[level_begin_[level] + index]);
  });
  return latest >= range.end;
}

std::vector<int32_t>& AllocationGapIndex::InnerOwnersContaining(const TimeBound& range) const {
  std::vector<int32_t>& owners = inner_owners_;
  owners.clear();
  // The subtrees of the prefix's canonical nodes hold only leaves of the prefix; descend only
  // where some gap ends late enough. Owners are marked in a bitmap (they are few and dense), so
  // the answer comes out sorted and each once without a sort.
  pending_.clear();
  crowded_hits_.clear();
  ForEachPrefixNode(LeavesStartingBy(range.start), [&](size_t level, size_t index) {
    if (max_end_[level_begin_[level] + index] >= range.end) pending_.emplace_back(level, index);
  });
  size_t words = 0;
  const auto mark = [&](int64_t end, int32_t owner) {
    if (end < range.end) return;
    const auto word = static_cast<size_t>(owner) / 64;
    if (word >= owner_bits_.size()) owner_bits_.resize(word + 1, 0);
    owner_bits_[word] |= uint64_t{1} << (owner % 64);
    words = std::max(words, word + 1);
  };
  while (!pending_.empty()) {
    const auto [level, index] = pending_.back();
    pending_.pop_back();
    if (level == 0) {
      const LeafGap& first = leaf_gap_[index];
      mark(first.end, first.owner);  // a leaf under a late enough end holds a first gap
      if (first.crowded) {
        crowded_hits_.push_back(&crowded_.at(index));
      } else if (first.more > 0) {
        for (const Gap& gap : more_gaps_[index]) mark(gap.end, gap.owner);
      }
      continue;
    }
    const size_t children = index * kFanout;
    for (size_t child = children; child < children + kFanout; ++child) {
      if (max_end_[level_begin_[level - 1] + child] >= range.end) {
        pending_.emplace_back(level - 1, child);
      }
    }
  }
  for (size_t word = 0; word < words; ++word) {
    for (uint64_t bits = owner_bits_[word]; bits != 0; bits &= bits - 1) {
      owners.push_back(static_cast<int32_t>(word * 64) + __builtin_ctzll(bits));
    }
    owner_bits_[word] = 0;
  }
  return owners;
}

int32_t AllocationGapIndex::HighestCrowdedBelow(int64_t end, int32_t below) const {
  int32_t highest = -1;
  for (const CrowdedLeaf* crowded : crowded_hits_) {
    highest = std::max(highest, crowded->HighestBelow(end, below));
  }
  return highest;
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
    : ending_{std::vector<int32_t>(time_count, -1),
              std::vector<uint8_t>(time_count, 0),
              std::vector<int32_t>(value_count, -1),
              {}},
      starting_{std::vector<int32_t>(time_count, -1),
                std::vector<uint8_t>(time_count, 0),
                std::vector<int32_t>(value_count, -1),
                {}},
      owner_(value_count, -1) {}

void ValueTouchIndex::Push(Lists& lists, int64_t time, int32_t value_id) {
  const auto at = static_cast<size_t>(time);
  lists.next[static_cast<size_t>(value_id)] = lists.head[at];
  lists.head[at] = value_id;
  uint8_t& length = lists.length[at];
  if (length <= kScannedPerTime) ++length;
  if (length <= kScannedPerTime) return;
  auto& by_owner = lists.crowded[time];
  if (by_owner.empty()) {  // the list becomes crowded: index what it holds
    for (int32_t id = lists.head[at]; id >= 0; id = lists.next[static_cast<size_t>(id)]) {
      by_owner[owner_[static_cast<size_t>(id)]].push_back(id);
    }
    return;
  }
  by_owner[owner_[static_cast<size_t>(value_id)]].push_back(value_id);
}

void ValueTouchIndex::Add(int32_t value_id, const TimeBound& range, int32_t owner) {
  owner_[static_cast<size_t>(value_id)] = owner;
  const auto inside = [&](int64_t time) {
    return time >= 0 && static_cast<uint64_t>(time) < ending_.head.size();
  };
  if (!inside(range.start) || !inside(range.end)) {
    outside_.emplace_back(value_id, range);
    return;
  }
  Push(ending_, range.end, value_id);
  Push(starting_, range.start, value_id);
}

void AllocationTimeline::TrackGaps(AllocationGapIndex* index, int32_t owner) {
  gaps_ = index;
  owner_ = owner;
  Interval previous = kBeforeAll;
  hull_.ForEach([&](const Interval& interval) {
    gaps_->Insert(previous.second, interval.first, owner_);
    previous = interval;
  });
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
  using Pos = SortedIntervals::Pos;
  const auto before = [&](Pos p) {
    return hull_.IsBegin(p) ? kBeforeAll : hull_.At(hull_.Prev(p));
  };
  const auto at_or_after = [&](Pos p) { return hull_.IsEnd(p) ? kAfterAll : hull_.At(p); };
  if (range.start == range.end) {
    // A point inside an interval's interior adds nothing to the union's interior.
    if (StrictlyOverlaps(range)) return;
    const Interval point{range.start, range.end};
    const Pos at = hull_.LowerBound(point);
    if (!hull_.IsEnd(at) && hull_.At(at) == point) return;
    const Interval previous = before(at);
    const Interval next = at_or_after(at);
    hull_.Insert(at, point);
    if (gaps_ != nullptr) ReplaceGaps(previous, {}, point, next);
    return;
  }
  int64_t start = range.start;
  int64_t end = range.end;
  Pos first = hull_.LowerBound({start, INT64_MIN});
  if (!hull_.IsBegin(first) && hull_.At(hull_.Prev(first)).second > start) {
    first = hull_.Prev(first);  // reaches into the new range
  } else if (!hull_.IsEnd(first) && hull_.At(first).first == hull_.At(first).second &&
             hull_.At(first).first == start) {
    first = hull_.Next(first);  // a point at the new start stays: it meets no interior
  }
  // Everything from there that starts before the new end meets the new interior.
  std::vector<Interval> removed;
  Pos last = first;
  for (; !hull_.IsEnd(last) && hull_.At(last).first < end; last = hull_.Next(last)) {
    const Interval& interval = hull_.At(last);
    start = std::min(start, interval.first);
    end = std::max(end, interval.second);
    if (gaps_ != nullptr) removed.push_back(interval);
  }
  const Interval merged{start, end};
  const Interval previous = before(first);
  const Interval next = at_or_after(last);
  if (first == last) {
    hull_.Insert(first, merged);
  } else {
    hull_.Replace(first, last, merged);
  }
  if (gaps_ != nullptr) ReplaceGaps(previous, removed, merged, next);
}

}  // namespace spmdsim::passes
