// The heap recorder's ticks and live bytes, and best-fit packing on hand-made intervals.
#include "passes/memory/heap_simulation.h"

#include <catch2/catch.hpp>

namespace spmdsim::passes {
namespace {

HeapInterval Interval(int32_t buffer, int64_t size, int64_t start, int64_t end) {
  return HeapInterval{buffer, size, start, end, {}, true};
}

TEST_CASE("the recorder ticks once per call and counts a shared buffer once") {
  HeapRecorder heap;
  const int32_t a = heap.Alloc(0, 100);         // tick 0
  const int32_t b = heap.Alloc(1, 50);          // tick 1
  heap.Free(a);                                 // tick 2
  const int32_t c = heap.ShareWith(2, a, 100);  // tick 3: rides on a's space
  heap.Free(b);                                 // tick 4
  heap.Free(c);                                 // tick 5
  CHECK(heap.ticks() == 6);
  REQUIRE(heap.intervals().size() == 3);
  CHECK(heap.intervals()[0].start == 0);
  CHECK(heap.intervals()[0].end == 2);
  CHECK(heap.intervals()[0].colocations == std::vector<int32_t>{c});
  CHECK_FALSE(heap.intervals()[2].need_allocation);
  CHECK(heap.CanonicalOf(c) == a);
  CHECK(heap.peak_live_bytes() == 150);
  CHECK(heap.peak_tick() == 1);
  CHECK(heap.live_bytes() == 0);
  CHECK(heap.Alloc(3, 0) == -1);  // zero-sized: no space, no tick
  CHECK(heap.ticks() == 6);
}

TEST_CASE("the header's example: a and c reuse one place, b goes above") {
  const std::vector<HeapInterval> intervals = {Interval(0, 100, 0, 2), Interval(1, 50, 1, 4),
                                               Interval(2, 100, 3, 5)};
  HeapPackOptions options;
  options.alignment = 1;
  const HeapPackResult result = PackBestFit(intervals, options);
  CHECK(result.heap_size == 150);
  CHECK(result.spatial_heap_size == 150);
  CHECK(result.temporal_heap_size == 150);
  CHECK(result.chosen == PackingOrder::kSpatial);  // ties keep the spatial order
  CHECK(result.offsets == std::vector<int64_t>{0, 100, 0});
}

TEST_CASE("best fit takes the smallest gap that holds the buffer") {
  // Spatial order places the larger first: a at 0, b at 100, c at 190, d at 270, e at 340.
  std::vector<HeapInterval> intervals = {Interval(0, 100, 0, 10), Interval(1, 90, 0, 4),
                                         Interval(2, 80, 0, 10), Interval(3, 70, 0, 4),
                                         Interval(4, 65, 0, 10)};
  HeapPackOptions options;
  options.alignment = 1;
  options.best_of_both = false;
  HeapPackResult packed = PackBestFit(intervals, options);
  CHECK(packed.offsets == std::vector<int64_t>{0, 100, 190, 270, 340});
  // After b and d die, a 60-byte buffer has two holes: 90 bytes at 100 and 70 bytes at 270. It
  // takes the smaller one.
  intervals.push_back(Interval(5, 60, 5, 10));
  packed = PackBestFit(intervals, options);
  CHECK(packed.offsets[5] == 270);
  CHECK(packed.heap_size == 405);
}

TEST_CASE("offsets are aligned and colocations share the offset and the largest size") {
  HeapRecorder heap;
  const int32_t a = heap.Alloc(0, 10);
  const int32_t b = heap.Alloc(1, 10);
  heap.Free(a);
  const int32_t c = heap.ShareWith(2, b, 10);
  heap.Free(b);
  heap.Free(c);
  HeapPackOptions options;
  options.alignment = 64;
  const HeapPackResult packed = PackBestFit(heap.intervals(), options);
  CHECK(packed.offsets[static_cast<size_t>(a)] % 64 == 0);
  CHECK(packed.offsets[static_cast<size_t>(b)] % 64 == 0);
  CHECK(packed.offsets[static_cast<size_t>(c)] == packed.offsets[static_cast<size_t>(b)]);
  CHECK(packed.heap_size == 74);  // a at 0, b at 64 (aligned), heap ends at 64 + 10
}

TEST_CASE("the temporal order wins when placing long-lived buffers first packs tighter") {
  const std::vector<HeapInterval> intervals = {Interval(0, 80, 1, 1), Interval(1, 70, 5, 8),
                                               Interval(2, 40, 2, 5), Interval(3, 40, 1, 2)};
  HeapPackOptions options;
  options.alignment = 1;
  const HeapPackResult result = PackBestFit(intervals, options);
  // Spatial: 0 at 0, 1 at 0, 2 above 1 at 70, 3 above both at 110 -> 150.
  CHECK(result.spatial_heap_size == 150);
  // Temporal: 1 at 0, 2 at 70, 3 in the hole below at 0, 0 above 3 at 40 -> 120.
  CHECK(result.temporal_heap_size == 120);
  CHECK(result.chosen == PackingOrder::kTemporal);
  CHECK(result.heap_size == 120);
  CHECK(result.offsets == std::vector<int64_t>{40, 0, 70, 0});
  CHECK(PackingOrderName(result.chosen) == "temporal");
}

TEST_CASE("definition order places buffers as they are defined, each in the smallest gap") {
  // Equal sizes, slot-like (XLA:TPU's 512-B scalars in 16 KiB-aligned HBM). Defined in order:
  // a [0,9], b [1,3], c [2,9], d [4,5], e [6,9]. d takes b's freed slot, then e takes it too.
  const std::vector<HeapInterval> intervals = {Interval(0, 10, 0, 9), Interval(1, 10, 1, 3),
                                               Interval(2, 10, 2, 9), Interval(3, 10, 4, 5),
                                               Interval(4, 10, 6, 9)};
  HeapPackOptions options;
  options.alignment = 16;
  options.best_of_both = false;
  options.order = PackingOrder::kDefinition;
  const HeapPackResult packed = PackBestFit(intervals, options);
  CHECK(packed.offsets == std::vector<int64_t>{0, 16, 32, 16, 16});
  CHECK(packed.heap_size == 42);
  CHECK(packed.chosen == PackingOrder::kDefinition);
  CHECK(packed.spatial_heap_size == -1);
  CHECK(PackingOrderName(packed.chosen) == "definition");
  // Marked to be placed after the others, a (defined first) goes above b, d, e at 0 and c at 16.
  options.placed_after_others = {true, false, false, false, false};
  CHECK(PackBestFit(intervals, options).offsets == std::vector<int64_t>{32, 0, 16, 0, 0});
}

TEST_CASE("in definition order a buffer holds its place from its first value to its last") {
  // A loop-carried buffer: a [0,2] and its colocation c [7,9]. b [4,5] fits between them in
  // XLA's sorts (each colocation is checked alone) but not in definition order.
  HeapPackOptions options;
  options.alignment = 16;
  options.best_of_both = false;
  std::vector<HeapInterval> intervals = {Interval(0, 10, 0, 2), Interval(1, 10, 4, 5),
                                         Interval(2, 10, 7, 9)};
  intervals[0].colocations = {2};
  intervals[2].need_allocation = false;
  options.order = PackingOrder::kSpatial;
  CHECK(PackBestFit(intervals, options).offsets == std::vector<int64_t>{0, 0, 0});
  options.order = PackingOrder::kDefinition;
  CHECK(PackBestFit(intervals, options).offsets == std::vector<int64_t>{0, 16, 0});
}

}  // namespace
}  // namespace spmdsim::passes
