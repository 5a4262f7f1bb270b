// AllocationTimeline and ValueTouchIndex against the definition they replace: a scan over every
// range added.
#include "passes/memory/allocation_timeline.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <set>
#include <vector>

namespace spmdsim::passes {
namespace {

bool ScanOverlaps(const std::vector<TimeBound>& ranges, const TimeBound& query) {
  return std::any_of(ranges.begin(), ranges.end(), [&](const TimeBound& r) {
    return r.start < query.end && r.end > query.start;
  });
}

std::multiset<int32_t> ScanTouching(const std::vector<TimeBound>& ranges, const TimeBound& query) {
  std::multiset<int32_t> ids;
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].end == query.start) ids.insert(static_cast<int32_t>(i));
    if (ranges[i].start == query.end) ids.insert(static_cast<int32_t>(i));
  }
  return ids;
}

TEST_CASE("allocation timeline answers as a scan of its ranges does") {
  std::mt19937 random(12345);
  for (int trial = 0; trial < 200; ++trial) {
    // Short horizons make touching ends, points and nested ranges common.
    const int64_t horizon = 4 + trial % 40;
    std::uniform_int_distribution<int64_t> time(0, horizon);
    AllocationTimeline timeline;
    // Every other value goes to a second owner, which the touching values of owner 0 leave out;
    // the last horizon step lies outside the index's times.
    ValueTouchIndex touch_index(120, static_cast<size_t>(horizon));
    std::vector<TimeBound> ranges;
    std::vector<TimeBound> witnesses;
    for (int step = 0; step < 60; ++step) {
      TimeBound range{time(random), 0};
      range.end = std::min(horizon, range.start + time(random) % (1 + trial % 7));
      TimeBound other{time(random), 0};
      other.end = std::min(horizon, other.start + time(random) % 3);
      touch_index.Add(static_cast<int32_t>(60 + step), other, 1);
      for (int q = 0; q < 8; ++q) {
        TimeBound query{time(random), 0};
        query.end = std::min(horizon, query.start + time(random) % 5);
        INFO("trial " << trial << " step " << step << " query [" << query.start << ", " << query.end
                      << "]");
        CHECK(timeline.StrictlyOverlaps(query) == ScanOverlaps(ranges, query));
        // A witness of an overlap stays one: every later query meeting it overlaps too.
        for (const TimeBound& w : witnesses) {
          if (w.start < query.end && w.end > query.start) CHECK(ScanOverlaps(ranges, query));
        }
        TimeBound witness{};
        if (timeline.StrictlyOverlaps(query, &witness)) {
          CHECK(ScanOverlaps(ranges, query));
          CHECK((witness.start < query.end && witness.end > query.start));
          witnesses.push_back(witness);
        }
        std::multiset<int32_t> touching;
        touch_index.ForEachTouching(0, query, [&](int32_t id) { touching.insert(id); });
        CHECK(touching == ScanTouching(ranges, query));
      }
      timeline.Add(range);
      touch_index.Add(static_cast<int32_t>(ranges.size()), range, 0);
      ranges.push_back(range);
    }
  }
}

TEST_CASE("value touch index with hundreds of values at one time answers as a scan does") {
  // 3,000 values over 12 times among 40 owners: each time's lists grow far past what is scanned
  // and are then kept by owner too; values keep arriving after that.
  std::mt19937 random(31);
  const int64_t horizon = 12;
  std::uniform_int_distribution<int64_t> time(0, horizon - 1);
  std::uniform_int_distribution<int32_t> pick_owner(0, 39);
  const int32_t count = 3000;
  ValueTouchIndex touch_index(static_cast<size_t>(count), static_cast<size_t>(horizon));
  std::vector<TimeBound> ranges;
  std::vector<int32_t> owners;
  for (int32_t id = 0; id < count; ++id) {
    TimeBound range{time(random), 0};
    range.end = std::min(horizon - 1, range.start + time(random) % 3);
    const int32_t owner = pick_owner(random);
    touch_index.Add(id, range, owner);
    ranges.push_back(range);
    owners.push_back(owner);
    if (id % 97 != 0) continue;
    for (int q = 0; q < 20; ++q) {
      TimeBound query{time(random), 0};
      query.end = std::min(horizon - 1, query.start + time(random) % 4);
      const int32_t asked = pick_owner(random);
      std::multiset<int32_t> expected;
      for (int32_t v = 0; v <= id; ++v) {
        if (owners[static_cast<size_t>(v)] != asked) continue;
        if (ranges[static_cast<size_t>(v)].end == query.start) expected.insert(v);
        if (ranges[static_cast<size_t>(v)].start == query.end) expected.insert(v);
      }
      std::multiset<int32_t> touching;
      touch_index.ForEachTouching(asked, query, [&](int32_t v) { touching.insert(v); });
      INFO("value " << id << " owner " << asked << " query [" << query.start << ", " << query.end
                    << "]");
      CHECK(touching == expected);
    }
  }
}

TEST_CASE("allocation timeline with thousands of intervals answers as a scan does") {
  // Enough disjoint intervals that the sorted blocks split and merges cross them.
  std::mt19937 random(99);
  const int64_t horizon = 6000;
  std::uniform_int_distribution<int64_t> time(0, horizon);
  AllocationTimeline timeline;
  std::vector<TimeBound> ranges;
  for (int step = 0; step < 3000; ++step) {
    TimeBound range{time(random), 0};
    // Mostly short ranges and points; now and then a long one that merges many.
    range.end = std::min(horizon, range.start + (step % 97 == 0 ? time(random) / 8 : step % 3));
    timeline.Add(range);
    ranges.push_back(range);
    if (step % 50 != 0) continue;
    for (int q = 0; q < 40; ++q) {
      TimeBound query{time(random), 0};
      query.end = std::min(horizon, query.start + time(random) % 4);
      INFO("step " << step << " query [" << query.start << ", " << query.end << "]");
      CHECK(timeline.StrictlyOverlaps(query) == ScanOverlaps(ranges, query));
    }
  }
}

