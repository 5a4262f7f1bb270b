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

// Pairs of counters each device hashes: m = ceil(n/2)/H.
int64_t PairsPerDevice(const RngGeometry& g) {
  const int64_t nl = g.local_elements > 0 ? g.local_elements : 0;
  const int64_t n = g.global_elements > nl ? g.global_elements : nl;
  return CeilDiv(CeilDiv(n, 2), HashShards(g));
}

// XLA:TPU's default tile of an array's minor two dimensions: 8 rows (sublanes) of 128 lanes.
constexpr int64_t kTpuTileRows = 8;
constexpr int64_t kTpuTileLanes = 128;

// Bytes XLA:TPU allocates for an array of `type` and `dims` in its default tiled layout (the
// minor two dimensions in (8, 128) tiles; pred packed 4 to a word), as its dumps give the
// relayouts of the exchange (u32[2,4,8,64]{3,2,0,1:T(8,128)}, pred[4,4,8,64]{...:T(8,128)(4,1)}).
int64_t TpuTiledBytes(const char* type, const std::vector<int64_t>& dims) {
  std::string text = std::string(type) + "[";
  std::string layout = "{";
  for (size_t d = 0; d < dims.size(); ++d) {
    text += (d > 0 ? "," : "") + std::to_string(dims[d]);
    layout += (d > 0 ? "," : "") + std::to_string(dims.size() - 1 - d);
  }
  const bool pred = std::string(type) == "pred";
  const std::string tile =
      ":T(" + std::to_string(kTpuTileRows) + "," + std::to_string(kTpuTileLanes) + ")";
  text += "]" + layout + (dims.size() >= 2 ? tile : ":T(1024)") +
          (pred && dims.size() >= 2 ? "(4,1)" : "") + "}";
  const std::optional<ir::Shape> shape = ir::ParseShape(text);
  return shape ? PlatformProfile::For(Platform::kTpu).BufferBytes(*shape) : 0;
}

// XLA:TPU's replicated exchange, per site: see the header comment.
int64_t TpuExchangeBytes(const RngGeometry& g, int64_t word) {
  const int64_t h = HashShards(g);
  const int64_t m = PairsPerDevice(g);
  const std::vector<int64_t>& shape = g.local_shape;
  // A half's piece, its second dimension split for the all-to-all: [b/2, H, S/H, ...].
  std::vector<int64_t> piece{shape[0] / 2, h, shape[1] / h};
  // The halves concatenated with the second dimension split: [H b, S/H, ...].
  std::vector<int64_t> joined{h * shape[0], shape[1] / h};
  for (size_t d = 2; d < shape.size(); ++d) {
    piece.push_back(shape[d]);
    joined.push_back(shape[d]);
  }
  int64_t bytes = SaturatingMul(2 * word, m);                                   // the hash outputs
  bytes = SaturatingAdd(bytes, SaturatingMul(4, TpuTiledBytes("u32", piece)));  // relayouts
  bytes = SaturatingAdd(bytes, SaturatingMul(4 * word, m));  // all-to-alls and their reduces
  bytes = SaturatingAdd(bytes, TpuTiledBytes("u32", joined));
  bytes = SaturatingAdd(bytes, SaturatingMul(2 * word, g.local_elements));  // back to rows
  // The mask, relaid out as [b, H, S/H, ...] with H major; it reaches its readers through a
  // row-major copy of as many bytes unless its pieces are one tile high (S/H = kTpuTileRows): 17
  // deviceless compiles, tools/research/tpu_mask_copy/.
  const int64_t mask = TpuTiledBytes("pred", shape);
  const bool mask_copied = shape.size() >= 3 && shape[1] / h != kTpuTileRows;
  bytes = SaturatingAdd(bytes, SaturatingMul(mask_copied ? 2 : 1, mask));
  return SaturatingAdd(bytes, TpuPartitionableKeyBytes());
}

