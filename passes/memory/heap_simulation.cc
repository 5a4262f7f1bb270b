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

// Committed (interval, chunk) pairs, searchable by time overlap (XLA's BufferIntervalTree). The
// pairs overlapping [s, e] are those live at s and those starting in (s, e]. The first are a
// stabbing query: a segment tree over time keeps each pair at the O(log T) nodes that cover its
// range, and the nodes on the path to s hold exactly the pairs live at s. The second are the
// pairs listed at each start time, found through a two-level bitmap of the times where some
// pair starts. So a query costs O(log T + k + (e - s) / 4096) for its k pairs, where XLA's tree
// (an unbalanced search tree on start, fed nearly sorted starts by the packing orders) and any
// tree on start alone also visit the pairs that ended before s. The set found is the same.
class IntervalTree {
 public:
  // Every time given to Add lies in [first, last].
  IntervalTree(int64_t first, int64_t last) : first_(first) {
    const auto times = static_cast<size_t>(last - first + 1);
    while (leaves_ < times) leaves_ *= 2;
    covering_.resize(2 * leaves_);
    first_starting_.assign(times, -1);
    starts_.assign((times + 63) / 64, 0);
    start_words_.assign((starts_.size() + 63) / 64, 0);
  }

  void Add(int64_t start, int64_t end, Chunk chunk, int32_t owner) {
    const auto id = static_cast<int32_t>(pairs_.size());
    const auto begin = static_cast<size_t>(start - first_);
    pairs_.push_back(Pair{start, end, chunk, owner, first_starting_[begin]});
    first_starting_[begin] = id;
    starts_[begin / 64] |= uint64_t{1} << (begin % 64);
    start_words_[begin / 4096] |= uint64_t{1} << (begin / 64 % 64);
    if (end < start) return;
    // The canonical nodes of [start, end].
    for (size_t lo = begin + leaves_, hi = static_cast<size_t>(end - first_) + leaves_ + 1; lo < hi;
         lo /= 2, hi /= 2) {
      if (lo & 1) covering_[lo++].push_back(id);
      if (hi & 1) covering_[--hi].push_back(id);
    }
  }

  // Appends the chunks of pairs whose [start, end] overlaps [start, end], once per owner
  // (`seen[owner] == stamp` marks owners already taken).
  void Overlapping(int64_t start, int64_t end, std::vector<Chunk>& out, std::vector<int64_t>& seen,
                   int64_t stamp) const {
    const int64_t last = first_ + static_cast<int64_t>(first_starting_.size()) - 1;
    if (end < first_ || start > last || end < start) return;
    const auto take = [&](int32_t id) {
      const Pair& pair = pairs_[static_cast<size_t>(id)];
      if (pair.start <= end && pair.end >= start && seen[pair.owner] != stamp) {
        seen[pair.owner] = stamp;
        out.push_back(pair.chunk);
      }
    };
    size_t from = 0;
    if (start >= first_) {
      const auto at = static_cast<size_t>(start - first_);
      for (size_t node = at + leaves_; node >= 1; node /= 2) {
        for (int32_t id : covering_[node]) take(id);
      }
      from = at + 1;
    }
    const auto to = static_cast<size_t>(std::min(end, last) - first_);  // inclusive
    for (size_t time = from; time <= to;) {
      const size_t word = time / 64;
      if (time % 4096 == 0 && start_words_[word / 64] == 0) {
        time += 4096;
        continue;
      }
      const uint64_t bits = starts_[word] & (~uint64_t{0} << (time % 64));
      if (bits == 0) {
        time = (word + 1) * 64;
        continue;
      }
      const size_t found = word * 64 + static_cast<size_t>(__builtin_ctzll(bits));
      if (found > to) break;
      for (int32_t id = first_starting_[found]; id >= 0;
           id = pairs_[static_cast<size_t>(id)].next) {
        take(id);
      }
      time = found + 1;
    }
  }

 private:
  struct Pair {
    int64_t start;
    int64_t end;
    Chunk chunk;
    int32_t owner;
    int32_t next;  // the next pair starting at the same time, -1 at the last
  };

  int64_t first_;
  size_t leaves_ = 1;
  std::vector<std::vector<int32_t>> covering_;  // by segment-tree node: pairs covering it
  std::vector<int32_t> first_starting_;         // by time
  std::vector<uint64_t> starts_;                // a bit per time: some pair starts there
  std::vector<uint64_t> start_words_;           // a bit per word of starts_: it is not zero
  std::vector<Pair> pairs_;
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
  int64_t first_time = 0;
  int64_t last_time = 0;
  for (size_t k = 0; k < sorted.size(); ++k) {
    const auto i = static_cast<size_t>(sorted[k]);
    const int64_t lo = std::min(p.min_start[i], p.max_end[i]);
    const int64_t hi = std::max(p.min_start[i], p.max_end[i]);
    first_time = k == 0 ? lo : std::min(first_time, lo);
    last_time = k == 0 ? hi : std::max(last_time, hi);
  }
  IntervalTree tree(first_time, last_time);
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
