// What one random-bits site would cost each device under each way of generating its bits: the
// buffers it materializes and the bytes each device sends, as closed formulas of the site's
// geometry (local and global element counts, the devices the tensor is split over).
//
// Each formula counts the buffers one lowering materializes, by role, checked against XLA's dumps
// of the same program in both threefry modes (testdata/; tools/rng_flip_table.py prints every
// pair, rng_site_analysis_test.cc asserts the XLA:CPU ones within 10 %), with u32 bits (an f32
// dropout). Where the platform fuses (rng_site_analysis.cc): an unrolled partitionable hash
// fused into its consumers keeps only the dropout masks XLA:GPU keeps in buffers of their own
// (in a replicated dump: the site's masks, and those a consumer computing only the mask outputs),
// and on XLA:GPU rng-bit-generator becomes Philox fused the same way. With nl local elements, n
// global, P shards, words of 4 bytes, and m = ceil(n/2)/H counter pairs hashed per device, where
// H is the number of pieces XLA's partitioner splits replicated mode's flat counters into: the
// reshape from the flat bits to the tensor keeps the tiles of its major dimensions only up to
// the first one whose shard is longer than 1 (rng_hash_shards.cc), so H = P for a tensor split
// on its leading dimension alone, and H < P where a minor dimension is split too (Megatron
// sequence parallelism's [16,32,64] on a 4x2 mesh: H = 4 of P = 8; each hash piece is then
// computed by P/H devices and the all-gathers run in groups of H):
//
//   partitionable  2 counter arrays, hashed in place by the rolled loop, plus the loop's copies of
//                  its state: 4 x 4nl.                                        No collectives.
//   replicated     each device hashes m pairs (loop state and copies 4 x 4m, the counter pieces
//                  received by collective-permutes, CounterPermuteWords: 5 x 4m; 2 x 4m for
//                  H = 2), all-gathers both hash outputs
//                  (2 x 4n/2) and, when more than one instruction reads the bits, concatenates
//                  them (4n; a single consumer gets the concatenation fused, as every XLA:CPU
//                  replicated dump of the corpus shows; the readers counted are those of the
//                  bits, not another site's key derivation or counters, which read only a value
//                  the sites share, such as the partition id): 4n [+ 4n] + 36m,
//                  plus SharedReplicatedCounterBytes once per module and geometry.
//                  Wire: two all-gathers 2 x (H-1)/H x 4n/2, permutes 5 x 4m: each device
//                  holds 2m of the iota and needs m of each slice from another device's
//                  piece; each piece feeds two devices per slice, and the source-target pairs,
//                  grouped into permutations, make one permute of whole 2m pieces and three
//                  of m (H = 4 and 8 alike, read off the dumps). With H = 2 a device needs
//                  one m from the other device per slice: two permutes of m, 2 x 4m
//                  (testdata/dumps/jax012_tpu4_megatron_replicated_remat). In a loop
//                  (a scanned layer, gradient accumulation) the gathers run every iteration;
//                  the permutes move counters only, and XLA:CPU hoists them out of the loop
//                  (PerStepCost). Hoisted, the device's two counter pieces reach the loop as
//                  its state: + 2 x 4m per site.
//   hoisted        partitionable in such a loop: the counter arrays are built once in the
//                  caller for all sites of a geometry (SharedPartitionableCounterBytes).
//   replicated, concatenated by all-reduce (ConcatLowering::kAllReduce, the older partitioner;
//                  not XLA:TPU's exchanges nor the hash call, which keep their own lowerings):
//                  instead of the gathered halves and their concatenation, the zero buffer the
//                  pieces are written into in place (4n) and the all-reduce's output (4n), which
//                  every consumer reads: 8n + 36m (rolled; unrolled 8n + 28m), plus the shared
//                  counter pieces as above. Wire: the all-reduce, 2 x (H-1)/H x 4n, and the
//                  permutes 5 x 4m. Read off XLA:CPU (jax04_cpu8_plain_dp_replicated_remat);
//                  the same partitioner code runs on every platform, but no GPU dump of that
//                  XLA is in the corpus to show which buffers XLA:GPU keeps.
//   replicated, unrolled (JAX's GPU/TPU lowering, threefry-expanded): no loop, so no loop
//                  state or copies; each device's hash outputs (2 x 4m) and the counter pieces
//                  the permutes deliver (5 x 4m) are buffers of their own, the gathered halves
//                  (4n) are read by the consumers, which fuse the concatenation:
//                  4n + 28m. Wire as above. This is XLA:GPU's lowering (all-gathers of the
//                  halves, checked against every GPU pair of the corpus).
//   replicated, unsplit on a partitioned module (pmap, shard_map, a replicated tensor;
//                  threefry-expanded): no permutes, no gathers: the hash outputs 2 x 4m = 4n.
//   replicated on XLA:TPU (threefry-expanded; read off the corpus' TPU dumps, libtpu being
//                  closed source; TpuExchangeApplies): for a tensor [b, S, ...] per device,
//                  split on its leading dimension alone over H = P devices with b/2 >= 2 rows
//                  of each half per device and S divisible by H, the concatenation of the
//                  halves along the rows is resharded instead of gathered: each half's piece
//                  [b/2, S, ...] is relaid out as [b/2, H, S/H, ...] (a reshape and a copy,
//                  both tiled), sent by an all-to-all that splits S (with its reduce: 2 x 4m),
//                  the two halves are concatenated locally as [H b, S/H, ...] (tiled), and
//                  a second all-to-all (with its reduce: 2 x 4nl) returns the rows. Per site:
//                  the hash outputs 2 x 4m, 4 relayouts, 4 x 4m, the concatenation, 2 x 4nl,
//                  the dropout's mask pred[b, S, ...] and the key schedule's two scalars, the
//                  tiled buffers in whole (8, 128) tiles (PlatformProfile::BufferBytes).
//                  Wire (H-1)/H x 4 (2m + nl). XLA:TPU CSEs the counters between the sites of
//                  a computation: once per computation and geometry, the iota's piece and
//                  its slices (4 x 4m) and the permuted pieces (CounterPermuteWords), whose
//                  bytes are sent every time the computation runs. A half's piece of one
//                  row (1 or 2 rows per device) is moved by permutes instead (below). The
//                  mask is made relaid out, [b, H, S/H, ...] with H major; XLA:TPU then hands
//                  it to its readers through a row-major copy of as many bytes, except where
//                  the pieces are one 8-row tile high (S/H = 8): 17 deviceless compiles of a
//                  checkpointed dropout on 4 and 8 devices and a 2x2 mesh, whatever feeds or
//                  reads it (tools/research/tpu_mask_copy/; copy.255 of fusion.96 in every site
//                  of jax012_tpu4_megatron_replicated_remat, S/H = 16). Not modelled: the pieces'
//                  own tile height where S/H is 4 or 32 or more (T(4,128), T(32,128)), and the
//                  third [b, S, ...] mask seen at S/H = 32.
//   replicated on XLA:TPU, 1 or 2 rows per device (TpuRowReshardRows; read off deviceless
//                  libtpu 0.0.50.1 compiles with jax 0.12.0.1 at 8, 16 and 32 devices:
//                  tools/research/tpu_reshard/, whose programs are jax.checkpoint'ed dropouts
//                  under jax.grad as every TPU cell of the corpus is): the halves are hashed as
//                  rows of the tensor, so the flat hash is split H = min(P, B/2) ways for B
//                  global rows split over the P devices alone (a sub-axis of the data axis:
//                  P/2 for one row per device, each piece hashed on 2 devices; P for two), and
//                  every hashing device hashes one row of each half, m = the elements of one
//                  local row [1, S, ...]. The reshape of each hashed half to the rows is done by
//                  collective-permutes of whole rows and selects: per site 5 permutes of a row
//                  and 12 tiled rows [1, S, ...] materialized for r = 1 local row, 4 permutes
//                  and 9 rows for r = 2 (the counts do not depend on P), plus the two flat hash
//                  outputs u32[m]{T(1024)} (2 x 4m; they fold into the rows where a tiled row
//                  is a bitcast of the flat layout: a minor dimension of 128 over a multiple of
//                  8, seen for [1,16,128]) and the key scalars as for the exchange. No mask:
//                  the compare is fused into the rows' consumers as far as the dumps show (no
//                  pred row in the research dumps nor at any site of jax012_tpu16_megatron; 2 of
//                  8 sites of jax012_tpu16_flax_dp keep one, 4 KiB, which the what-if leaves
//                  out). Wire: the permutes' bytes as spmdsim counts XLA's (a collective-permute
//                  at its operand's bytes, whatever its pairs: collective_analysis.cc), 5 x 4m
//                  (r = 1) or 4 x 4m (r = 2) per site (a device itself sends at most 3 rows,
//                  (5/2 - 4/P) on average, for r = 1; at most 2, (2 - 2/P) on average, for
//                  r = 2). Once per computation and geometry: the iota's piece (2m) and its
//                  permuted copy (2m), seven one-row counter pieces: 11 x 4m, and 4 permutes
//                  (one of 2m, three of m: 5 x 4m counted, as CounterPermuteWords).
//                  jax012_tpu16_{flax_dp,fsdp}: 44 permutes for 8 sites of u32[1,32,64];
//                  jax012_tpu16_megatron (8x2, rows on the data axis): 4 per site and 9 rows.
//                  Assumed: the remat lowering (the threefry call survives to the SPMD
//                  partitioner); a plain forward program without jax.checkpoint is rewritten into
//                  tensor-shaped iotas before partitioning (2 permutes of a row per site, no flat
//                  pieces), not modelled. Assumed as for the exchange: the tensor is split on its
//                  leading dimension alone (B = r P; XLA:TPU's partitionable counters, u32 vectors
//                  without u64 strides, do not tell rng_hash_shards.cc the split). Not checked:
//                  fewer than 8 devices, r = 3, a leading dimension split over two mesh axes.
//   partitionable on XLA:TPU (threefry-expanded; libtpu is closed source, so this is read off
//                  the corpus' TPU dumps): the hash is fused into its consumers, but not the
//                  key schedule's k0 ^ k1 ^ 0x1BD11BDA (two u32 scalars per site), nor, once per
//                  computation and local shape (CSE'd between its sites), the counters of JAX's
//                  iota_2x32_shape (jax/_src/prng.py: one u64 iota per dimension times the
//                  dimension's row-major stride, summed), which XLA:TPU, without 64-bit
//                  integers, keeps as hi and lo u32 vectors along each dimension but the
//                  minor-most (that one the hash's fusion computes itself), plus the device's
//                  offset along its shard (partition id converted, times the shard's extent,
//                  converted: 3 scalars). Each buffer is whole 512-byte TPU units
//                  (PlatformProfile::BufferBytes). A leading dimension of local extent 1
//                  folds into the offset, a scalar: its u64 multiply by the dimension's stride
//                  runs unfused in XLA:TPU's u32 emulation (13 scalars, besides the partition
//                  id's 2 converts), and adding it to the next dimension's counters carries
//                  (that dimension's lo words, carry flags, and hi words without and with the
//                  carry: 4 vectors; TpuPartitionableCounterBytes).
//   hash call      cu_threefry2x32 is not partitioned: every device passes it the global
//                  counters and gets the global outputs. Partitionable: hi and lo counters and
//                  both outputs, 4 x 4n. Replicated: the device's pieces (2 x 4m) all-gathered
//                  into the global halves (4n), handed to the call (4n) and its outputs (4n):
//                  12n + 8m; wire the two all-gathers, no permutes. Both modes share the global
//                  iota once per module and geometry: 2 x 4n.
//   rbg            bounds. rng-bit-generator sharded like the tensor it makes (XLA's SPMD
//                  partitioner then has each shard generate its piece from the state plus the
//                  shard's offset: MaxText's unsafe_rbg on XLA:TPU, u32[4,1,128] of [16,1,128]
//                  per device): 4nl. Replicated (every device generates the whole array and its
//                  consumers slice it: testdata/dumps/dp8_rbg_remat, global batch 16 on 8
//                  devices, makes u32[16,32,64] on each device): 4n. Which one is XLA's sharding
//                  propagation's choice for the generator's output, which a dump of another
//                  mode does not show.
//   fused          counters, hash and consumer in one kernel: nothing materialized (the ideal;
//                  cuda_validate's lowering (d) keeps only the consumer's 1-byte mask).
//
// What one compile's dump does not say about the other's (the flip table's remaining misses,
// testdata/known_gaps.json):
//   - XLA:GPU's priority fusion decides from its cost model whether a layer norm's Triton fusion
//     recomputes the dropout's residual add from the mask (keeping the mask in a buffer) or
//     reads the add's output; the two compiles of one program decide differently in both
//     directions (gpu16 fsdp: the partitionable compile keeps the forward masks, the replicated
//     one reads the add; gpu8 seqpar: the reverse), so the masks kept are not a function of the
//     other dump.
//   - XLA's HloRematerialization, run where a program exceeds the device's memory, recomputes
//     the seed-size kernel program's global counters (loop_convert_fusion.remat..remat11 of
//     jax012_gpu8_seed_flax_dp_partitionable_kernel_remat): how many copies depends on the memory
//     limit and the schedule, not on the replicated dump.
//
// The one model of what each lowering materializes: `spmdsim rng sites` applies it to the sites
// of a dump, `spmdsim oom` (analyzer/model/oom_rng.h) to the random sites of an OOM listing.
//
// The per-element byte formulas of cuda_validate/README.md are the same lowerings on a GPU
// without XLA:CPU's loop copies: (a) replicated 8w + nl, (b) partitionable 16nl + nl.
#pragma once

