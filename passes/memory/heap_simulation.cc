#include "passes/memory/heap_simulation.h"

#include <algorithm>
#include <climits>
#include <tuple>
#include <utility>
#include <vector>

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

struct Chunk {
  int64_t offset = 0;
  int64_t size = 0;
  int64_t end() const { return ir::SaturatingAdd(offset, size); }
};

// Committed (interval, chunk) pairs, searchable by time overlap (XLA's BufferIntervalTree). XLA's
// tree is an unbalanced search tree on start time, which the packing orders feed nearly sorted
// starts (same-size buffers in program order) and so degrade to a list: quadratic on a
// million-instruction module. Here every start is known before packing, so a segment tree over
// the sorted starts, each node knowing the latest end below it, finds the k overlapping pairs
// in O((k + 1) log n) whatever the insertion order. The set found is the same.
class IntervalTree {
 public:
  explicit IntervalTree(std::vector<int64_t> starts) : starts_(std::move(starts)) {
    std::sort(starts_.begin(), starts_.end());
    starts_.erase(std::unique(starts_.begin(), starts_.end()), starts_.end());
    first_at_.assign(starts_.size(), -1);
    max_end_.assign(2 * starts_.size(), INT64_MIN);
  }

  // `start` must be one of the starts given at construction.
  void Add(int64_t start, int64_t end, Chunk chunk, int32_t owner) {
    const auto leaf = static_cast<size_t>(std::lower_bound(starts_.begin(), starts_.end(), start) -
                                          starts_.begin());
    nodes_.push_back(Node{end, chunk, owner, first_at_[leaf]});
    first_at_[leaf] = static_cast<int32_t>(nodes_.size() - 1);
    for (size_t node = leaf + starts_.size(); node >= 1 && max_end_[node] < end; node /= 2) {
      max_end_[node] = end;
    }
  }

  // Appends the chunks of pairs whose [start, end] overlaps [start, end], once per owner
  // (`seen[owner] == stamp` marks owners already taken).
  void Overlapping(int64_t start, int64_t end, std::vector<Chunk>& out, std::vector<int64_t>& seen,
                   int64_t stamp) const {
    const size_t n = starts_.size();
    // Pairs starting at or before `end`: a prefix of the leaves, covered by canonical nodes.
    const auto prefix = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), end) -
                                            starts_.begin());
    stack_.clear();
    for (size_t lo = n, hi = prefix + n; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1) stack_.push_back(lo++);
      if (hi & 1) stack_.push_back(--hi);
    }
    while (!stack_.empty()) {
      const size_t node = stack_.back();
      stack_.pop_back();
      if (max_end_[node] < start) continue;
      if (node < n) {
        stack_.push_back(2 * node);
        stack_.push_back(2 * node + 1);
        continue;
      }
      for (int32_t at = first_at_[node - n]; at >= 0; at = nodes_[static_cast<size_t>(at)].next) {
        const Node& pair = nodes_[static_cast<size_t>(at)];
        if (pair.end >= start && seen[pair.owner] != stamp) {
          seen[pair.owner] = stamp;
          out.push_back(pair.chunk);
        }
      }
    }
  }

 private:
  struct Node {
    int64_t end;
    Chunk chunk;
    int32_t owner;
    int32_t next;  // the next pair with the same start, -1 at the last
  };
  std::vector<int64_t> starts_;    // sorted, unique
  std::vector<int32_t> first_at_;  // by leaf: the newest pair starting there
  std::vector<int64_t> max_end_;   // segment tree over the leaves
  std::vector<Node> nodes_;
  mutable std::vector<size_t> stack_;
};

int64_t AlignUp(int64_t value, int64_t alignment) {
  return ir::SaturatingAlignUp(value, alignment);
}

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