// XLA:TPU's row reshard (r = 1 or 2 local rows), per site: see the header comment. `row` is one
// local row [1, S, ...] of m elements.
int64_t TpuRowReshardBytes(const RngGeometry& g, int64_t word, int64_t rows) {
  std::vector<int64_t> row = g.local_shape;
  row[0] = 1;
  const int64_t m = g.local_elements / rows;
  int64_t bytes = SaturatingMul(rows == 1 ? 12 : 9, TpuTiledBytes("u32", row));
  // The flat hash outputs u32[m]{T(1024)}, a bitcast of the tiled row where its minor dimension
  // is one 128-lane tile wide over whole 8-row tiles ([1,16,128]: folded).
  const bool flat_row = row.back() == kTpuTileLanes && row[row.size() - 2] % kTpuTileRows == 0;
  if (!flat_row) bytes = SaturatingAdd(bytes, SaturatingMul(2 * word, m));
  // No mask: the compare is fused into the rows' consumers.
  return SaturatingAdd(bytes, TpuPartitionableKeyBytes());
}

}  // namespace

int64_t TpuRowReshardRows(const RngGeometry& g) {
  const std::vector<int64_t>& shape = g.local_shape;
  const int64_t devices = g.devices > 0 ? g.devices : 1;
  if (!g.tpu_exchange || g.hash_call || shape.size() < 2 || (shape[0] != 1 && shape[0] != 2)) {
    return 0;
  }
  // Split over the devices (8, 16 and 32 checked by the deviceless compiles) on the leading
  // dimension alone, B = r P global rows: H = min(P, B/2) = P/2 (r = 1) or P (r = 2) hashing
  // devices, each one local row of each half. (HashShards is P unless the counters said less.)
  if (devices < 8 || devices % 2 != 0 || HashShards(g) != devices || g.local_elements <= 0 ||
      g.global_elements != SaturatingMul(devices, g.local_elements)) {
    return 0;
  }
  return shape[0];
}

int64_t CounterPermuteWords(const RngGeometry& g) {
  // Unsplit (a module before partitioning) the what-if keeps the pieces a split over 4 or more
  // devices would permute in; nothing is sent then (the wire is for H > 1 only).
  return SaturatingMul(HashShards(g) == 2 ? 2 : 5, PairsPerDevice(g));
}

bool TpuExchangeApplies(const RngGeometry& g) {
  const std::vector<int64_t>& shape = g.local_shape;
  const int64_t h = HashShards(g);
  const int64_t devices = g.devices > 0 ? g.devices : 1;
  // A half's piece of a single row is one row of the output: XLA:TPU moves such rows by
  // collective-permutes and selects instead (16 devices, 1 or 2 rows each), not modelled.
  return g.tpu_exchange && h > 1 && h == devices && shape.size() >= 2 && shape[0] % 2 == 0 &&
         shape[0] / 2 >= 2 && shape[1] % h == 0 && !g.hash_call;
}

int64_t TpuReplicatedSharedBytes(const RngGeometry& g) {
  const int64_t word = g.word_bytes > 0 ? g.word_bytes : 4;
  // Row reshard: the iota's piece of two rows and its permuted copy, seven one-row pieces.
  if (const int64_t rows = TpuRowReshardRows(g); rows > 0) {
    return SaturatingMul(11 * word, g.local_elements / rows);
  }
  if (!TpuExchangeApplies(g)) return 0;
  return SaturatingMul(word,
                       SaturatingAdd(SaturatingMul(4, PairsPerDevice(g)), CounterPermuteWords(g)));
}

