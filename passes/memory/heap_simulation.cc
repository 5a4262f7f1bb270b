#include "passes/memory/heap_simulation.h"

#include <algorithm>
#include <climits>
#include <tuple>
#include <utility>
#include <vector>

#include "passes/memory/heap_occupancy.h"

namespace spmdsim::passes {

int32_t HeapRecorder::Canonical(int32_t interval) const {
  while (canonical_[interval] != interval) interval = canonical_[interval];
  return interval;
}

int32_t HeapRecorder::Alloc(int32_t buffer, int64_t size) {
  if (size == 0) return -1;
  const auto index = static_cast<int32_t>(intervals_.size());
  intervals_.push_back(HeapInterval{buffer, size, tick_++, -1, {}, true});
  canonical_.push_back(index);
  refcount_.push_back(1);
  live_bytes_.Add(size);
  if (live_bytes_.Value() > peak_live_bytes_) {
    peak_live_bytes_ = live_bytes_.Value();
    peak_tick_ = tick_ - 1;
  }
  return index;
}

int32_t HeapRecorder::ShareWith(int32_t buffer, int32_t shared_interval, int64_t size) {
  if (size == 0 || shared_interval < 0) return -1;
  const auto index = static_cast<int32_t>(intervals_.size());
  intervals_[shared_interval].colocations.push_back(index);
  intervals_.push_back(HeapInterval{buffer, size, tick_++, -1, {}, false});
  const int32_t canonical = Canonical(shared_interval);
  canonical_.push_back(canonical);
  refcount_.push_back(0);
  if (++refcount_[canonical] == 1) {
    live_bytes_.Add(intervals_[canonical].size);
    if (live_bytes_.Value() > peak_live_bytes_) {
      peak_live_bytes_ = live_bytes_.Value();
      peak_tick_ = tick_ - 1;
    }
  }
  return index;
}

void HeapRecorder::Free(int32_t interval) {
  if (interval < 0 || intervals_[interval].end >= 0) return;
  intervals_[interval].end = tick_++;
  const int32_t canonical = Canonical(interval);
  if (--refcount_[canonical] == 0) live_bytes_.Subtract(intervals_[canonical].size);
}

std::string PackingOrderName(PackingOrder order) {
  switch (order) {
    case PackingOrder::kTemporal:
      return "temporal";
    case PackingOrder::kDefinition:
      return "definition";
    case PackingOrder::kSpatial:
      break;
  }
  return "spatial";
}

namespace {

struct Prepared {
  std::vector<std::vector<int32_t>> colocations;  // transitive, by allocated interval
  // The tick ranges the allocated interval and its colocations occupy, sorted and merged (ticks
  // are integers, so [a,b] and [b+1,c] merge into [a,c]).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> spans;
  std::vector<int64_t> min_start;
  std::vector<int64_t> max_end;
  std::vector<int64_t> max_size;
};

Prepared Prepare(const std::vector<HeapInterval>& intervals) {
  Prepared p;
  const size_t n = intervals.size();
  p.colocations.resize(n);
  p.min_start.resize(n);
  p.max_end.resize(n);
  p.max_size.resize(n);
  p.spans.resize(n);
  std::vector<int32_t> stack;
  for (size_t i = 0; i < n; ++i) {
    const HeapInterval& interval = intervals[i];
    p.min_start[i] = interval.start;
    p.max_end[i] = interval.end;
    p.max_size[i] = interval.size;
    if (!interval.need_allocation || interval.colocations.empty()) continue;
    stack.assign(interval.colocations.begin(), interval.colocations.end());
    while (!stack.empty()) {
      const int32_t c = stack.back();
      stack.pop_back();
      p.colocations[i].push_back(c);
      const HeapInterval& colocated = intervals[static_cast<size_t>(c)];
      p.min_start[i] = std::min(p.min_start[i], colocated.start);
      p.max_end[i] = std::max(p.max_end[i], colocated.end);
      p.max_size[i] = std::max(p.max_size[i], colocated.size);
      stack.insert(stack.end(), colocated.colocations.begin(), colocated.colocations.end());
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const HeapInterval& interval = intervals[i];
    if (!interval.need_allocation) continue;
    auto& spans = p.spans[i];
    spans.emplace_back(interval.start, interval.end);
    for (int32_t c : p.colocations[i]) {
      const HeapInterval& colocated = intervals[static_cast<size_t>(c)];
      spans.emplace_back(colocated.start, colocated.end);
    }
    std::sort(spans.begin(), spans.end());
    size_t out = 0;
    for (size_t k = 1; k < spans.size(); ++k) {
      if (spans[k].first <= spans[out].second + 1) {
        spans[out].second = std::max(spans[out].second, spans[k].second);
      } else {
        spans[++out] = spans[k];
      }
    }
    spans.resize(out + 1);
  }
  return p;
}

// The spans each interval to be packed is queried and added with, their times renumbered
// (CompressSpanTimes): the occupancy tree gets one leaf per run of starts or ends, not one per
// heap tick (on a large module about a third as many, two levels fewer). The renumbering does
// not depend on the order of packing, so both orders share it.
struct PackSpans {
  std::vector<size_t> begin;  // interval i's spans: spans[begin[i], begin[i + 1])
  std::vector<std::pair<int64_t, int64_t>> spans;
  int64_t times = 0;
};

bool Packed(const HeapInterval& interval) { return interval.need_allocation && interval.size > 0; }

// kDefinition's buffer and its colocations hold one span, first Alloc to last Free.
PackSpans SpansToPack(const std::vector<HeapInterval>& intervals, const Prepared& p,
                      bool whole_span) {
  PackSpans out;
  out.begin.assign(intervals.size() + 1, 0);
  for (size_t i = 0; i < intervals.size(); ++i) {
    if (Packed(intervals[i])) {
      if (whole_span) {
        out.spans.emplace_back(p.min_start[i], p.max_end[i]);
      } else {
        out.spans.insert(out.spans.end(), p.spans[i].begin(), p.spans[i].end());
      }
    }
    out.begin[i + 1] = out.spans.size();
  }
  out.times = CompressSpanTimes(out.spans);
  return out;
}

HeapPackResult PackInOrder(const std::vector<HeapInterval>& intervals, const Prepared& p,
                           const PackSpans& packed, PackingOrder order,
                           const HeapPackOptions& options) {
  const std::span<const int64_t> buffer_rank = options.buffer_rank;
  const int64_t alignment = options.alignment;
  const auto rank = [&](int32_t buffer) {
    return buffer >= 0 && static_cast<size_t>(buffer) < buffer_rank.size()
               ? buffer_rank[static_cast<size_t>(buffer)]
               : static_cast<int64_t>(buffer);
  };
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int32_t>;
  const auto key = [&](size_t i) -> Key {
    const HeapInterval& x = intervals[i];
    if (order == PackingOrder::kSpatial) {
      return {int64_t{0}, -x.size, x.start - x.end, rank(x.buffer), x.buffer};
    }
    if (order == PackingOrder::kDefinition) {
      const auto& late = options.placed_after_others;
      const bool last = x.buffer >= 0 && static_cast<size_t>(x.buffer) < late.size() &&
                        late[static_cast<size_t>(x.buffer)];
      return {int64_t{last}, x.start, x.end, rank(x.buffer), x.buffer};
    }
    return {int64_t{0}, p.min_start[i] - p.max_end[i], -x.size, rank(x.buffer), x.buffer};
  };
  // The keys are sorted with the intervals they order, not recomputed for each comparison.
  std::vector<std::pair<Key, int32_t>> keyed;
  for (size_t i = 0; i < intervals.size(); ++i) {
    if (Packed(intervals[i])) keyed.emplace_back(key(i), static_cast<int32_t>(i));
  }
  std::sort(keyed.begin(), keyed.end());

  HeapPackResult result;
  result.offsets.assign(intervals.size(), -1);
  HeapOccupancy taken(0, std::max<int64_t>(packed.times - 1, 0), alignment);
  std::vector<OccupiedRange> ranges;
  for (const auto& [unused, i] : keyed) {
    const HeapInterval& interval = intervals[static_cast<size_t>(i)];
    const int64_t needed = p.max_size[i];
    const size_t first_span = packed.begin[static_cast<size_t>(i)];
    const size_t last_span = packed.begin[static_cast<size_t>(i) + 1];
    ranges.clear();
    for (size_t s = first_span; s < last_span; ++s) {
      taken.Query(packed.spans[s].first, packed.spans[s].second, ranges);
    }
    // The free gaps between the taken ranges that hold the interval, then the space above them;
    // the smallest gap that holds the buffer and its colocations wins, then the lowest. Range
    // ends are aligned, so every gap starts at an aligned offset.
    int64_t best_offset = ranges.empty() ? 0 : ranges.back().hi;
    int64_t best_size = INT64_MAX;
    int64_t free_start = 0;
    for (const OccupiedRange& range : ranges) {
      const int64_t size = range.lo - free_start;
      if (size >= interval.size && size >= needed && size < best_size) {
        best_offset = free_start;
        best_size = size;
      }
      free_start = range.hi;
    }
    const int64_t offset = best_offset;
    result.heap_size = std::max(result.heap_size, ir::SaturatingAdd(offset, needed));
    result.offsets[static_cast<size_t>(i)] = offset;
    for (size_t s = first_span; s < last_span; ++s) {
      taken.Add(packed.spans[s].first, packed.spans[s].second, offset, needed);
    }
    for (int32_t c : p.colocations[i]) result.offsets[static_cast<size_t>(c)] = offset;
  }
  return result;
}

}  // namespace

HeapPackResult PackBestFit(const std::vector<HeapInterval>& intervals,
                           const HeapPackOptions& options) {
  const Prepared prepared = Prepare(intervals);
  if (!options.best_of_both) {
    const PackSpans packed =
        SpansToPack(intervals, prepared, options.order == PackingOrder::kDefinition);
    HeapPackResult result = PackInOrder(intervals, prepared, packed, options.order, options);
    result.chosen = options.order;
    if (options.order == PackingOrder::kSpatial) result.spatial_heap_size = result.heap_size;
    if (options.order == PackingOrder::kTemporal) result.temporal_heap_size = result.heap_size;
    return result;
  }
  const PackSpans packed = SpansToPack(intervals, prepared, /*whole_span=*/false);
  HeapPackResult spatial =
      PackInOrder(intervals, prepared, packed, PackingOrder::kSpatial, options);
  HeapPackResult temporal =
      PackInOrder(intervals, prepared, packed, PackingOrder::kTemporal, options);
  const int64_t spatial_size = spatial.heap_size;
  const int64_t temporal_size = temporal.heap_size;
  HeapPackResult result = temporal_size < spatial_size ? std::move(temporal) : std::move(spatial);
  result.chosen = temporal_size < spatial_size ? PackingOrder::kTemporal : PackingOrder::kSpatial;
  result.spatial_heap_size = spatial_size;
  result.temporal_heap_size = temporal_size;
  return result;
}

}  // namespace spmdsim::passes
