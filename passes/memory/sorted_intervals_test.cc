// SortedIntervals against a sorted std::vector doing the same insertions and replacements, with
// blocks small enough that every operation crosses or splits them.
#include "passes/memory/sorted_intervals.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <vector>

namespace spmdsim::passes {
namespace {

using Interval = SortedIntervals::Interval;

std::vector<Interval> Contents(const SortedIntervals& s) {
  std::vector<Interval> out;
  s.ForEach([&](const Interval& v) { out.push_back(v); });
  return out;
}

// The position of the n-th pair, walked from the start with Next.
SortedIntervals::Pos Nth(const SortedIntervals& s, size_t n) {
  SortedIntervals::Pos p = s.Begin();
  for (size_t k = 0; k < n; ++k) p = s.Next(p);
  return p;
}

TEST_CASE("sorted intervals keep the order and answer as a sorted array does") {
  std::mt19937 random(7);
  for (size_t block_size : {1, 2, 3, 8}) {
    SortedIntervals s(block_size);
    std::vector<Interval> reference;
    std::uniform_int_distribution<int64_t> time(0, 400);
    for (int step = 0; step < 600; ++step) {
      INFO("block size " << block_size << " step " << step);
      const Interval value{time(random), time(random)};
      const bool replace = !reference.empty() && step % 3 == 2;
      if (replace) {
        // Replace a stretch by its first pair (which keeps the order).
        std::uniform_int_distribution<size_t> at(0, reference.size() - 1);
        const size_t first = at(random);
        const size_t last = std::min(reference.size(), first + 1 + at(random) % 7);
        const Interval kept = reference[first];
        s.Replace(Nth(s, first), Nth(s, last), kept);
        reference.erase(reference.begin() + static_cast<std::ptrdiff_t>(first) + 1,
                        reference.begin() + static_cast<std::ptrdiff_t>(last));
      } else {
        const auto it = std::lower_bound(reference.begin(), reference.end(), value);
        const auto p = s.LowerBound(value);
        REQUIRE(p == Nth(s, static_cast<size_t>(it - reference.begin())));
        s.Insert(p, value);
        reference.insert(it, value);
      }
      REQUIRE(Contents(s) == reference);
      REQUIRE(s.size() == reference.size());
      // Every position's neighbours, and the bound of a probe.
      const Interval probe{time(random), time(random)};
      const auto bound = std::lower_bound(reference.begin(), reference.end(), probe);
      const auto p = s.LowerBound(probe);
      CHECK(s.IsEnd(p) == (bound == reference.end()));
      if (!s.IsEnd(p)) CHECK(s.At(p) == *bound);
      if (!s.IsBegin(p)) CHECK(s.At(s.Prev(p)) == *(bound - 1));
    }
  }
}

}  // namespace
}  // namespace spmdsim::passes