int64_t TpuReplicatedSharedWireBytes(const RngGeometry& g) {
  // Row reshard: a permute of the two-row iota piece and three of one row.
  if (const int64_t rows = TpuRowReshardRows(g); rows > 0) {
    return SaturatingMul(5 * (g.word_bytes > 0 ? g.word_bytes : 4), g.local_elements / rows);
  }
  if (!TpuExchangeApplies(g)) return 0;
  return SaturatingMul(g.word_bytes > 0 ? g.word_bytes : 4, CounterPermuteWords(g));
}

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
  // all-gathers and concatenation 8n; loop state and copies 16m; exchanged counter pieces
  // (CounterPermuteWords: 20m). Unrolled: no loop state, the hash outputs 8m; the consumers fuse
  // the concatenation.
  // The older partitioner's zero buffer and all-reduce output replace the gathered halves and
  // the concatenation, which every consumer then reads.
  const bool all_reduce = g.concat == ConcatLowering::kAllReduce;
  int64_t replicated =
      SaturatingMul(all_reduce || (g.consumers > 1 && !g.unrolled) ? 2 : 1, global_words);
  replicated = SaturatingAdd(replicated, SaturatingMul(g.unrolled ? 2 : 4, pair_words));
  replicated = SaturatingAdd(replicated, SaturatingMul(word, CounterPermuteWords(g)));
  // Hoisted out of the site's loop, the device's counter pieces are the loop's state.
  if (g.counters_hoisted) replicated = SaturatingAdd(replicated, SaturatingMul(2, pair_words));
  out.replicated.memory_bytes = replicated;
  if (hashers > 1) {
    const int64_t gathered = SaturatingMul(word, half);  // B of one all-gather
    const int64_t ring = SaturatingMul(gathered, hashers - 1) / hashers;
    out.replicated.counter_wire_bytes = SaturatingMul(word, CounterPermuteWords(g));
    out.replicated.wire_bytes_per_device =
        SaturatingAdd(SaturatingMul(2, ring), out.replicated.counter_wire_bytes);
    if (all_reduce) {
      // One all-reduce of the whole concatenation: each device sends 2 (H-1)/H of it.
      const int64_t reduced = SaturatingMul(SaturatingMul(2, global_words), hashers - 1) / hashers;
      out.replicated.wire_bytes_per_device =
          SaturatingAdd(reduced, out.replicated.counter_wire_bytes);
    }
  }

  // Drawn whole on each device of a partitioned module: nothing to exchange, the consumers
  // read the hash outputs.
  if (g.unsplit_on_devices && g.unrolled && !g.hash_call) {
    out.replicated.memory_bytes = SaturatingMul(2, pair_words);
    // XLA:TPU lays each output out as half the tensor's rows, tiled ([b/2, S, ...]).
    if (g.tpu_exchange && g.local_shape.size() >= 2 && g.local_shape[0] % 2 == 0) {
      std::vector<int64_t> half_rows = g.local_shape;
      half_rows[0] /= 2;
      out.replicated.memory_bytes = SaturatingMul(2, TpuTiledBytes("u32", half_rows));
    }
    out.replicated.wire_bytes_per_device = 0;
    out.replicated.counter_wire_bytes = 0;
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
  // XLA:TPU: the halves' pieces are exchanged by all-to-alls, once to split the second
  // dimension and once back; the counter pieces and their permutes are the computation's
  // (TpuReplicatedSharedBytes).
  if (g.unrolled && TpuExchangeApplies(g)) {
    out.replicated.memory_bytes = TpuExchangeBytes(g, word);
    const int64_t exchanged = SaturatingAdd(SaturatingMul(2, pair_words), local_words);
    out.replicated.wire_bytes_per_device = SaturatingMul(exchanged, hashers - 1) / hashers;
    out.replicated.counter_wire_bytes = 0;
  }
  // XLA:TPU, one or two rows per device: the hashed rows are moved by collective-permutes of one
  // row each (key-dependent: not counters); the counter pieces are the computation's.
  if (const int64_t rows = g.unrolled ? TpuRowReshardRows(g) : 0; rows > 0) {
    out.replicated.memory_bytes = TpuRowReshardBytes(g, word, rows);
    out.replicated.wire_bytes_per_device =
        SaturatingMul(SaturatingMul(rows == 1 ? 5 : 4, word), g.local_elements / rows);
    out.replicated.counter_wire_bytes = 0;
  }
  // rbg: the generator sharded (each device its piece) or replicated (the global bits on every
  // device), as XLA's sharding propagation decides (the header comment).
  out.rbg.memory_bytes = SaturatingMul(word, g.local_elements);
  out.rbg.bounded = global_words > out.rbg.memory_bytes;
  out.rbg.memory_high_bytes = global_words;
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

// The same for a pred vector, packed as the TPU dumps give it (pred[32]{0:T(512)(128)(4,1)}).
int64_t TpuPredBytes(int64_t elements) {
  const std::optional<ir::Shape> shape =
      ir::ParseShape("pred[" + std::to_string(elements) + "]{0:T(512)(128)(4,1)}");
  return shape ? PlatformProfile::For(Platform::kTpu).BufferBytes(*shape) : 0;
}

// XLA:TPU's u32 emulation of one u64 multiply of a scalar by a constant, in 16-bit halves
// (testdata/dumps/jax012_tpu16_flax_dp_partitionable_remat, iota_2x32_shape.926 to .938): the
// low half's and, product and shift; the high half's shift and product; their sum; its and and
// two shifts and the sum that make the high word; its shift-left, the low product's and, and
// the or that make the low word.
constexpr int64_t kTpuU64MultiplyScalars = 13;

}  // namespace

