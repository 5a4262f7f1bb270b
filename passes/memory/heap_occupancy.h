#pragma once

// Which offsets of a heap are taken during a span of time, for best-fit packing (XLA's
// GlobalDecreasingSizeBestFitHeap asks this once per buffer: the chunks of every committed buffer
// whose live range overlaps the new one's).

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace spmdsim::passes {

// A taken range of offsets, [lo, hi). hi is rounded up to the heap's alignment, since best fit
// only ever starts a buffer at an aligned offset: the bytes up to the next aligned offset are
// as good as taken.
struct OccupiedRange {
  int64_t lo = 0;
  int64_t hi = 0;
};

// Committed chunks with their live ranges, answering "the union of the offsets taken by chunks
// live at some time in [s, e]" as ranges sorted by offset, with no
// two overlapping or touching.
//
// XLA lists every overlapping chunk and sorts them by offset; the union is what the best-fit
// search reads, and it is far smaller (chunks pack densely, so dozens merge into one range). So
// this keeps unions, not chunks: a segment tree over time where each node holds
//   cover: the union of the chunks whose range has this node among its canonical nodes, and
//   below: the union of the chunks with a canonical node in this node's subtree.
// A chunk overlaps [s, e] exactly when it is in `below` of a canonical node of [s, e] or in
// `cover` of a strict ancestor of one (the time they share lies under both a canonical node of
// the query and one of the chunk, and one of those is an ancestor of the other). A query or an
// insertion visits O(log T) nodes; its cost is in the ranges of those unions, not in chunks.
// Renumbers the times of `spans` (inclusive [start, end]) so that any two of them overlap (each
// starts by the other's end) exactly when they did before, with as few distinct times as that
// allows; returns their count, the new times being 0 .. count - 1. A span with end < start stays
// so (it overlaps nothing). Only how starts compare with ends decides an overlap, so in the order
// of all starts and ends by time (a start first where one meets an end: they overlap), a run of
// starts with no end between them takes one number, and a run of ends the next. An occupancy
// tree over the new times has as many leaves as there are runs, not as many as ticks.
int64_t CompressSpanTimes(std::vector<std::pair<int64_t, int64_t>>& spans);

class HeapOccupancy {
 public:
  // Every time given to Add or Query lies in [first, last]; alignment >= 1 rounds range ends.
  HeapOccupancy(int64_t first, int64_t last, int64_t alignment);

  // Takes [offset, offset + size) during the times [start, end]; nothing when end < start.
  void Add(int64_t start, int64_t end, int64_t offset, int64_t size);

  // Unites into `out` (sorted by lo; disjoint, not touching) the ranges taken at some time
  // in [start, end] (clipped to [first, last]).
  void Query(int64_t start, int64_t end, std::vector<OccupiedRange>& out);

 private:
  // A sorted, disjoint set of ranges, stored in pool_[begin, begin + size); it moves to a block
  // twice as large when it fills, which a set left earlier frees or the pool grows for (the
  // pool is freed whole, so a packing makes a few large allocations instead of one per node).
  struct RangeSet {
    uint32_t begin = 0;
    uint32_t size = 0;
    uint32_t capacity = 0;
  };
  // What a walk reads of one node, side by side: a query or an insertion reaches most nodes it
  // visits through a cache miss, so one line holds them all.
  struct alignas(32) Node {
    RangeSet cover;
    RangeSet below;
    uint32_t visited = 0;  // the stamp of the last walk
  };

  void Insert(RangeSet& set, OccupiedRange range);
  // into |= the set, both sorted and disjoint.
  void Unite(std::vector<OccupiedRange>& into, const RangeSet& set);

  int64_t first_;
  int64_t last_;
  int64_t alignment_;
  size_t leaves_ = 1;
  std::vector<Node> nodes_;
  std::vector<OccupiedRange> pool_;
  // By log2 of their capacity: where the blocks sets moved out of begin, for sets growing to that
  // capacity (the pool holds about what the sets hold, not twice that).
  std::vector<std::vector<uint32_t>> free_blocks_;
  uint32_t stamp_ = 0;
  std::vector<OccupiedRange> merged_;  // Unite's scratch
};

}  // namespace spmdsim::passes