#include <cstdint>
#include <vector>

#include "passes/memory/platform_profile.h"
#include "passes/rng/rng_site_kinds.h"

namespace spmdsim::passes {

// How XLA's SPMD partitioner lowers a concatenation along a sharded dimension, which replicated
// threefry makes of its two hash outputs. kAllGather: today's XLA (HandleConcatenate replicates
// the dimension: HandleElementwiseWithDimsToReplicate, all-gathers of the operands). kAllReduce:
// the older SpmdPartitioningVisitor::HandleConcatenate, which creates a zero buffer of the whole
// dimension, dynamic-update-slices each device's pieces into it and all-reduces it within the
// devices splitting that dimension (jaxlib 0.4.30's XLA: testdata/dumps/jax04_cpu8_plain_dp).
enum class ConcatLowering { kAllGather, kAllReduce };

struct RngCost {
  int64_t memory_bytes = 0;           // materialized per device
  int64_t wire_bytes_per_device = 0;  // per execution of the site
  // The part of wire_bytes_per_device that moves counters only (replicated mode's
  // collective-permutes of counter pieces): it depends on no key, so it is loop-invariant, and a
  // platform that hoists loop-invariant code out of loops after partitioning sends it once per
  // step however often the site's loop runs (HoistsLoopInvariantCollectives).
  int64_t counter_wire_bytes = 0;
  // The dump does not decide XLA's choice between two lowerings of the mode: memory_bytes is the
  // figure of the cheaper one and memory_high_bytes of the other (RngBoundsBasis names both).
  bool bounded = false;
  int64_t memory_high_bytes = 0;
};

// The memory figure of the dearer lowering: memory_high_bytes where bounded, else memory_bytes.
inline int64_t HighMemoryBytes(const RngCost& cost) {
  return cost.bounded ? cost.memory_high_bytes : cost.memory_bytes;
}

// The two lowerings a bounded what-if of `mode` lies between ("rbg"), each named; empty strings
// for a mode the model always decides.
struct RngBoundsBasis {
  const char* low = "";
  const char* high = "";
  const char* decided_by = "";
};
RngBoundsBasis BoundsBasisOf(const char* mode);

struct RngWhatIf {
  RngCost replicated;
  RngCost partitionable;
  RngCost rbg;
  RngCost fused;
};

struct RngGeometry {
  int64_t local_elements = 0;   // nl: the random tensor on one device
  int64_t global_elements = 0;  // n: over the mesh
  int64_t devices = 1;          // P: devices the tensor is split over (its shards)
  // Replicated mode: the devices its flat hash is split over, where it is fewer than P (the
  // reshape to the flat counters keeps only the tiles of the tensor's major dimensions:
  // rng_hash_shards.cc); 0: P. The hash is replicated on the devices of each group that holds
  // the same flat piece.
  int64_t hash_shards = 0;
  int64_t word_bytes = 4;  // bytes of one random word (u32)
  // Instructions that read the bits: XLA fuses replicated mode's concatenation of the gathered
  // halves into a single consumer, and materializes it for several.
  int64_t consumers = 1;
  // The hash's rounds unrolled into elementwise ops (threefry-expanded) rather than XLA:CPU's
  // rolled loop.
  bool unrolled = false;
  // The hash is the cu_threefry2x32 custom call (jax_threefry_gpu_kernel_lowering), which XLA
  // does not partition: it hashes the global counters on every device.
  bool hash_call = false;
  // The site runs in a loop and the platform hoists its loop-invariant counters (and their
  // exchange) out of it (HoistsLoopInvariantCollectives): what the hash reads crosses into the
  // loop as its state, a buffer of its own.
  bool counters_hoisted = false;
  // XLA:TPU, threefry-expanded: replicated mode's halves are exchanged by all-to-alls between
  // tiled relayouts (see the header comment); local_shape is the device's tensor.
  bool tpu_exchange = false;
  std::vector<int64_t> local_shape;
  // How the SPMD partitioner concatenates the halves along their sharded dimension: today's
  // XLA replicates that dimension (all-gathers); the older one all-reduces a zero buffer each
  // device updates in place (ConcatLowering in the header comment).
  ConcatLowering concat = ConcatLowering::kAllGather;
  // The module is partitioned and the site's tensor is not split (each device draws it whole:
  // under pmap or shard_map, or a replicated tensor): replicated mode exchanges nothing, and an
  // unrolled hash keeps only its two outputs (2 x 4m = 4n), which the consumers read.
  bool unsplit_on_devices = false;
};

// Replicated mode: the counter words XLA's collective-permutes deliver to a device, for the
// sites of one geometry in one computation (XLA CSEs the iota's slices and their exchange
// between them on XLA:TPU; XLA:CPU and XLA:GPU repeat the permutes per site): 2m where the flat
// counters are split 2 ways, 5m from 4 ways up (see the header comment; unsplit, the 5m kept for
// the memory what-if of a module before partitioning).
int64_t CounterPermuteWords(const RngGeometry& geometry);

// XLA:TPU's replicated exchange applies to this geometry (TpuReplicatedExchange in the header
// comment): the tensor is split on its leading dimension alone, in an even number of rows per
// device, and its second dimension divides among the devices.
bool TpuExchangeApplies(const RngGeometry& geometry);
// Its counter pieces, once per computation and geometry: the iota's piece (2m), its two
// slices (m each) and the pieces the permutes deliver (CounterPermuteWords), in bytes; and the
// permutes' bytes on the wire.
int64_t TpuReplicatedSharedBytes(const RngGeometry& geometry);
int64_t TpuReplicatedSharedWireBytes(const RngGeometry& geometry);
// XLA:TPU's replicated row reshard applies (see the header comment): the local rows r (1 or 2)
// of a tensor split over 8 or more devices (on its leading dimension alone, assumed), expanded
// threefry; 0 where it does not apply. TpuReplicatedSharedBytes and TpuReplicatedSharedWireBytes
// give its counter pieces too.
int64_t TpuRowReshardRows(const RngGeometry& geometry);

// Counter pieces XLA:CPU builds once per module for all replicated sites of one geometry (the
// shared iota and its two slices, CSE'd): 4 x 4m; for the hash call, the global iota 2 x 4n.
int64_t SharedReplicatedCounterBytes(const RngGeometry& geometry);
// The same for partitionable sites: nothing, except where the counters are hoisted out of the
// sites' loop, where the two counter arrays (the same for every site of one geometry, CSE'd)
// are built once in the caller: 2 x 4nl.
int64_t SharedPartitionableCounterBytes(const RngGeometry& geometry);

// XLA:TPU, threefry-expanded, partitionable: the bytes of one site's unfused key-schedule
// scalars (per site), and of the counter pieces one computation keeps for all its sites of one
// local shape (once per computation and shape). See the header comment.
int64_t TpuPartitionableKeyBytes();
int64_t TpuPartitionableCounterBytes(const std::vector<int64_t>& local_shape);

// Whether XLA on `platform` hoists a loop-invariant collective out of the loop around it after
// SPMD partitioning. XLA:CPU's simplification pipeline, which runs after the partitioner
// (cpu_compiler.cc), includes WhileLoopInvariantCodeMotion: a scanned layer's replicated counter
// exchange lies in ENTRY in every XLA:CPU dump of the corpus. XLA:GPU's and XLA:TPU's dumps keep
// it in the loop body.
bool HoistsLoopInvariantCollectives(Platform platform);

// The cost of one step of a site that runs `runs` times per step (the loop around it): every
// run sends the key-dependent part, the counter exchange is sent once where it is hoisted.
RngCost PerStepCost(const RngCost& per_run, int64_t runs, bool counters_hoisted);

// Saturating: sizes come from untrusted dumps; a result that would overflow int64 is INT64_MAX.
RngWhatIf PredictRngCosts(const RngGeometry& geometry);

// The cost of the named mode ("replicated", "partitionable", "rbg", "fused"); nullptr otherwise.
const RngCost* CostOf(const RngWhatIf& whatif, const char* mode);
// The cost of a site's own mode; nullptr for SiteMode::kUnknown.
const RngCost* CostOf(const RngWhatIf& whatif, SiteMode mode);

}  // namespace spmdsim::passes
