#include "passes/rng/rng_whatif.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "ir/attribute_parsers.h"
#include "ir/checked_math.h"

namespace spmdsim::passes {

using ir::CeilDiv;
using ir::SaturatingAdd;
using ir::SaturatingMul;

namespace {

// The devices replicated mode's flat hash is split over: P unless fewer are known.
int64_t HashShards(const RngGeometry& g) {
  const int64_t devices = g.devices > 0 ? g.devices : 1;
  return g.hash_shards > 0 && g.hash_shards <= devices ? g.hash_shards : devices;
}

}  // namespace

RngWhatIf PredictRngCosts(const RngGeometry& g) {
  RngWhatIf out;
  const int64_t word = g.word_bytes > 0 ? g.word_bytes : 4;
  // The devices replicated mode's flat hash is split over (the all-gathers' group).
  const int64_t hashers = HashShards(g);
  const int64_t nl = g.local_elements > 0 ? g.local_elements : 0;
  const int64_t n = g.global_elements > nl ? g.global_elements : nl;
  const int64_t local_words = SaturatingMul(word, nl);
  const int64_t global_words = SaturatingMul(word, n);

  // partitionable: two counter arrays hashed in place plus the loop's copies of them.
  out.partitionable.memory_bytes = SaturatingMul(4, local_words);

  // replicated: m pairs per device; all-gathered halves and their concatenation.
  const int64_t half = CeilDiv(n, 2);
  const int64_t m = CeilDiv(half, hashers);
  const int64_t pair_words = SaturatingMul(word, m);
  // all-gathers and concatenation 8n; loop state and copies 16m; exchanged counter pieces 20m.
  // Unrolled: no loop state, the hash outputs 8m; the consumers fuse the concatenation.
  int64_t replicated = SaturatingMul(g.consumers > 1 && !g.unrolled ? 2 : 1, global_words);
  replicated = SaturatingAdd(replicated, SaturatingMul(g.unrolled ? 7 : 9, pair_words));
  // Hoisted out of the site's loop, the device's counter pieces are the loop's state.
  if (g.counters_hoisted) replicated = SaturatingAdd(replicated, SaturatingMul(2, pair_words));
  out.replicated.memory_bytes = replicated;
  if (hashers > 1) {
    const int64_t gathered = SaturatingMul(word, half);  // B of one all-gather
    const int64_t ring = SaturatingMul(gathered, hashers - 1) / hashers;
    out.replicated.counter_wire_bytes = SaturatingMul(5, pair_words);
    out.replicated.wire_bytes_per_device =
        SaturatingAdd(SaturatingMul(2, ring), out.replicated.counter_wire_bytes);
  }

  if (g.hash_call) {
    out.partitionable.memory_bytes = SaturatingMul(4, global_words);
    out.replicated.memory_bytes =
        SaturatingAdd(SaturatingMul(3, global_words), SaturatingMul(2, pair_words));
    if (hashers > 1) {
      const int64_t gathered = SaturatingMul(word, half);
      out.replicated.wire_bytes_per_device =
          SaturatingMul(2, SaturatingMul(gathered, hashers - 1) / hashers);
      out.replicated.counter_wire_bytes = 0;  // the call takes the global counters: no permutes
    }
  }
  // rbg: not partitioned, the global bits on every device.
  out.rbg.memory_bytes = global_words;
  // fused: nothing.
  return out;
}

namespace {

// Bytes XLA:TPU allocates for one u32 scalar (elements 0) or vector, in the 1-D tiling T(128)
// the TPU dumps give these pieces (u32[]{:T(128)}, u32[32]{0:T(128)}).
int64_t TpuU32Bytes(int64_t elements) {
  const std::string text = elements > 0 ? "u32[" + std::to_string(elements) + "]{0:T(128)}"
                                        : std::string("u32[]{:T(128)}");
  const std::optional<ir::Shape> shape = ir::ParseShape(text);
  return shape ? PlatformProfile::For(Platform::kTpu).BufferBytes(*shape) : 0;
}

}  // namespace

int64_t TpuPartitionableKeyBytes() { return SaturatingMul(2, TpuU32Bytes(0)); }

int64_t TpuPartitionableCounterBytes(const std::vector<int64_t>& local_shape) {
  if (local_shape.size() < 2) return 0;
  // The device's offset: partition id converted, times the shard's extent, converted.
  int64_t bytes = SaturatingMul(3, TpuU32Bytes(0));
  for (size_t d = 0; d + 1 < local_shape.size(); ++d) {
    bytes = SaturatingAdd(bytes, SaturatingMul(2, TpuU32Bytes(local_shape[d])));  // hi and lo
  }
  return bytes;
}

bool HoistsLoopInvariantCollectives(Platform platform) { return platform == Platform::kCpu; }

RngCost PerStepCost(const RngCost& per_run, int64_t runs, bool counters_hoisted) {
  RngCost step = per_run;
  if (runs <= 1) return step;
  const int64_t once =
      counters_hoisted ? std::min(per_run.counter_wire_bytes, per_run.wire_bytes_per_device) : 0;
  step.wire_bytes_per_device =
      SaturatingAdd(SaturatingMul(per_run.wire_bytes_per_device - once, runs), once);
  return step;
}

int64_t SharedReplicatedCounterBytes(const RngGeometry& g) {
  const int64_t n = std::max(g.global_elements, g.local_elements);
  if (g.hash_call) return SaturatingMul(2 * (g.word_bytes > 0 ? g.word_bytes : 4), n);
  return SaturatingMul(4 * (g.word_bytes > 0 ? g.word_bytes : 4),
                       CeilDiv(CeilDiv(n, 2), HashShards(g)));
}

int64_t SharedPartitionableCounterBytes(const RngGeometry& g) {
  if (!g.counters_hoisted || g.hash_call) return 0;
  return SaturatingMul(2 * (g.word_bytes > 0 ? g.word_bytes : 4), g.local_elements);
}

const RngCost* CostOf(const RngWhatIf& whatif, SiteMode mode) {
  switch (mode) {
    case SiteMode::kReplicated:
      return &whatif.replicated;
    case SiteMode::kPartitionable:
      return &whatif.partitionable;
    case SiteMode::kRbg:
      return &whatif.rbg;
    case SiteMode::kUnknown:
      break;
  }
  return nullptr;
}

const RngCost* CostOf(const RngWhatIf& whatif, const char* mode) {
  if (std::strcmp(mode, "replicated") == 0) return &whatif.replicated;
  if (std::strcmp(mode, "partitionable") == 0) return &whatif.partitionable;
  if (std::strcmp(mode, "rbg") == 0) return &whatif.rbg;
  if (std::strcmp(mode, "fused") == 0) return &whatif.fused;
  return nullptr;
}

}  // namespace spmdsim::passes
