#include "cuda_validate/site.h"

#include "ir/checked_math.h"
#include "passes/rng/threefry.h"

namespace spmdsim::validate {

std::string_view LoweringName(Lowering lowering) {
  switch (lowering) {
    case Lowering::kReplicated:
      return "replicated";
    case Lowering::kPartitionableMaterialized:
      return "partitionable_materialized";
    case Lowering::kCustomCall:
      return "custom_call";
    case Lowering::kFused:
      return "fused";
  }
  return "?";
}

std::optional<Lowering> ParseLowering(std::string_view name) {
  if (name == "replicated") return Lowering::kReplicated;
  if (name == "partitionable" || name == "partitionable_materialized") {
    return Lowering::kPartitionableMaterialized;
  }
  if (name == "custom_call" || name == "cu_threefry2x32") return Lowering::kCustomCall;
  if (name == "fused" || name == "partitionable_fused") return Lowering::kFused;
  return std::nullopt;
}

bool IsReplicatedScheme(Lowering lowering) { return lowering == Lowering::kReplicated; }

std::optional<SiteSizes> ComputeSizes(const Site& site, std::string& error) {
  if (site.shape.empty()) {
    error = "site shape must have at least one dimension (it is sharded along dimension 0)";
    return std::nullopt;
  }
  const std::optional<int64_t> n = passes::ElementCount(site.shape);
  if (!n || *n == 0) {
    error = "site shape must have positive dimensions whose product fits in int64";
    return std::nullopt;
  }
  if (site.shards < 1 || site.shape[0] % site.shards != 0) {
    error = "dimension 0 (" + std::to_string(site.shape[0]) + ") must split evenly into " +
            std::to_string(site.shards) + " shards";
    return std::nullopt;
  }
  if (site.shard_index < 0 || site.shard_index >= site.shards) {
    error = "shard index " + std::to_string(site.shard_index) + " is not in [0, " +
            std::to_string(site.shards) + ")";
    return std::nullopt;
  }
  if (!(site.keep_prob > 0.0f && site.keep_prob <= 1.0f)) {
    error = "keep probability must be in (0, 1]";
    return std::nullopt;
  }
  SiteSizes sizes;
  sizes.global_elements = *n;
  sizes.local_elements = *n / site.shards;
  sizes.shard_offset = site.shard_index * sizes.local_elements;
  sizes.padded_words = *n + (*n % 2);
  sizes.local_shape = site.shape;
  sizes.local_shape[0] /= site.shards;
  // The largest figure below is 57 bytes per local element (custom-call traffic) and 12 per
  // padded global word (replicated traffic); refuse sizes whose byte counts could overflow.
  if (!ir::CheckedMul(sizes.local_elements, 64) || !ir::CheckedMul(sizes.padded_words, 16)) {
    error = "site is too large to count its bytes in int64";
    return std::nullopt;
  }
  return sizes;
}

std::string LoweringLimitError(Lowering lowering, const SiteSizes& sizes) {
  if (IsReplicatedScheme(lowering) && sizes.padded_words > passes::kMaxReplicatedWords) {
    return "replicated mode hashes " + std::to_string(sizes.padded_words) +
           " counter words; past 2^32 - 2 JAX switches to split blocks, which is not modelled";
  }
  return "";
}

ElementParams MakeElementParams(const Site& site, const SiteSizes& sizes) {
  ElementParams p{};
  p.key = site.key;
  p.global_elements = static_cast<uint64_t>(sizes.global_elements);
  p.padded_words = static_cast<uint64_t>(sizes.padded_words);
  p.shard_offset = static_cast<uint64_t>(sizes.shard_offset);
  p.local_elements = static_cast<uint64_t>(sizes.local_elements);
  p.keep_prob = site.keep_prob;
  return p;
}

int64_t PredictedBytes(Lowering lowering, const SiteSizes& s) {
  const int64_t nl = s.local_elements;
  switch (lowering) {
    case Lowering::kReplicated:  // global counters + global hash output + mask
      return 4 * s.padded_words + 4 * s.padded_words + nl;
    case Lowering::kPartitionableMaterialized:  // 2 counter arrays + 2 hash outputs + mask
      return (4 + 4 + 4 + 4 + 1) * nl;
    case Lowering::kCustomCall:  // 2 broadcast keys + 2 counters + 2 hash outputs + mask
      return (4 + 4 + 4 + 4 + 4 + 4 + 1) * nl;
    case Lowering::kFused:  // mask only
      return nl;
  }
  return 0;
}

int64_t TrafficBytes(Lowering lowering, const SiteSizes& s) {
  const int64_t nl = s.local_elements;
  const int64_t w = s.padded_words;
  // Every lowering ends in a dropout pass reading x (4) and writing y (4) and the mask (1).
  const int64_t dropout_io = 9 * nl;
  switch (lowering) {
    case Lowering::kReplicated:  // iota writes 4w; hash reads 4w, writes 4w; dropout reads 4 nl
      return 12 * w + 4 * nl + dropout_io;
    case Lowering::kPartitionableMaterialized:  // iota 8; hash 8 + 8; dropout reads 8
      return 32 * nl + dropout_io;
    case Lowering::kCustomCall:  // broadcast 8; iota 8; hash 16 + 8; dropout reads 8
      return 48 * nl + dropout_io;
    case Lowering::kFused:
      return dropout_io;
  }
  return 0;
}

int64_t HashCount(Lowering lowering, const SiteSizes& s) {
  return lowering == Lowering::kReplicated ? s.padded_words / 2 : s.local_elements;
}

std::string_view BufferRoleName(BufferRole role) {
  switch (role) {
    case BufferRole::kCounters:
      return "counters";
    case BufferRole::kWords:
      return "words";
    case BufferRole::kCounterHi:
      return "counter_hi";
    case BufferRole::kCounterLo:
      return "counter_lo";
    case BufferRole::kKey0:
      return "key0";
    case BufferRole::kKey1:
      return "key1";
    case BufferRole::kHash0:
      return "hash0";
    case BufferRole::kHash1:
      return "hash1";
    case BufferRole::kMask:
      return "mask";
  }
  return "?";
}

std::string_view StageName(StageKind kind) {
  switch (kind) {
    case StageKind::kIotaReplicated:
      return "iota_replicated";
    case StageKind::kHashReplicated:
      return "hash_replicated";
    case StageKind::kIota2x32:
      return "iota_2x32";
    case StageKind::kBroadcastKey:
      return "broadcast_key";
    case StageKind::kHash:
      return "hash";
    case StageKind::kHashKeyOperands:
      return "hash_key_operands";
    case StageKind::kDropoutFromWords:
      return "dropout_from_words";
    case StageKind::kDropoutFromPair:
      return "dropout_from_pair";
    case StageKind::kDropoutFused:
      return "dropout_fused";
  }
  return "?";
}

int64_t LoweringPlan::PlannedBytes() const {
  int64_t total = 0;
  for (const BufferSpec& buffer : buffers) total += buffer.Bytes();
  return total;
}

LoweringPlan MakePlan(Lowering lowering, const Site& site, const SiteSizes& sizes) {
  LoweringPlan plan;
  plan.lowering = lowering;
  plan.site = site;
  plan.sizes = sizes;
  plan.params = MakeElementParams(site, sizes);
  const int64_t nl = sizes.local_elements;
  const int64_t w = sizes.padded_words;
  const auto u32 = [&](BufferRole role, int64_t count) {
    plan.buffers.push_back(BufferSpec{role, count, 4});
  };
  switch (lowering) {
    case Lowering::kReplicated:
      u32(BufferRole::kCounters, w);
      u32(BufferRole::kWords, w);
      plan.stages = {{StageKind::kIotaReplicated, w},
                     {StageKind::kHashReplicated, w / 2},
                     {StageKind::kDropoutFromWords, nl}};
      break;
    case Lowering::kPartitionableMaterialized:
      u32(BufferRole::kCounterHi, nl);
      u32(BufferRole::kCounterLo, nl);
      u32(BufferRole::kHash0, nl);
      u32(BufferRole::kHash1, nl);
      plan.stages = {
          {StageKind::kIota2x32, nl}, {StageKind::kHash, nl}, {StageKind::kDropoutFromPair, nl}};
      break;
    case Lowering::kCustomCall:
      u32(BufferRole::kKey0, nl);
      u32(BufferRole::kKey1, nl);
      u32(BufferRole::kCounterHi, nl);
      u32(BufferRole::kCounterLo, nl);
      u32(BufferRole::kHash0, nl);
      u32(BufferRole::kHash1, nl);
      plan.stages = {{StageKind::kBroadcastKey, nl},
                     {StageKind::kIota2x32, nl},
                     {StageKind::kHashKeyOperands, nl},
                     {StageKind::kDropoutFromPair, nl}};
      break;
    case Lowering::kFused:
      plan.stages = {{StageKind::kDropoutFused, nl}};
      break;
  }
  plan.buffers.push_back(BufferSpec{BufferRole::kMask, nl, 1});
  return plan;
}

}  // namespace spmdsim::validate
