#include "passes/sharding/sharding_rules.h"

#include <catch2/catch.hpp>

namespace spmdsim::passes {
namespace {

const DeviceMesh kMesh{{"data", "model"}, {4, 2}};
constexpr int kData = 0;
constexpr int kModel = 1;

ArraySharding S(std::vector<std::vector<int>> dims) {
  ArraySharding s;
  s.dims = std::move(dims);
  return s;
}

TEST_CASE("a reshard is local when it only adds free axes") {
  CHECK(ReshardIsLocal(S({{}, {}}), S({{kData}, {}})));
  CHECK(ReshardIsLocal(S({{kData}, {}}), S({{kData, kModel}, {}})));
  CHECK_FALSE(ReshardIsLocal(S({{kData}, {}}), S({{}, {}})));               // gather
  CHECK_FALSE(ReshardIsLocal(S({{kData}, {}}), S({{}, {kData}})));          // move
  CHECK_FALSE(ReshardIsLocal(S({{kData}, {}}), S({{kModel, kData}, {}})));  // reorder
}

TEST_CASE("elementwise: compatible shardings merge, a replicated operand slices locally") {
  RuleOutcome merged = ElementwiseRule({S({{kData}, {}, {}}), S({{}, {}, {kModel}})}, 3, kMesh);
  CHECK(merged.result == S({{kData}, {}, {kModel}}));
  CHECK(merged.reshards.empty());
  // Split along different dims: both slice locally to the merged sharding.
  RuleOutcome both = ElementwiseRule({S({{kModel}, {}}), S({{}, {kData}})}, 2, kMesh);
  CHECK(both.result == S({{kModel}, {kData}}));
  CHECK(both.reshards.empty());
  // The same dim split two ways: 'data' (4 tiles) wins, the other operand reshards.
  RuleOutcome conflict = ElementwiseRule({S({{kModel}, {}}), S({{kData}, {}})}, 2, kMesh);
  CHECK(conflict.result == S({{kData}, {}}));
  REQUIRE(conflict.reshards.size() == 1);
  CHECK(conflict.reshards[0].operand == 0);
}

TEST_CASE("dot: data-parallel gradient and Megatron matmuls") {
  // dW = x^T dy over [B,S]: x [B,S,D] {data}, dy [B,S,F] {data}, contracting B and S.
  const DotDims grad{{}, {}, {0, 1}, {0, 1}};
  RuleOutcome dw = DotRule(S({{kData}, {}, {}}), 3, S({{kData}, {}, {kModel}}), 3, grad);
  CHECK(dw.partial_axes == std::vector<int>{kData});
  CHECK(dw.result == S({{}, {kModel}}));
  CHECK(dw.reshards.empty());
  // Row-parallel: attention output [B,S,D] {data,-,model} x wo [D,D] {model,-}.
  const DotDims proj{{}, {}, {2}, {0}};
  RuleOutcome row = DotRule(S({{kData}, {}, {kModel}}), 3, S({{kModel}, {}}), 2, proj);
  CHECK(row.partial_axes == std::vector<int>{kModel});
  CHECK(row.result == S({{kData}, {}, {}}));
  // Column-parallel: x [B,S,D] {data} x wq [D,D] {-,model}: no communication.
  RuleOutcome col = DotRule(S({{kData}, {}, {}}), 3, S({{}, {kModel}}), 2, proj);
  CHECK(col.partial_axes.empty());
  CHECK(col.result == S({{kData}, {}, {kModel}}));
  CHECK(col.reshards.empty());
  // Batch dims (attention scores): [B,H,S,Dh] x [B,H,S,Dh] -> [B,H,S,S].
  const DotDims scores{{0, 1}, {0, 1}, {3}, {3}};
  RuleOutcome sc =
      DotRule(S({{kData}, {kModel}, {}, {}}), 4, S({{kData}, {kModel}, {}, {}}), 4, scores);
  CHECK(sc.result == S({{kData}, {kModel}, {}, {}}));
  CHECK(sc.partial_axes.empty());
}

TEST_CASE("reshape: splits and merges keep the major axes, otherwise gather") {
  // [B,S,D] {-,-,model} -> [B,S,H,Dh]: H = 4 takes 'model'.
  RuleOutcome split = ReshapeRule(S({{}, {}, {kModel}}), {16, 32, 64}, {16, 32, 4, 16}, kMesh);
  CHECK(split.result == S({{}, {}, {kModel}, {}}));
  CHECK(split.reshards.empty());
  RuleOutcome merge = ReshapeRule(S({{}, {}, {kModel}, {}}), {16, 32, 4, 16}, {16, 32, 64}, kMesh);
  CHECK(merge.result == S({{}, {}, {kModel}}));
  // [64,32] {data} -> [16,4,32]: the 16 rows of microbatch-major order take 'data'.
  RuleOutcome micro = ReshapeRule(S({{kData}, {}}), {64, 32}, {16, 4, 32}, kMesh);
  CHECK(micro.result == S({{kData}, {}, {}}));
  // A minor dim split cannot merge with an unsplit major one: gather first.
  RuleOutcome bad = ReshapeRule(S({{}, {kData}}), {16, 32}, {512}, kMesh);
  CHECK(bad.result == S({{}}));
  REQUIRE(bad.reshards.size() == 1);
  CHECK(bad.reshards[0].to == S({{}, {}}));
  RuleOutcome degenerate = ReshapeRule(S({{kData}, {}, {}}), {16, 32, 1}, {16, 32}, kMesh);
  CHECK(degenerate.result == S({{kData}, {}}));
}

TEST_CASE("reduce over a split dim is a partial sum; slices of a split dim gather") {
  RuleOutcome r = ReduceRule(S({{kData}, {}, {kModel}}), {0, 1});
  CHECK(r.partial_axes == std::vector<int>{kData});
  CHECK(r.result == S({{kModel}}));
  RuleOutcome cut = CutRule(S({{kData}, {}}), {0});
  CHECK(cut.result == S({{}, {}}));
  CHECK(cut.reshards.size() == 1);
  CHECK(CutRule(S({{kData}, {}}), {1}).reshards.empty());
}

TEST_CASE("embedding: gather follows the indices, the scatter-add gradient is a partial sum") {
  // params['embed'][tokens]: operand [256,64] replicated, indices [16,32] {data}.
  GatherDims g;
  g.offset_dims = {2};
  g.collapsed_slice_dims = {0};
  g.start_index_map = {0};
  g.slice_sizes = {1, 64};
  g.index_vector_dim = 2;
  RuleOutcome gather = GatherRule(S({{}, {}}), {256, 64}, S({{kData}, {}}), 2, 3, g);
  CHECK(gather.result == S({{kData}, {}, {}}));
  CHECK(gather.reshards.empty());
  ScatterDims sd;
  sd.update_window_dims = {2};
  sd.inserted_window_dims = {0};
  sd.scatter_dims_to_operand_dims = {0};
  sd.index_vector_dim = 2;
  RuleOutcome scatter = ScatterRule(S({{}, {}}), 2, S({{kData}, {}, {}}), 3, sd);
  CHECK(scatter.partial_axes == std::vector<int>{kData});
  CHECK(scatter.result == S({{}, {}}));
}

}  // namespace
}  // namespace spmdsim::passes
