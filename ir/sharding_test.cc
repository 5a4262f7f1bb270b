#include "ir/sharding.h"

#include <catch2/catch.hpp>

#include "ir/attribute_parsers.h"
#include "ir/replica_groups.h"

namespace spmdsim::ir {
namespace {

Sharding Parse(std::string_view text) {
  std::string error;
  auto sharding = ParseSharding(text, &error);
  INFO(text << ": " << error);
  REQUIRE(sharding.has_value());
  return *sharding;
}

TEST_CASE("sharding forms round-trip") {
  for (std::string_view text : {
           "{replicated}",
           "{manual}",
           "{maximal device=3}",
           "{devices=[2,1,4]0,1,2,3,4,5,6,7 last_tile_dim_replicate}",
           "{devices=[2,4]<=[4,2]T(1,0)}",
           "{devices=[2,2,2]<=[8] last_tile_dims={manual, replicated}}",
           "{{replicated}, {devices=[8]<=[8]}}",
           "{replicated metadata={op_name=\"a\"}}",
           "{unknown shard_as 1}",
           "{}",
       }) {
    const Sharding s = Parse(text);
    CHECK(s.ToString() == text);
    CHECK(Parse(s.ToString()) == s);
  }
}

TEST_CASE("iota tile assignments expand like XLA's") {
  // iota(8) shaped [4,2], transposed to [2,4], flattened.
  const Sharding s = Parse("{devices=[2,4]<=[4,2]T(1,0)}");
  CHECK(s.Devices() == std::vector<int64_t>{0, 2, 4, 6, 1, 3, 5, 7});
  CHECK(s.TileCount() == 8);
}

TEST_CASE("shard shapes use ceil division and ignore subgroup dims") {
  const Shape shape = Shape::Array(PrimitiveType::kF32, {10, 6});
  const Sharding s = Parse("{devices=[4,1,2]<=[8] last_tile_dim_replicate}");
  CHECK(s.DataRank() == 2);
  CHECK(s.ShardShape(shape).dims() == std::vector<int64_t>{3, 6});
  CHECK(Parse("{replicated}").ShardShape(shape).dims() == shape.dims());
}

TEST_CASE("malformed shardings are errors") {
  std::string error;
  CHECK_FALSE(ParseSharding("{devices=[2,2]0,1,2}", &error));
  CHECK(error.find("need 4") != std::string::npos);
  CHECK_FALSE(ParseSharding("{devices=[2,4]<=[4,2]T(1,1)}", &error));
  CHECK_FALSE(ParseSharding("{maximal}", &error));
  CHECK_FALSE(ParseSharding("{frobnicate}", &error));
  CHECK_FALSE(ParseSharding("{devices=[1048576,1048576]<=[8]}", &error));
}

TEST_CASE("replica groups in list and iota form") {
  auto list = ParseReplicaGroups("{{0,1,2,3},{4,5,6,7}}");
  REQUIRE(list);
  CHECK(list->GroupSize() == 4);
  CHECK(list->NumGroups() == 2);
  auto iota = ParseReplicaGroups("[4,2]<=[2,4]T(1,0)");
  REQUIRE(iota);
  CHECK(iota->Expand() == std::vector<std::vector<int64_t>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(iota->ToString() == "[4,2]<=[2,4]T(1,0)");
  auto all = ParseReplicaGroups("{}");
  REQUIRE(all);
  CHECK(all->GroupSize() == 0);
  CHECK_FALSE(ParseReplicaGroups("[2,4]<=[7]"));
}

TEST_CASE("replica groups in mesh-axes form") {
  auto x = ParseReplicaGroups("mesh['axis_0'=4,'axis_1'=2] {'axis_0'}");
  REQUIRE(x);
  CHECK(x->GroupSize() == 4);
  CHECK(x->NumGroups() == 2);
  CHECK(x->Expand() == std::vector<std::vector<int64_t>>{{0, 2, 4, 6}, {1, 3, 5, 7}});
  CHECK(x->ToString() == "mesh['axis_0'=4,'axis_1'=2] {'axis_0'}");
  auto y = ParseReplicaGroups("mesh['a'=4,'b'=2] {'b'}");
  REQUIRE(y);
  CHECK(y->Expand() == std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  // Sub-axis: 'a' of size 8 seen as [2,2,2]; the group spans the middle part.
  auto sub = ParseReplicaGroups("mesh['a'=8] {'a':(2)2}");
  REQUIRE(sub);
  CHECK(sub->Expand() == std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  auto ids = ParseReplicaGroups("mesh['a'=2,'b'=2], device_ids=(3,2,1,0) {'a'}");
  REQUIRE(ids);
  CHECK(ids->Expand() == std::vector<std::vector<int64_t>>{{3, 1}, {2, 0}});
  CHECK_FALSE(ParseReplicaGroups("mesh['a'=2] {'z'}"));
  CHECK_FALSE(ParseReplicaGroups("mesh['a'=8] {'a':(3)2}"));
}

}  // namespace
}  // namespace spmdsim::ir

namespace spmdsim::ir {
namespace {

// A named-mesh sharding means the same as the tile assignment XLA converts it to: the same tile
// dims, subgroup kinds and device order.
TEST_CASE("named-mesh shardings are the tile assignments XLA converts them to") {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"{mesh['data'=8], [{'data'}, {}]}", "{devices=[8,1]0,1,2,3,4,5,6,7}"},
      // 'data' unused: it replicates.
      {"{mesh['data'=2,'model'=2], [{}, {'model'}]}",
       "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}"},
      {"{mesh['data'=2,'model'=2], [{'model'}, {}]}",
       "{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}"},
      // Two axes on one dim, the minor one listed first.
      {"{mesh['a'=2,'b'=4], [{'b', 'a'}]}", "{devices=[8]0,4,1,5,2,6,3,7}"},
      // A sub-axis: 'x' seen as [2,2,2] (pre-size 2 major); the middle factor shards the dim.
      {"{mesh['x'=8], [{'x':(2)2}]}", "{devices=[2,4]0,1,4,5,2,3,6,7 last_tile_dim_replicate}"},
      {"{mesh['a'=4], device_ids=([2,2]T(1,0)), [{'a'}]}", "{devices=[4]0,2,1,3}"},
      {"{mesh['a'=2,'b'=2], [{'a'}], manual={'b'}}",
       "{devices=[2,2]0,1,2,3 last_tile_dims={manual}}"},
      {"{mesh['data'=8], replicated}", "{replicated}"},
      {"{mesh[], replicated}", "{replicated}"},
      {"{mesh['data'=8], [{}, {}]}", "{replicated}"},
      {"{mesh['data'=8], [{'data', ?}, {?}]}", "{devices=[8,1]0,1,2,3,4,5,6,7}"},
      {"{maximal_mesh[device_id=5]}", "{maximal device=5}"},
  };
  for (const auto& [named, legacy] : cases) {
    INFO(named << " vs " << legacy);
    Sharding a = Parse(named);
    const Sharding b = Parse(legacy);
    CHECK(a.ToString() == std::string(named));  // printed back as written
    a.named.clear();
    CHECK(a.kind == b.kind);
    CHECK(a.tile_dims == b.tile_dims);
    CHECK(a.Devices() == b.Devices());
    CHECK(a.last_tile_dim_replicate == b.last_tile_dim_replicate);
    CHECK(a.last_tile_dims == b.last_tile_dims);
    CHECK(a.maximal_device == b.maximal_device);
  }
  // In a tuple, beside the legacy form.
  const Sharding tuple = Parse("{{mesh['a'=2], [{'a'}]}, {replicated}}");
  REQUIRE(tuple.tuple.size() == 2);
  CHECK(tuple.tuple[0].tile_dims == std::vector<int64_t>{2});
}

TEST_CASE("malformed named-mesh shardings are errors") {
  for (std::string_view text : {
           "{mesh['a'=2], [{'b'}]}",                    // not an axis of the mesh
           "{mesh['a'=2,'a'=2], [{'a'}]}",              // axis named twice
           "{mesh['a'=2], [{'a'}, {'a'}]}",             // axis used twice
           "{mesh['x'=8], [{'x':(3)2}]}",               // sub-axis does not divide
           "{mesh['a'=0], replicated}",                 // bad size
           "{mesh['a'=4], device_ids=(0,1), [{'a'}]}",  // too few devices
           "{mesh['a'=2], [{'a', ?, 'a'}]}",            // '?' ends the list
       }) {
    INFO(text);
    std::string error;
    CHECK_FALSE(ParseSharding(text, &error).has_value());
    CHECK_FALSE(error.empty());
  }
}

}  // namespace
}  // namespace spmdsim::ir
