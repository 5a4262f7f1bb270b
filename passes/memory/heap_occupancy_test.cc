// HeapOccupancy against its definition: the union of the aligned chunks, among all added, whose
// time range overlaps the query's.
#include "passes/memory/heap_occupancy.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <utility>
#include <vector>

#include "ir/checked_math.h"

namespace spmdsim::passes {
namespace {

struct Added {
  int64_t start;
  int64_t end;
  OccupiedRange range;
};

std::vector<OccupiedRange> ScanUnion(const std::vector<Added>& added, int64_t start, int64_t end) {
  std::vector<OccupiedRange> ranges;
  for (const Added& a : added) {
    if (a.start <= end && a.end >= start) ranges.push_back(a.range);
  }
  if (ranges.empty()) return ranges;
  std::sort(ranges.begin(), ranges.end(),
            [](const OccupiedRange& a, const OccupiedRange& b) { return a.lo < b.lo; });
  size_t out = 0;
  for (size_t k = 1; k < ranges.size(); ++k) {
    if (ranges[k].lo <= ranges[out].hi) {
      ranges[out].hi = std::max(ranges[out].hi, ranges[k].hi);
    } else {
      ranges[++out] = ranges[k];
    }
  }
  ranges.resize(out + 1);
  return ranges;
}

bool Same(const std::vector<OccupiedRange>& a, const std::vector<OccupiedRange>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].lo != b[k].lo || a[k].hi != b[k].hi) return false;
  }
  return true;
}

TEST_CASE("heap occupancy answers as a scan of the chunks added") {
  std::mt19937 random(2026);
  for (int trial = 0; trial < 300; ++trial) {
    // Short horizons and few offsets make shared ends, nested chunks and touching ranges common.
    const int64_t first = trial % 5;
    const int64_t last = first + 1 + trial % 50;
    const int64_t alignment = int64_t{1} << (trial % 4);
    std::uniform_int_distribution<int64_t> time(first, last);
    std::uniform_int_distribution<int64_t> offset(0, 40);
    std::uniform_int_distribution<int64_t> size(1, 12);
    HeapOccupancy occupancy(first, last, alignment);
    std::vector<Added> added;
    for (int step = 0; step < 80; ++step) {
      int64_t start = time(random);
      int64_t end = time(random);
      if (start > end && step % 7 != 0) std::swap(start, end);  // some stay empty (end < start)
      const int64_t at = ir::SaturatingAlignUp(offset(random), alignment);
      const int64_t bytes = size(random);
      occupancy.Add(start, end, at, bytes);
      if (start <= end) {
        added.push_back(Added{start, end, {at, ir::SaturatingAlignUp(at + bytes, alignment)}});
      }
      const int64_t query_start = time(random) - 2;  // reaching outside [first, last]
      const int64_t query_end = query_start + time(random) % 9;
      std::vector<OccupiedRange> found;
      occupancy.Query(query_start, query_end, found);
      INFO("trial " << trial << " step " << step << " query [" << query_start << ", " << query_end
                    << "]");
      CHECK(Same(found, ScanUnion(added, query_start, query_end)));
    }
  }
}

TEST_CASE("renumbered span times keep every overlap and no other") {
  std::mt19937 random(5);
  for (int trial = 0; trial < 200; ++trial) {
    // Few distinct times make shared starts and ends, one-tick spans and empty ones common.
    std::uniform_int_distribution<int64_t> time(-3, 3 + trial % 40);
    std::vector<std::pair<int64_t, int64_t>> spans(static_cast<size_t>(1 + trial % 30));
    for (auto& [start, end] : spans) {
      start = time(random);
      end = trial % 3 == 0 ? time(random) : start + time(random) % 4;  // some end before start
    }
    std::vector<std::pair<int64_t, int64_t>> renumbered = spans;
    const int64_t count = CompressSpanTimes(renumbered);
    CHECK(count <= static_cast<int64_t>(2 * spans.size()));
    const auto overlap = [](const std::pair<int64_t, int64_t>& a,
                            const std::pair<int64_t, int64_t>& b) {
      return a.first <= b.second && b.first <= a.second;
    };
    for (size_t a = 0; a < spans.size(); ++a) {
      CHECK(renumbered[a].first >= 0);
      CHECK(renumbered[a].second < count);
      CHECK((renumbered[a].first <= renumbered[a].second) == (spans[a].first <= spans[a].second));
      for (size_t b = 0; b < spans.size(); ++b) {
        INFO("trial " << trial << " spans " << a << " and " << b);
        CHECK(overlap(renumbered[a], renumbered[b]) == overlap(spans[a], spans[b]));
      }
    }
  }
}

TEST_CASE("renumbering takes one time per run of starts or of ends") {
  // Starts 0, 1, 2 then ends 5, 6, 7: every span overlaps every other, one time each side.
  std::vector<std::pair<int64_t, int64_t>> nested = {{0, 7}, {1, 6}, {2, 5}};
  CHECK(CompressSpanTimes(nested) == 2);
  CHECK(nested == std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {0, 1}, {0, 1}});
  // A chain: [0,1] [2,3] [4,5] alternate start, end, start, end...
  std::vector<std::pair<int64_t, int64_t>> chain = {{0, 1}, {2, 3}, {4, 5}};
  CHECK(CompressSpanTimes(chain) == 6);
  // A start meeting an end at one time overlaps it: the start's run comes first.
  std::vector<std::pair<int64_t, int64_t>> touching = {{0, 3}, {3, 6}};
  CHECK(CompressSpanTimes(touching) == 2);
  CHECK(touching == std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {0, 1}});
}

}  // namespace
}  // namespace spmdsim::passes
