// A dropout site and its four candidate lowerings: the sizes one device's shard implies, the
// bytes each lowering materializes (the prediction spmdsim makes), the bytes its kernels move and
// the hashes they compute, and the plan of buffers and stages both backends execute.
//
// What it assumes: the random bits are u32 (an f32 dropout), the activation is sharded along
// dimension 0 in equal parts (dim 0 divisible by the shard count), and replicated mode stays in
// JAX's one-block path (at most 2^32 - 2 counter words). Formulas: cuda_validate/README.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cuda_validate/lowering_ops.h"

namespace spmdsim::validate {

// (a)-(d) of the CUDA validation issue.
enum class Lowering {
  kReplicated,                 // (a) generate the global bits, then slice
  kPartitionableMaterialized,  // (b) iota_2x32 counters, hash to two u32 arrays, mask
  kCustomCall,                 // (c) cu_threefry2x32: keys broadcast to full-shape operands
  kFused,                      // (d) the hash inside the dropout kernel
};
inline constexpr Lowering kAllLowerings[] = {Lowering::kReplicated,
                                             Lowering::kPartitionableMaterialized,
                                             Lowering::kCustomCall, Lowering::kFused};

std::string_view LoweringName(Lowering lowering);
// Accepts the names above and the site modes spmdsim writes: replicated, partitionable
// (= materialized), partitionable_materialized, custom_call, cu_threefry2x32, fused,
// partitionable_fused.
std::optional<Lowering> ParseLowering(std::string_view name);
// The counter scheme a lowering's bits follow.
bool IsReplicatedScheme(Lowering lowering);

struct Site {
  std::string name;            // for reports, e.g. "dropout_0"
  std::vector<int64_t> shape;  // global shape of the random bits, e.g. [B, S, D]
  int64_t shards = 1;          // ways dimension 0 is split
  int64_t shard_index = 0;     // the device whose shard runs
  Pair32 key{0, 0};
  float keep_prob = 0.9f;
};

struct SiteSizes {
  int64_t global_elements = 0;  // n
  int64_t local_elements = 0;   // n / shards
  int64_t shard_offset = 0;     // shard_index * local_elements
  int64_t padded_words = 0;     // n + (n odd)
  std::vector<int64_t> local_shape;
};

// Sizes of a site, or nullopt with a message a user can act on.
std::optional<SiteSizes> ComputeSizes(const Site& site, std::string& error);

// Why a lowering cannot run this site (replicated mode past JAX's one-block path), or empty.
std::string LoweringLimitError(Lowering lowering, const SiteSizes& sizes);

ElementParams MakeElementParams(const Site& site, const SiteSizes& sizes);

// Bytes the lowering materializes on one device beyond its input and output activations (the
// prediction); see README.md for the per-lowering formula.
int64_t PredictedBytes(Lowering lowering, const SiteSizes& sizes);
// Bytes its kernels read and write (x, y, mask and every intermediate), for bandwidth figures.
int64_t TrafficBytes(Lowering lowering, const SiteSizes& sizes);
// Threefry2x32 hashes its kernels compute.
int64_t HashCount(Lowering lowering, const SiteSizes& sizes);

// The buffers a lowering allocates, by role; a backend maps each role to memory.
enum class BufferRole {
  kCounters,
  kWords,
  kCounterHi,
  kCounterLo,
  kKey0,
  kKey1,
  kHash0,
  kHash1,
  kMask
};
std::string_view BufferRoleName(BufferRole role);

struct BufferSpec {
  BufferRole role;
  int64_t count = 0;
  int element_bytes = 4;
  int64_t Bytes() const { return count * element_bytes; }
};

// The stages, in order; each runs its lowering_ops.h function over `count` indices.
enum class StageKind {
  kIotaReplicated,    // IotaReplicatedAt over padded_words
  kHashReplicated,    // HashReplicatedAt over padded_words / 2
  kIota2x32,          // Iota2x32At over local_elements
  kBroadcastKey,      // BroadcastKeyAt over local_elements
  kHash,              // HashAt over local_elements
  kHashKeyOperands,   // HashKeyOperandsAt over local_elements
  kDropoutFromWords,  // DropoutFromWordsAt over local_elements
  kDropoutFromPair,   // DropoutFromPairAt over local_elements
  kDropoutFused,      // FusedDropoutAt over local_elements
};
std::string_view StageName(StageKind kind);

struct StageSpec {
  StageKind kind;
  int64_t count = 0;
};

struct LoweringPlan {
  Lowering lowering = Lowering::kFused;
  Site site;
  SiteSizes sizes;
  ElementParams params{};
  std::vector<BufferSpec> buffers;
  std::vector<StageSpec> stages;
  int64_t PlannedBytes() const;
};

LoweringPlan MakePlan(Lowering lowering, const Site& site, const SiteSizes& sizes);

}  // namespace spmdsim::validate