HeapPackResult PackInOrder(const std::vector<HeapInterval>& intervals, const Prepared& p,
                           PackingOrder order, const HeapPackOptions& options) {
  const std::vector<int64_t>& buffer_rank = options.buffer_rank;
  const int64_t alignment = options.alignment;
  std::vector<int32_t> sorted;
  for (size_t i = 0; i < intervals.size(); ++i) {
    if (intervals[i].need_allocation && intervals[i].size > 0) {
      sorted.push_back(static_cast<int32_t>(i));
    }
  }
  const auto rank = [&](int32_t buffer) {
    return buffer >= 0 && static_cast<size_t>(buffer) < buffer_rank.size()
               ? buffer_rank[static_cast<size_t>(buffer)]
               : static_cast<int64_t>(buffer);
  };
  const auto key = [&](int32_t i) {
    const HeapInterval& x = intervals[static_cast<size_t>(i)];
    if (order == PackingOrder::kSpatial) {
      return std::make_tuple(int64_t{0}, -x.size, x.start - x.end, rank(x.buffer), x.buffer);
    }
    if (order == PackingOrder::kDefinition) {
      const auto& late = options.placed_after_others;
      const bool last = x.buffer >= 0 && static_cast<size_t>(x.buffer) < late.size() &&
                        late[static_cast<size_t>(x.buffer)];
      return std::make_tuple(int64_t{last}, x.start, x.end, rank(x.buffer), x.buffer);
    }
    return std::make_tuple(int64_t{0}, p.min_start[i] - p.max_end[i], -x.size, rank(x.buffer),
                           x.buffer);
  };
  // kDefinition: a buffer and its colocations hold one span, first Alloc to last Free.
  const bool whole_span = order == PackingOrder::kDefinition;
  std::sort(sorted.begin(), sorted.end(), [&](int32_t a, int32_t b) { return key(a) < key(b); });

  HeapPackResult result;
  result.offsets.assign(intervals.size(), -1);
  std::vector<int64_t> starts;
  for (int32_t i : sorted) {
    if (whole_span) {
      starts.push_back(p.min_start[i]);
    } else {
      for (const auto& span : p.spans[i]) starts.push_back(span.first);
    }
  }
  IntervalTree tree(std::move(starts));
  std::vector<Chunk> used;
  struct Free {
    int64_t offset;
    int64_t end;
  };
  std::vector<Free> free_chunks;
  std::vector<int64_t> seen(intervals.size(), -1);
  int64_t stamp = 0;
  for (int32_t i : sorted) {
    const HeapInterval& interval = intervals[static_cast<size_t>(i)];
    const int64_t needed = p.max_size[i];
    used.clear();
    ++stamp;
    if (whole_span) {
      tree.Overlapping(p.min_start[i], p.max_end[i], used, seen, stamp);
    } else {
      for (const auto& [start, end] : p.spans[i]) tree.Overlapping(start, end, used, seen, stamp);
    }
    int64_t offset = 0;
    if (!used.empty()) {
      std::sort(used.begin(), used.end(),
                [](const Chunk& a, const Chunk& b) { return a.offset < b.offset; });
      free_chunks.clear();
      int64_t free_start = 0;
      int64_t current_offset = used[0].offset;
      int64_t current_end = used[0].end();
      for (size_t u = 1; u < used.size(); ++u) {
        if (used[u].offset < current_end) {
          current_end = std::max(current_end, used[u].end());
          continue;
        }
        if (current_offset - free_start >= interval.size) {
          free_chunks.push_back(Free{free_start, current_offset});
        }
        free_start = std::max(free_start, AlignUp(current_end, alignment));
        current_offset = used[u].offset;
        current_end = used[u].end();
      }
      if (current_offset - free_start >= interval.size) {
        free_chunks.push_back(Free{free_start, current_offset});
      }
      free_start = std::max(free_start, AlignUp(current_end, alignment));
      free_chunks.push_back(Free{free_start, INT64_MAX});
      // The smallest free chunk (then the lowest) that holds the buffer and its colocations.
      const Free* best = nullptr;
      for (const Free& chunk : free_chunks) {
        const int64_t aligned = AlignUp(chunk.offset, alignment);
        if (chunk.end != INT64_MAX && ir::SaturatingAdd(aligned, needed) > chunk.end) continue;
        if (best == nullptr) {
          best = &chunk;
          continue;
        }
        const int64_t size = chunk.end - chunk.offset;
        const int64_t best_size = best->end - best->offset;
        if (size < best_size || (size == best_size && chunk.offset < best->offset)) {
          best = &chunk;
        }
      }
      offset = AlignUp(best->offset, alignment);
    }
    const Chunk chunk{offset, needed};
    result.heap_size = std::max(result.heap_size, chunk.end());
    result.offsets[static_cast<size_t>(i)] = offset;
    if (whole_span) {
      tree.Add(p.min_start[i], p.max_end[i], chunk, i);
    } else {
      for (const auto& [start, end] : p.spans[i]) tree.Add(start, end, chunk, i);
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
    HeapPackResult result = PackInOrder(intervals, prepared, options.order, options);
    result.chosen = options.order;
    if (options.order == PackingOrder::kSpatial) result.spatial_heap_size = result.heap_size;
    if (options.order == PackingOrder::kTemporal) result.temporal_heap_size = result.heap_size;
    return result;
  }
  HeapPackResult spatial = PackInOrder(intervals, prepared, PackingOrder::kSpatial, options);
  HeapPackResult temporal = PackInOrder(intervals, prepared, PackingOrder::kTemporal, options);
  const int64_t spatial_size = spatial.heap_size;
  const int64_t temporal_size = temporal.heap_size;
  HeapPackResult result = temporal_size < spatial_size ? std::move(temporal) : std::move(spatial);
  result.chosen = temporal_size < spatial_size ? PackingOrder::kTemporal : PackingOrder::kSpatial;
  result.spatial_heap_size = spatial_size;
  result.temporal_heap_size = temporal_size;
  return result;
}

}  // namespace spmdsim::passes
