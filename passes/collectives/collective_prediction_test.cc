#include "passes/collectives/collective_prediction.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "ir/parser.h"

namespace spmdsim::passes {
namespace {

std::unique_ptr<ir::HloModule> Parse(const std::string& text) {
  auto parsed = ir::ParseHloText(std::make_shared<ir::SourceBuffer>("t.hlo", text));
  REQUIRE(parsed.ok());
  REQUIRE(parsed.modules.size() == 1);
  return std::move(parsed.modules[0]);
}

std::vector<int64_t> BytesOf(const CollectivePrediction& p, ir::CollectiveKind kind) {
  std::vector<int64_t> bytes;
  for (const PredictedCollective& c : p.predicted) {
    if (c.kind == kind) bytes.push_back(c.bytes);
  }
  return bytes;
}

// Non-partitionable threefry in miniature: a flat counter iota(32768) split in halves, "hashed"
// (xor/add stand in for the 20 rounds), concatenated and reshaped to the dropout shape, then
// combined with activations split over the batch.
std::string Threefry(const std::string& mesh, const std::string& x_sharding) {
  return R"(HloModule rng, num_partitions=8, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<[)" +
         mesh + R"(]>}}

ENTRY %main (x: f32[16,32,64]) -> f32[16,32,64] {
  %iota = u32[32768] iota(), iota_dimension=0, metadata={op_name="jit(step)/dropout/iota"}
  %lo = u32[16384] slice(%iota), slice={[0:16384]}
  %hi = u32[16384] slice(%iota), slice={[16384:32768]}
  %y0 = u32[16384] xor(%lo, %hi)
  %y1 = u32[16384] add(%lo, %hi)
  %bits = u32[32768] concatenate(%y0, %y1), dimensions={0}
  %r = u32[16,32,64] reshape(%bits)
  %c = u32[] constant(2147483648)
  %cb = u32[16,32,64] broadcast(%c), dimensions={}
  %keep = pred[16,32,64] compare(%r, %cb), direction=LT
  %x = f32[16,32,64] parameter(0), sharding=)" +
         x_sharding + R"(
  %zero = f32[] constant(0)
  %zb = f32[16,32,64] broadcast(%zero), dimensions={}
  ROOT %out = f32[16,32,64] select(%keep, %x, %zb)
}
)";
}

TEST_CASE("replicated threefry: two all-gathers of the halves and the halves' re-split") {
  // 8 blocks of 4096 counters; halves re-split in blocks of 2048 (the dp8 testdata pattern).
  const auto dp8 = Parse(Threefry(R"("data"=8)", "{devices=[8,1,1]<=[8]}"));
  const CollectivePrediction p = PredictCollectives(*dp8);
  CHECK(BytesOf(p, ir::CollectiveKind::kAllGather) == std::vector<int64_t>{65536, 65536});
  CHECK(BytesOf(p, ir::CollectiveKind::kCollectivePermute) ==
        std::vector<int64_t>{16384, 8192, 8192, 8192});
  CHECK(p.by_kind.at("all-gather").wire_bytes_per_device == 2 * 65536 * 7 / 8);
  for (const PredictedCollective& c : p.predicted) {
    CHECK(c.reason == "replicated threefry");
    CHECK(c.op_name == "jit(step)/dropout/iota");
  }
  // 4x2 mesh, split over 'data' only: groups of 4, blocks twice as large.
  const auto mesh =
      Parse(Threefry(R"("data"=4, "model"=2)", "{devices=[4,1,1,2]<=[8] last_tile_dim_replicate}"));
  const CollectivePrediction q = PredictCollectives(*mesh);
  CHECK(BytesOf(q, ir::CollectiveKind::kAllGather) == std::vector<int64_t>{65536, 65536});
  CHECK(BytesOf(q, ir::CollectiveKind::kCollectivePermute) ==
        std::vector<int64_t>{32768, 16384, 16384, 16384});
  CHECK(q.predicted.front().group_size == 4);
  CHECK(q.predicted.front().mesh_axis == "data");
  // Replicated activations: the bits stay replicated, nothing to send.
  const auto none = Parse(Threefry(R"("data"=8)", "{replicated}"));
  CHECK(PredictCollectives(*none).predicted.empty());
}

// Megatron MLP twice in a row plus an independent third matmul: the second block's all-reduce
// depends on the first's, the third does not.
constexpr const char* kMegatron =
    R"(HloModule tp, num_partitions=8, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["data"=4, "model"=2]>}}

