// Packs buffers with known lifetimes into one heap, the way XLA's buffer assignment packs the
// temporary buffers of a scheduled module (GlobalDecreasingSizeBestFitHeap, run twice and the
// smaller heap kept, as ChooseBestHeapAlgorithm does):
//
//   1. A HeapRecorder takes the Alloc / ShareWith / Free calls of a walk over the schedule. Each
//      call is one tick of the heap's clock; a buffer's interval is [tick of Alloc, tick of Free].
//      ShareWith places a buffer at the same offset as an allocated one (a value that reuses its
//      operand's buffer, or the next value of an aliased buffer); the pair are *colocations*.
//   2. PackBestFit sorts the allocated intervals (spatial: largest first, then longest; temporal:
//      longest colocation span first, then largest; definition: by Alloc tick, the platforms
//      whose assignments show it) and gives each, in turn, the smallest free gap
//      that fits it and its colocations at every tick they are live, or the top of the heap.
//      Offsets are multiples of `alignment`.
//
// Example (alignment 1): a [0,2] 100 bytes, b [1,4] 50 bytes, c [3,5] 100 bytes -> spatial order
// a, c, b: a at 0, c at 0 (a is dead by then), b at 100; heap 150.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/checked_math.h"

namespace spmdsim::passes {

struct HeapInterval {
  int32_t buffer = 0;  // caller's id, breaks ties in the sort (XLA: the HloValue id)
  int64_t size = 0;
  int64_t start = 0;                 // tick of Alloc / ShareWith
  int64_t end = -1;                  // tick of Free (inclusive); -1 while live
  std::vector<int32_t> colocations;  // intervals placed at this one's offset
  bool need_allocation = true;       // false for intervals created by ShareWith
};

// Records the calls of a heap simulation as intervals, and the live bytes after each call
// (a shared buffer counts once).
class HeapRecorder {
 public:
  // Returns the interval index, or -1 for a zero-sized buffer (which takes no space or tick).
  int32_t Alloc(int32_t buffer, int64_t size);
  int32_t ShareWith(int32_t buffer, int32_t shared_interval, int64_t size);
  void Free(int32_t interval);

  const std::vector<HeapInterval>& intervals() const { return intervals_; }
  // The allocated interval whose space `interval` occupies (itself unless it was shared).
  int32_t CanonicalOf(int32_t interval) const { return Canonical(interval); }
  int64_t ticks() const { return tick_; }
  int64_t live_bytes() const { return live_bytes_.Value(); }
  // Largest live_bytes() seen, and the first tick at which it was reached.
  int64_t peak_live_bytes() const { return peak_live_bytes_; }
  int64_t peak_tick() const { return peak_tick_; }

 private:
  int32_t Canonical(int32_t interval) const;
  std::vector<HeapInterval> intervals_;
  std::vector<int32_t> canonical_;  // the allocated interval a shared one rides on
  std::vector<int32_t> refcount_;   // by canonical interval
  int64_t tick_ = 0;
  ir::WideTotal live_bytes_;
  int64_t peak_live_bytes_ = 0;
  int64_t peak_tick_ = -1;
};

// kSpatial and kTemporal are XLA's two sorts (GlobalDecreasingSizeBestFitHeap's kSpatial and
// kTemporal). kDefinition places the buffers in the order they are defined (their Alloc tick),
// those marked `placed_after_others` last, each into the smallest free gap, and a buffer with
// colocations holds its offset from the first Alloc to the last Free (the gaps between them are
// not reused): what XLA:TPU's HBM offsets show (platform_profile.h).
enum class PackingOrder : uint8_t { kSpatial, kTemporal, kDefinition };

struct HeapPackOptions {
  int64_t alignment = 64;  // XLA:CPU aligns every temp buffer to 64 bytes
  // The order in which ties of the sort are broken, by interval buffer id (XLA: the HloValue
  // ids, in the order XLA's dataflow analysis created the values); an id past its end, or an
  // empty vector, ranks by the id itself.
  std::span<const int64_t> buffer_rank;  // viewed: it outlives the packing
  // Run the spatial and the temporal order and keep the smaller heap (XLA's default); otherwise
  // only `order`.
  bool best_of_both = true;
  PackingOrder order = PackingOrder::kSpatial;
  // kDefinition: the interval buffer ids placed after all others (true at their index).
  std::vector<bool> placed_after_others;
};

struct HeapPackResult {
  int64_t heap_size = 0;
  std::vector<int64_t> offsets;  // by interval; -1 for intervals never placed
  PackingOrder chosen = PackingOrder::kSpatial;
  int64_t spatial_heap_size = -1;  // -1 when that order was not run
  int64_t temporal_heap_size = -1;
};

HeapPackResult PackBestFit(const std::vector<HeapInterval>& intervals,
                           const HeapPackOptions& options = {});

std::string PackingOrderName(PackingOrder order);

}  // namespace spmdsim::passes