// The index's answers for `query` against asking each timeline: whether any is free, which
// ones, and a visit from the highest down that stops after `stop_after` of them.
void CheckAgainstEachTimeline(const AllocationGapIndex& index,
                              const std::vector<AllocationTimeline>& timelines,
                              const TimeBound& query, size_t stop_after) {
  std::vector<int32_t> free_ones;
  for (size_t t = 0; t < timelines.size(); ++t) {
    if (!timelines[t].StrictlyOverlaps(query)) free_ones.push_back(static_cast<int32_t>(t));
  }
  CHECK(index.AnyContains(query) == !free_ones.empty());
  std::vector<int32_t> owners;
  REQUIRE(index.OwnersContaining(query, &owners));
  CHECK(owners == free_ones);
  std::vector<int32_t> visited;
  REQUIRE(index.VisitOwnersContaining(query, [&](int32_t owner) {
    visited.push_back(owner);
    return visited.size() == stop_after;
  }));
  std::vector<int32_t> expected(free_ones.rbegin(), free_ones.rend());
  if (expected.size() > stop_after) expected.resize(stop_after);
  CHECK(visited == expected);
}

TEST_CASE(
    "gap index answers whether any tracked timeline is free, and which, as asking each does") {
  std::mt19937 random(2024);
  for (int trial = 0; trial < 200; ++trial) {
    // Every tenth trial has up to ~700 gap starts: the index's tree then has four levels.
    const int64_t horizon = trial % 10 == 9 ? 100 + 3 * trial : 4 + trial % 40;
    std::uniform_int_distribution<int64_t> time(0, horizon);
    std::vector<int64_t> ends;
    for (int64_t t = 0; t <= horizon; ++t) ends.push_back(t);
    // A far time leaves the index no table by time (its binary searches answer instead).
    if (trial % 10 == 8) ends.push_back(int64_t{1} << 40);
    AllocationGapIndex index(ends);
    // Up to 9 timelines: the tree over owners grows past 1, 2, 4 and 8 leaves.
    const int count = 1 + trial % 9;
    std::vector<AllocationTimeline> timelines(static_cast<size_t>(count));
    // Some timelines hold ranges before they are tracked, as an allocation does before it is
    // registered for reuse.
    std::uniform_int_distribution<int> pick(0, count - 1);
    for (int step = 0; step < 80; ++step) {
      const auto which = static_cast<size_t>(pick(random));
      TimeBound range{time(random), 0};
      range.end = std::min(horizon, range.start + time(random) % (1 + trial % 7));
      timelines[which].Add(range);
      if (step == 10) {
        for (size_t t = 0; t < timelines.size(); ++t) {
          timelines[t].TrackGaps(&index, static_cast<int32_t>(t));
        }
      }
      if (step < 10) continue;
      for (int q = 0; q < 8; ++q) {
        TimeBound query{time(random), 0};
        query.end = std::min(horizon, query.start + time(random) % 5);
        INFO("trial " << trial << " step " << step << " query [" << query.start << ", " << query.end
                      << "]");
        // Highest first, and a visit that stops at the first sees only it.
        CheckAgainstEachTimeline(index, timelines, query, 1);
      }
    }
  }
}

TEST_CASE(
    "gap index with crowded leaves (hundreds of gaps from one time) answers as asking "
    "each timeline does") {
  // Hundreds of timelines over a short horizon: many ranges end at each time, so the leaves
  // of the index hold far more than the gaps it lists and become crowded; as ranges fill the
  // gaps, leaves fall back to listed ones. Owners span several blocks of the crowded leaves.
  std::mt19937 random(7);
  for (int trial = 0; trial < 24; ++trial) {
    const int64_t horizon = 12 + trial;
    std::uniform_int_distribution<int64_t> time(0, horizon);
    std::vector<int64_t> ends;
    for (int64_t t = 0; t <= horizon; ++t) ends.push_back(t);
    // A small bound: leaves become crowded and listed again many times over.
    AllocationGapIndex index(ends, /*listed_gaps=*/2 + trial % 6);
    const int count = 150 + 11 * trial;
    std::vector<AllocationTimeline> timelines(static_cast<size_t>(count));
    std::uniform_int_distribution<int> pick(0, count - 1);
    for (int step = 0; step < 6 * count; ++step) {
      const auto which = static_cast<size_t>(pick(random));
      TimeBound range{time(random), 0};
      range.end = std::min(horizon, range.start + time(random) % 3);
      timelines[which].Add(range);
      if (step == count) {
        for (size_t t = 0; t < timelines.size(); ++t) {
          timelines[t].TrackGaps(&index, static_cast<int32_t>(t));
        }
      }
      if (step < count || step % 7 != 0) continue;
      TimeBound query{time(random), 0};
      query.end = std::min(horizon, query.start + time(random) % 4);
      INFO("trial " << trial << " step " << step << " query [" << query.start << ", " << query.end
                    << "]");
      CheckAgainstEachTimeline(index, timelines, query, 1 + static_cast<size_t>(step % 5));
    }
  }
}

}  // namespace
}  // namespace spmdsim::passes
