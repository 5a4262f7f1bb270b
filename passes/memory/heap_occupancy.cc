#include "passes/memory/heap_occupancy.h"

#include <algorithm>
#include <cstddef>
#include <utility>

#include "ir/checked_math.h"

namespace spmdsim::passes {

namespace {

// The ranges of the sorted, disjoint [first, last) that overlap or touch `range`, which grows to
// cover them: inserting it means replacing them with it.
template <typename It>
std::pair<It, It> Absorb(It first, It last, OccupiedRange& range) {
  // The earlier ranges end before range.lo: they neither overlap nor touch.
  const It from = std::lower_bound(first, last, range.lo,
                                   [](const OccupiedRange& r, int64_t lo) { return r.hi < lo; });
  It to = from;
  while (to != last && to->lo <= range.hi) {
    range.lo = std::min(range.lo, to->lo);
    range.hi = std::max(range.hi, to->hi);
    ++to;
  }
  return {from, to};
}

}  // namespace

HeapOccupancy::HeapOccupancy(int64_t first, int64_t last, int64_t alignment)
    : first_(first), last_(std::max(first, last)), alignment_(alignment) {
  const auto times = static_cast<size_t>(last_ - first_ + 1);
  while (leaves_ < times) leaves_ *= 2;
  cover_.resize(2 * leaves_);
  below_.resize(2 * leaves_);
  visited_.assign(2 * leaves_, 0);
}

void HeapOccupancy::Insert(RangeSet& set, OccupiedRange range) {
  if (set.size == set.capacity) {
    const uint32_t capacity = set.capacity == 0 ? 2 : 2 * set.capacity;
    const size_t begin = pool_.size();
    pool_.resize(pool_.size() + capacity);
    std::copy_n(pool_.begin() + set.begin, set.size, pool_.begin() + begin);
    set.begin = begin;
    set.capacity = capacity;
  }
  const auto first = pool_.begin() + set.begin;
  const auto last = first + set.size;
  const auto [from, to] = Absorb(first, last, range);
  if (from == to) {
    std::copy_backward(from, last, last + 1);
    *from = range;
    ++set.size;
    return;
  }
  *from = range;
  std::copy(to, last, from + 1);
  set.size -= static_cast<uint32_t>(to - from - 1);
}

void HeapOccupancy::Add(int64_t start, int64_t end, int64_t offset, int64_t size) {
  if (end < start || size <= 0) return;
  const OccupiedRange range{offset,
                            ir::SaturatingAlignUp(ir::SaturatingAdd(offset, size), alignment_)};
  ++stamp_;
  const auto up_from = [&](size_t node) {
    for (node /= 2; node >= 1 && visited_[node] != stamp_; node /= 2) {
      visited_[node] = stamp_;
      Insert(below_[node], range);
    }
  };
  const auto canonical = [&](size_t node) {
    Insert(cover_[node], range);
    Insert(below_[node], range);
    up_from(node);
  };
  for (size_t lo = static_cast<size_t>(start - first_) + leaves_,
              hi = static_cast<size_t>(end - first_) + leaves_ + 1;
       lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1) canonical(lo++);
    if (hi & 1) canonical(--hi);
  }
}

void HeapOccupancy::Unite(std::vector<OccupiedRange>& into, const RangeSet& set) {
  if (set.size == 0) return;
  const auto first = pool_.begin() + set.begin;
  const auto last = first + set.size;
  if (into.empty()) {
    into.assign(first, last);
    return;
  }
  if (set.size * 4 < into.size()) {
    // A few ranges into many: each by binary search, not a pass over all.
    for (auto it = first; it != last; ++it) {
      OccupiedRange range = *it;
      const auto [from, to] = Absorb(into.begin(), into.end(), range);
      if (from == to) {
        into.insert(from, range);
      } else {
        *from = range;
        into.erase(from + 1, to);
      }
    }
    return;
  }
  // Both are sorted and disjoint: a merge by lo, joining what overlaps or touches.
  merged_.clear();
  auto a = into.cbegin();
  auto b = first;
  while (a != into.cend() || b != last) {
    const OccupiedRange& next = b == last || (a != into.cend() && a->lo <= b->lo) ? *a++ : *b++;
    if (!merged_.empty() && next.lo <= merged_.back().hi) {
      merged_.back().hi = std::max(merged_.back().hi, next.hi);
    } else {
      merged_.push_back(next);
    }
  }
  into.swap(merged_);
}

void HeapOccupancy::Query(int64_t start, int64_t end, std::vector<OccupiedRange>& out) {
  start = std::max(start, first_);
  end = std::min(end, last_);
  if (end < start) return;
  ++stamp_;
  const auto up_from = [&](size_t node) {
    for (node /= 2; node >= 1 && visited_[node] != stamp_; node /= 2) {
      visited_[node] = stamp_;
      Unite(out, cover_[node]);
    }
  };
  const auto canonical = [&](size_t node) {
    Unite(out, below_[node]);
    up_from(node);
  };
  for (size_t lo = static_cast<size_t>(start - first_) + leaves_,
              hi = static_cast<size_t>(end - first_) + leaves_ + 1;
       lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1) canonical(lo++);
    if (hi & 1) canonical(--hi);
  }
}

}  // namespace spmdsim::passes