ENTRY %main (x: f32[16,64], w1: f32[64,256], w2: f32[256,64], w3: f32[256,64]) -> (f32[16,64], f32[16,64]) {
  %x = f32[16,64] parameter(0), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
  %w1 = f32[64,256] parameter(1), sharding={devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}
  %w2 = f32[256,64] parameter(2), sharding={devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}
  %w3 = f32[256,64] parameter(3), sharding={devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}
  %h = f32[16,256] dot(%x, %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %z = f32[16,64] dot(%h, %w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %h2 = f32[16,256] dot(%z, %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %z2 = f32[16,64] dot(%h2, %w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %side = f32[16,64] dot(%h, %w3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %out = (f32[16,64], f32[16,64]) tuple(%z2, %side)
}
)";

TEST_CASE("tensor-parallel all-reduces over 'model', combined by dependency level") {
  const auto module = Parse(kMegatron);
  const CollectivePrediction p = PredictCollectives(*module);
  REQUIRE(p.predicted.size() == 3);
  for (const PredictedCollective& c : p.predicted) {
    CHECK(c.kind == ir::CollectiveKind::kAllReduce);
    CHECK(c.reason == "tensor-parallel matmul");
    CHECK(c.mesh_axis == "model");
    CHECK(c.group_size == 2);
    CHECK(c.bytes == 4 * 64 * 4);               // the [4,64] piece of a data shard
    CHECK(c.wire_bytes_per_device == c.bytes);  // 2(n-1)/n = 1 for n = 2
  }
  // z and side share an op; z2 depends on z.
  REQUIRE(p.combined.size() == 2);
  CHECK(p.combined[0].members.size() == 2);
  CHECK(p.combined[1].members.size() == 1);
  CHECK(p.by_kind.at("all-reduce").count == 2);
  CHECK(p.by_kind.at("all-reduce").uncombined_count == 3);
  PredictionOptions separate;
  separate.combine_all_reduces = false;
  CHECK(PredictCollectives(*module, separate).by_kind.at("all-reduce").count == 3);
}

TEST_CASE("reshards: gather, all-to-all, and the comparison's arithmetic") {
  const char* text = R"(HloModule r, num_partitions=8

ENTRY %main (x: f32[16,64]) -> (f32[16,64], f32[16,64]) {
  %x = f32[16,64] parameter(0), sharding={devices=[8,1]<=[8]}
  %gathered = f32[16,64] copy(%x), sharding={replicated}
  %moved = f32[16,64] copy(%x), sharding={devices=[1,8]<=[8]}
  ROOT %out = (f32[16,64], f32[16,64]) tuple(%gathered, %moved)
}
)";
  const auto module = Parse(text);
  const CollectivePrediction p = PredictCollectives(*module);
  REQUIRE(p.predicted.size() == 2);
  CHECK(p.predicted[0].kind == ir::CollectiveKind::kAllGather);
  CHECK(p.predicted[0].bytes == 16 * 64 * 4);
  CHECK(p.predicted[0].wire_bytes_per_device == 16 * 64 * 4 * 7 / 8);
  CHECK(p.predicted[1].kind == ir::CollectiveKind::kAllToAll);
  CHECK(p.predicted[1].bytes == 2 * 64 * 4);
  CHECK(p.predicted[1].reason == "reshard");

  CollectiveResult actual;
  actual.by_kind["all-gather"] = {1, 1, 3584, 0};
  actual.by_kind["collective-permute"] = {2, 2, 100, 0};
  actual.total_wire_bytes_per_device = 3684;
  const PredictionComparison cmp = ComparePrediction(p, actual);
  REQUIRE(cmp.by_kind.size() == 3);
  CHECK(cmp.by_kind[0].kind == "all-gather");
  CHECK(cmp.by_kind[0].wire_error_pct == Approx(0.0));
  CHECK(cmp.by_kind[1].kind == "all-to-all");
  CHECK_FALSE(cmp.by_kind[1].error_defined);  // predicted, never inserted
  CHECK(cmp.by_kind[2].kind == "collective-permute");
  CHECK(cmp.by_kind[2].wire_error_pct == Approx(-100.0));
  CHECK(cmp.predicted_total_wire_bytes == 3584 + 448);
  CHECK(cmp.total_error_pct == Approx(100.0 * (3584 + 448 - 3684) / 3684));
}

}  // namespace
}  // namespace spmdsim::passes
