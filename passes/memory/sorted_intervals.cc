#include "passes/memory/sorted_intervals.h"

#include <algorithm>
#include <iterator>

namespace spmdsim::passes {

size_t SortedIntervals::size() const {
  size_t count = 0;
  for (const auto& block : blocks_) count += block.size();
  return count;
}

SortedIntervals::Pos SortedIntervals::LowerBound(const Interval& key) const {
  const auto block = std::lower_bound(last_.begin(), last_.end(), key);
  if (block == last_.end()) return End();
  const auto b = static_cast<size_t>(block - last_.begin());
  const auto& values = blocks_[b];
  // The block's last pair is not less than the key: the bound lies inside it.
  return Pos{
      b, static_cast<size_t>(std::lower_bound(values.begin(), values.end(), key) - values.begin())};
}

SortedIntervals::Pos SortedIntervals::Prev(Pos p) const {
  if (p.index > 0) return Pos{p.block, p.index - 1};
  return Pos{p.block - 1, blocks_[p.block - 1].size() - 1};
}

SortedIntervals::Pos SortedIntervals::Next(Pos p) const {
  if (p.index + 1 < blocks_[p.block].size()) return Pos{p.block, p.index + 1};
  return Pos{p.block + 1, 0};
}

void SortedIntervals::Insert(Pos p, const Interval& value) {
  if (blocks_.empty()) {
    blocks_.push_back({value});
    last_.push_back(value);
    return;
  }
  if (IsEnd(p)) p = Pos{blocks_.size() - 1, blocks_.back().size()};  // append to the last block
  auto& block = blocks_[p.block];
  block.insert(block.begin() + static_cast<std::ptrdiff_t>(p.index), value);
  last_[p.block] = block.back();
  if (block.size() <= 2 * block_size_) return;
  // Split in two halves: the second becomes the next block.
  std::vector<Interval> upper(block.begin() + static_cast<std::ptrdiff_t>(block_size_),
                              block.end());
  block.resize(block_size_);
  last_[p.block] = block.back();
  const Interval upper_last = upper.back();
  blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(p.block + 1), std::move(upper));
  last_.insert(last_.begin() + static_cast<std::ptrdiff_t>(p.block + 1), upper_last);
}

void SortedIntervals::Replace(Pos first, Pos last, const Interval& value) {
  const size_t b = first.block;
  auto& head = blocks_[b];
  head[first.index] = value;
  const auto from = static_cast<std::ptrdiff_t>(first.index + 1);
  if (last.block == b) {
    head.erase(head.begin() + from, head.begin() + static_cast<std::ptrdiff_t>(last.index));
    last_[b] = head.back();
    return;
  }
  // The rest of the first block, the blocks wholly inside, the start of the last one.
  head.erase(head.begin() + from, head.end());
  last_[b] = head.back();
  const auto inside_begin = static_cast<std::ptrdiff_t>(b + 1);
  const auto inside_end = static_cast<std::ptrdiff_t>(last.block);
  blocks_.erase(blocks_.begin() + inside_begin, blocks_.begin() + inside_end);
  last_.erase(last_.begin() + inside_begin, last_.begin() + inside_end);
  if (b + 1 < blocks_.size()) {
    auto& tail = blocks_[b + 1];
    // last.index < tail.size(): the tail block keeps at least the pair at `last`.
    tail.erase(tail.begin(), tail.begin() + static_cast<std::ptrdiff_t>(last.index));
  }
}

}  // namespace spmdsim::passes
