// The what-if's closed formulas on hand-picked geometries, and how a site in a loop is costed
// per step (the counter exchange sent once where XLA hoists it).
#include "passes/rng/rng_whatif.h"

#include <catch2/catch.hpp>

namespace spmdsim::passes {
namespace {

// The corpus' plain data-parallel dropout: [16,32,64] split over 8 devices, u32[2,32,64] each.
RngGeometry DataParallel8() {
  RngGeometry g;
  g.local_elements = 4096;
  g.global_elements = 32768;
  g.devices = 8;
  return g;
}

TEST_CASE("replicated mode's wire is two gathers of the halves and the counter permutes") {
  RngGeometry g = DataParallel8();
  const RngWhatIf w = PredictRngCosts(g);
  // m = 16384 / 8 = 2048 pairs per device: permutes 5 x 4m = 40 KiB; each gather of a 64 KiB
  // half sends 7/8 of it.
  CHECK(w.replicated.counter_wire_bytes == 5 * 4 * 2048);
  CHECK(w.replicated.wire_bytes_per_device == 2 * 65536 * 7 / 8 + 5 * 4 * 2048);
  CHECK(w.partitionable.wire_bytes_per_device == 0);
  CHECK(w.partitionable.counter_wire_bytes == 0);
  g.hash_call = true;  // the call takes the global counters: no permutes
  CHECK(PredictRngCosts(g).replicated.counter_wire_bytes == 0);
}

TEST_CASE("the older partitioner all-reduces the concatenation of the halves") {
  // testdata/dumps/jax04_cpu8_plain_dp_replicated_remat (jaxlib 0.4.30), a site of u32[2,32,64]
  // per device over 8: the zero buffer the pieces are written into (u32[32768], 128 KiB), its
  // all-reduce (128 KiB, 224 KiB sent), loop state and copies 4 x 8 KiB, counter pieces 5 x
  // 8 KiB and their permutes (40 KiB sent): 328 KiB, 264 KiB on the wire, however many
  // instructions read the all-reduce.
  RngGeometry g = DataParallel8();
  g.concat = ConcatLowering::kAllReduce;
  for (const int64_t consumers : {1, 3}) {
    g.consumers = consumers;
    const RngWhatIf w = PredictRngCosts(g);
    CHECK(w.replicated.memory_bytes == 2 * 131072 + 4 * 8192 + 5 * 8192);
    CHECK(w.replicated.wire_bytes_per_device == 2 * 131072 * 7 / 8 + 5 * 8192);
    CHECK(w.replicated.counter_wire_bytes == 5 * 8192);
  }
  // Today's XLA: the gathered halves, and their concatenation only for several readers.
  g.concat = ConcatLowering::kAllGather;
  g.consumers = 1;
  CHECK(PredictRngCosts(g).replicated.memory_bytes == 131072 + 4 * 8192 + 5 * 8192);
  g.consumers = 3;
  CHECK(PredictRngCosts(g).replicated.memory_bytes == 2 * 131072 + 4 * 8192 + 5 * 8192);
  // The other modes do not depend on it.
  g.concat = ConcatLowering::kAllReduce;
  CHECK(PredictRngCosts(g).partitionable.memory_bytes == 4 * 4 * 4096);
}

TEST_CASE("a flat hash split over fewer devices than the tensor hashes more pairs each") {
  // Megatron sequence parallelism: [16,32,64] as [4,16,64] per device on a 4x2 mesh. The flat
  // counters keep the batch tiles only (H = 4): m = 16384 / 4 = 4096 pairs per device, and each
  // gather of a 64 KiB half runs over the 4 devices of a group
  // (testdata/dumps/jax012_cpu8_seqpar_replicated_remat: u32[4096] hash outputs, all-gathers
  // over {'data'}, permutes of u32[8192] and 3 x u32[4096]).
  RngGeometry g = DataParallel8();
  g.hash_shards = 4;
  const RngWhatIf w = PredictRngCosts(g);
  CHECK(w.replicated.counter_wire_bytes == 5 * 4 * 4096);
  CHECK(w.replicated.wire_bytes_per_device == 2 * 65536 * 3 / 4 + 5 * 4 * 4096);
  CHECK(SharedReplicatedCounterBytes(g) == 4 * 4 * 4096);
  g.hash_shards = 16;  // more than the devices: not a split of this tensor, P stands
  CHECK(PredictRngCosts(g).replicated.counter_wire_bytes == 5 * 4 * 2048);
}

TEST_CASE("XLA:TPU exchanges replicated mode's halves by all-to-alls between tiled relayouts") {
  // testdata/dumps/jax012_tpu4_flax_dp_replicated_remat, site add_add_fusion.40:hash2: [16,32,64]
  // on 4 devices, u32[4,32,64] each, m = 4096. Hash outputs u32[4096] x 2 (16 KiB each),
  // relayouts u32[2,4,8,64]{3,2,0,1:T(8,128)} x 4 (32 KiB each: 64 lanes padded to 128),
  // all-to-alls and reduces u32[4,1,1024] / u32[4,1024] x 4 (16 KiB each), the concatenation
  // u32[16,8,64] (64 KiB), all-to-all and reduce u32[4,1,2048] / u32[4,2048] (32 KiB each), the
  // mask pred[4,4,8,64] (16 KiB), key scalars 2 x 512 B: 369 KiB.
  RngGeometry g;
  g.local_elements = 8192;
  g.global_elements = 32768;
  g.devices = 4;
  g.unrolled = true;
  g.tpu_exchange = true;
  g.local_shape = {4, 32, 64};
  REQUIRE(TpuExchangeApplies(g));
  const RngWhatIf w = PredictRngCosts(g);
  CHECK(w.replicated.memory_bytes == 377856);
  CHECK(w.replicated.wire_bytes_per_device == (16384 + 16384 + 32768) * 3 / 4);
  CHECK(w.replicated.counter_wire_bytes == 0);
  // Once per computation: the iota's piece u32[8192], its slices u32[4096] x 2, the pieces
  // permuted in (u32[8192] and 3 x u32[4096]).
  CHECK(TpuReplicatedSharedBytes(g) == 9 * 16384);
  CHECK(TpuReplicatedSharedWireBytes(g) == 5 * 16384);
  CHECK(SharedReplicatedCounterBytes(g) == 0);
  // Megatron on 2x2 (jax012_tpu4_megatron_replicated_remat): 2 shards, u32[8,32,64] each; a
  // device takes one m from the other per slice: two permutes of u32[8192].
  g.local_elements = 16384;
  g.devices = 2;
  g.local_shape = {8, 32, 64};
  CHECK(CounterPermuteWords(g) == 2 * 8192);
  CHECK(TpuReplicatedSharedWireBytes(g) == 2 * 4 * 8192);
  // Its mask pred[8,2,16,64] (32 KiB) is copied row-major (copy.255 of fusion.96, 32 KiB): the
  // pieces are 16 rows high, not one 8-row tile. The same site with S = 16 (pieces of 8 rows)
  // keeps one mask.
  const int64_t megatron = PredictRngCosts(g).replicated.memory_bytes;
  g.global_elements = 16384;
  g.local_elements = 8192;
  g.local_shape = {8, 16, 64};
  const int64_t tile_high = PredictRngCosts(g).replicated.memory_bytes;
  g.global_elements = 32768;
  g.local_elements = 16384;
  g.local_shape = {8, 32, 64};
  // Hash outputs 2 x 32 KiB, relayouts u32[4,2,16,64] x 4 (64 KiB each, tiled), all-to-alls and
  // reduces 4 x 32 KiB, the concatenation u32[16,16,64] (128 KiB), back to rows 2 x 64 KiB, the
  // mask and its copy 2 x 32 KiB, key scalars 1 KiB.
  CHECK(megatron == 65536 + 4 * 65536 + 4 * 32768 + 131072 + 2 * 65536 + 2 * 32768 + 1024);
  // Half the elements, and one mask of half the bytes: 16 KiB less than half the bytes.
  CHECK(tile_high == megatron / 2 - 16384 + 512);
  // One row of each half per device (16 devices): moved by permutes, not this exchange.
  g.local_elements = 4096;
  g.devices = 8;
  g.local_shape = {2, 32, 64};
  CHECK_FALSE(TpuExchangeApplies(g));
}

TEST_CASE("XLA:TPU moves one or two local rows by permutes of whole rows") {
  // testdata/dumps/jax012_tpu16_flax_dp_replicated_remat: [16,32,64] on 16 devices, u32[1,32,64]
  // each; H = min(16, 16/2) = 8, m = 2048 (u32[2048] pieces). Per site 12 tiled rows (16 KiB
  // each: 64 lanes padded to 128), the two hash outputs u32[2048] (8 KiB each) and the key
  // scalars (2 x 512 B); 5 permutes of a row.
  RngGeometry g;
  g.local_elements = 2048;
  g.global_elements = 32768;
  g.devices = 16;
  g.hash_shards = 16;
  g.unrolled = true;
  g.tpu_exchange = true;
  g.local_shape = {1, 32, 64};
  REQUIRE(TpuRowReshardRows(g) == 1);
  CHECK_FALSE(TpuExchangeApplies(g));
  RngWhatIf w = PredictRngCosts(g);
  CHECK(w.replicated.memory_bytes == 12 * 16384 + 2 * 8192 + 1024);
  CHECK(w.replicated.wire_bytes_per_device == 5 * 8192);
  CHECK(w.replicated.counter_wire_bytes == 0);
  // Once per computation: the u32[4096] iota piece and its permuted copy, seven u32[2048]
  // pieces; permutes of u32[4096] and 3 x u32[2048] (44 permutes for the 8 sites there).
  CHECK(TpuReplicatedSharedBytes(g) == 2 * 16384 + 7 * 8192);
  CHECK(TpuReplicatedSharedWireBytes(g) == 5 * 8192);
  CHECK(SharedReplicatedCounterBytes(g) == 0);
  // A row of 128 lanes over whole 8-row tiles is a bitcast of the flat hash outputs
  // (tools/research/tpu_reshard: [16,16,128] keeps 12 rows, [16,8,256] 12 rows and the 2 flat).
  g.local_shape = {1, 16, 128};
  CHECK(PredictRngCosts(g).replicated.memory_bytes == 12 * 8192 + 1024);
  g.local_shape = {1, 8, 256};
  CHECK(PredictRngCosts(g).replicated.memory_bytes == 12 * 8192 + 2 * 8192 + 1024);
  // jax012_tpu16_megatron_replicated_remat: 8x2 mesh, rows on the data axis, u32[2,32,64] per
  // device; H = min(8, 16/2) = 8, m = 2048: 9 tiled rows and 4 permutes per site.
  g.local_elements = 4096;
  g.devices = 8;
  g.hash_shards = 8;
  g.local_shape = {2, 32, 64};
  REQUIRE(TpuRowReshardRows(g) == 2);
  w = PredictRngCosts(g);
  CHECK(w.replicated.memory_bytes == 9 * 16384 + 2 * 8192 + 1024);
  CHECK(w.replicated.wire_bytes_per_device == 4 * 8192);
  CHECK(TpuReplicatedSharedBytes(g) == 11 * 4 * 2048);
  CHECK(TpuReplicatedSharedWireBytes(g) == 5 * 8192);
  // Not this lowering: a flat hash split fewer ways than the devices (a minor dimension split
  // too), fewer than 8 devices (not checked), or four rows (the all-to-all exchange).
  g.hash_shards = 4;
  CHECK(TpuRowReshardRows(g) == 0);
  g.devices = 4;
  g.hash_shards = 4;
  g.global_elements = 16384;
  CHECK(TpuRowReshardRows(g) == 0);
  g.devices = 8;
  g.hash_shards = 8;
  g.local_elements = 8192;
  g.global_elements = 65536;
  g.local_shape = {4, 32, 64};
  CHECK(TpuRowReshardRows(g) == 0);
  CHECK(TpuExchangeApplies(g));
}

TEST_CASE("a site in a loop sends per run, except the counter exchange a platform hoists") {
  RngCost run;
  run.wire_bytes_per_device = 152 * 1024;
  run.counter_wire_bytes = 40 * 1024;
  CHECK(PerStepCost(run, 2, /*counters_hoisted=*/false).wire_bytes_per_device == 304 * 1024);
  CHECK(PerStepCost(run, 2, /*counters_hoisted=*/true).wire_bytes_per_device == 264 * 1024);
  CHECK(PerStepCost(run, 1, true).wire_bytes_per_device == 152 * 1024);
  CHECK(PerStepCost(run, 4, true).memory_bytes == run.memory_bytes);
  CHECK(HoistsLoopInvariantCollectives(Platform::kCpu));
  CHECK_FALSE(HoistsLoopInvariantCollectives(Platform::kGpu));
  CHECK_FALSE(HoistsLoopInvariantCollectives(Platform::kTpu));
}

TEST_CASE("XLA:TPU's fused partitionable hash keeps key scalars and per-dimension counters") {
  // testdata/dumps/jax012_tpu4_flax_dp_partitionable_remat: per site xor.899 and xor.900,
  // u32[]{:T(128)} of 512 B each; once for the module's u32[4,32,64] draws convert.37,
  // multiply.316, convert.38 (the offset), u32[4] and u32[32] hi and lo, 512 B each.
  CHECK(TpuPartitionableKeyBytes() == 2 * 512);
  CHECK(TpuPartitionableCounterBytes({4, 32, 64}) == 7 * 512);
  // A vector past one 128-word tile takes whole tiles.
  CHECK(TpuPartitionableCounterBytes({256, 64}) == 3 * 512 + 2 * 1024);
  CHECK(TpuPartitionableCounterBytes({4096}) == 0);  // the minor-most is fused
  // A leading dimension of local extent 1 (jax012_tpu16_flax_dp_partitionable_remat, u32[1,32,64]
  // per device): 15 scalars (2 converts, the u64 multiply's 13) and the next dimension's lo,
  // carry (pred[32]), hi and hi + 1.
  CHECK(TpuPartitionableCounterBytes({1, 32, 64}) == 19 * 512);
  CHECK(TpuPartitionableCounterBytes({1, 4096}) == 15 * 512);  // the next is the minor-most
}

}  // namespace
}  // namespace spmdsim::passes