int64_t TpuPartitionableKeyBytes() { return SaturatingMul(2, TpuU32Bytes(0)); }

int64_t TpuPartitionableCounterBytes(const std::vector<int64_t>& local_shape) {
  if (local_shape.size() < 2) return 0;
  if (local_shape[0] == 1) {
    // A leading dimension of local extent 1: the device's offset is the partition id converted
    // twice (the multiply by the extent folds away), and its iota, of one element, folds into
    // that scalar, so the multiply by the dimension's row-major stride, a u64 one, runs on the
    // scalar unit, unfused, in XLA:TPU's u32 emulation (kTpuU64MultiplyScalars). Adding that
    // u64 offset to the next dimension's counters carries: that dimension keeps its lo words,
    // the carry flags (lo < offset's lo) and the hi words without and with the carry, where a
    // leading extent above 1 keeps hi and lo of the leading dimension and of the next
    // (jax012_tpu16_{flax_dp,fsdp}_partitionable_remat: convert.37, convert.38, the 13
    // iota_2x32_shape scalars, fusion.715, broadcast_compare_fusion, add_add_fusion.9 and
    // broadcast_add_fusion.1 of u32[32] and pred[32]; 512 B each). The further dimensions but
    // the minor-most keep hi and lo.
    int64_t bytes = SaturatingMul(2 + kTpuU64MultiplyScalars, TpuU32Bytes(0));
    if (local_shape.size() >= 3) {
      bytes = SaturatingAdd(bytes, SaturatingMul(3, TpuU32Bytes(local_shape[1])));
      bytes = SaturatingAdd(bytes, TpuPredBytes(local_shape[1]));
    }
    for (size_t d = 2; d + 1 < local_shape.size(); ++d) {
      bytes = SaturatingAdd(bytes, SaturatingMul(2, TpuU32Bytes(local_shape[d])));
    }
    return bytes;
  }
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
  // XLA:TPU's exchange keeps them per computation (TpuReplicatedSharedBytes).
  if (g.unrolled && (TpuExchangeApplies(g) || TpuRowReshardRows(g) > 0)) return 0;
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

RngBoundsBasis BoundsBasisOf(const char* mode) {
  if (std::strcmp(mode, "rbg") == 0) {
    return {"rng-bit-generator sharded like its tensor: each device generates its piece",
            "rng-bit-generator replicated: every device generates the whole array",
            "XLA's sharding propagation for the generator's output"};
  }
  return {};
}

const RngCost* CostOf(const RngWhatIf& whatif, const char* mode) {
  if (std::strcmp(mode, "replicated") == 0) return &whatif.replicated;
  if (std::strcmp(mode, "partitionable") == 0) return &whatif.partitionable;
  if (std::strcmp(mode, "rbg") == 0) return &whatif.rbg;
  if (std::strcmp(mode, "fused") == 0) return &whatif.fused;
  return nullptr;
}

}  // namespace spmdsim::passes
