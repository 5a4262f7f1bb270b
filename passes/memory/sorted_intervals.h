#pragma once

// A sorted sequence of (start, end) pairs in blocks of a few hundred, for the timelines of the
// allocations that many temporaries reuse (up to ~100K intervals each on a large flat module):
// a flat array would move them all on each insertion, and a tree pays a cache miss per level
// on each search. A search is a binary search over the blocks' last pairs, then one within a
// block; an insertion moves at most one block.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace spmdsim::passes {

class SortedIntervals {
 public:
  using Interval = std::pair<int64_t, int64_t>;
  // Where a pair is: block and index in it. End() is {block count, 0}.
  struct Pos {
    size_t block = 0;
    size_t index = 0;
    bool operator==(const Pos&) const = default;
  };

  // A block splits in two when it passes 2 * block_size pairs.
  explicit SortedIntervals(size_t block_size = 256)
      : block_size_(block_size < 1 ? 1 : block_size) {}

  size_t size() const;

  Pos Begin() const { return Pos{}; }
  Pos End() const { return Pos{blocks_.size(), 0}; }
  bool IsBegin(Pos p) const { return p.block == 0 && p.index == 0; }
  bool IsEnd(Pos p) const { return p.block == blocks_.size(); }
  // The first pair not less than `key`.
  Pos LowerBound(const Interval& key) const;
  Pos Prev(Pos p) const;  // p is not Begin()
  Pos Next(Pos p) const;  // p is not End()
  const Interval& At(Pos p) const { return blocks_[p.block][p.index]; }

  // Inserts `value` before `p`, which must keep the order.
  void Insert(Pos p, const Interval& value);
  // Replaces the pairs [first, last), at least one, by `value`, which must keep the order.
  void Replace(Pos first, Pos last, const Interval& value);

  template <typename Visit>
  void ForEach(Visit&& visit) const {
    for (const auto& block : blocks_) {
      for (const Interval& value : block) visit(value);
    }
  }

 private:
  size_t block_size_;
  std::vector<std::vector<Interval>> blocks_;  // none empty
  std::vector<Interval> last_;                 // blocks_[b].back(), searched first
};

}  // namespace spmdsim::passes
