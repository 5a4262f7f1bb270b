#include "passes/memory/heap_occupancy.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <tuple>
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

int64_t CompressSpanTimes(std::vector<std::pair<int64_t, int64_t>>& spans) {
  // (time, 0 for a start or 1 for an end, span): sorted, a start comes before an end at a time.
  std::vector<std::tuple<int64_t, int, size_t>> events;
  events.reserve(2 * spans.size());
  for (size_t s = 0; s < spans.size(); ++s) {
    events.emplace_back(spans[s].first, 0, s);
    events.emplace_back(spans[s].second, 1, s);
  }
  std::sort(events.begin(), events.end());
  int64_t number = -1;
  int kind = -1;
  for (const auto& [time, is_end, s] : events) {
    if (is_end != kind) {
      ++number;
      kind = is_end;
    }
    (is_end == 0 ? spans[s].first : spans[s].second) = number;
  }
  return number + 1;
}

HeapOccupancy::HeapOccupancy(int64_t first, int64_t last, int64_t alignment)
    : first_(first), last_(std::max(first, last)), alignment_(alignment) {
  const auto times = static_cast<size_t>(last_ - first_ + 1);
  while (leaves_ < times) leaves_ *= 2;
  nodes_.resize(2 * leaves_);
}

void HeapOccupancy::Insert(RangeSet& set, OccupiedRange range) {
  if (set.size == set.capacity) {
    const uint32_t capacity = set.capacity == 0 ? 2 : 2 * set.capacity;
    const auto size_class = static_cast<size_t>(std::countr_zero(capacity));
    if (free_blocks_.size() <= size_class) free_blocks_.resize(size_class + 1);
    size_t begin = pool_.size();
    if (!free_blocks_[size_class].empty()) {
      begin = free_blocks_[size_class].back();
      free_blocks_[size_class].pop_back();
    } else {
      // Offsets into the pool are 32-bit (a node fits half a cache line): 64 GiB of ranges.
      if (begin + capacity > UINT32_MAX) {
        throw std::length_error("heap occupancy: too many ranges");
      }
      pool_.resize(pool_.size() + capacity);
    }
    std::copy_n(pool_.begin() + set.begin, set.size, pool_.begin() + begin);
    if (set.capacity > 0) {
      free_blocks_[static_cast<size_t>(std::countr_zero(set.capacity))].push_back(set.begin);
    }
    set.begin = static_cast<uint32_t>(begin);
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
    for (node /= 2; node >= 1 && nodes_[node].visited != stamp_; node /= 2) {
      nodes_[node].visited = stamp_;
      Insert(nodes_[node].below, range);
    }
  };
  const auto canonical = [&](size_t node) {
    Insert(nodes_[node].cover, range);
    Insert(nodes_[node].below, range);
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
  // Both are sorted and disjoint: a merge by lo, joining what overlaps or touches. Branch-free
  // (which list comes next, and whether it joins the range being built, are coin flips).
  merged_.resize(into.size() + set.size);
  OccupiedRange* out = merged_.data();
  const OccupiedRange* a = into.data();
  const OccupiedRange* const a_end = a + into.size();
  const OccupiedRange* b = &*first;
  const OccupiedRange* const b_end = b + set.size;
  const auto join = [&out](OccupiedRange& current, const OccupiedRange& next) {
    const bool joins = next.lo <= current.hi;
    *out = current;
    out += joins ? 0 : 1;
    current.lo = joins ? current.lo : next.lo;
    current.hi = joins ? std::max(current.hi, next.hi) : next.hi;
  };
  OccupiedRange current = a->lo <= b->lo ? *a++ : *b++;
  while (a != a_end && b != b_end) {
    const bool from_a = a->lo <= b->lo;
    const OccupiedRange next = from_a ? *a : *b;
    a += from_a ? 1 : 0;
    b += from_a ? 0 : 1;
    join(current, next);
  }
  for (; a != a_end; ++a) join(current, *a);
  for (; b != b_end; ++b) join(current, *b);
  *out++ = current;
  merged_.resize(static_cast<size_t>(out - merged_.data()));
  into.swap(merged_);
}

void HeapOccupancy::Query(int64_t start, int64_t end, std::vector<OccupiedRange>& out) {
  start = std::max(start, first_);
  end = std::min(end, last_);
  if (end < start) return;
  ++stamp_;
  const auto up_from = [&](size_t node) {
    for (node /= 2; node >= 1 && nodes_[node].visited != stamp_; node /= 2) {
      nodes_[node].visited = stamp_;
      Unite(out, nodes_[node].cover);
    }
  };
  const auto canonical = [&](size_t node) {
    Unite(out, nodes_[node].below);
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
