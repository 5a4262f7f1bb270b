#include "passes/sharding/mesh_sharding.h"

#include <catch2/catch.hpp>

#include "ir/attribute_parsers.h"
#include "ir/parser.h"

namespace spmdsim::passes {
namespace {

const DeviceMesh kMesh4x2{{"data", "model"}, {4, 2}};
const DeviceMesh kMesh8{{"data"}, {8}};

ArraySharding Convert(const char* text, size_t rank, const DeviceMesh& mesh) {
  const std::optional<ir::Sharding> sharding = ir::ParseSharding(text);
  REQUIRE(sharding);
  return FromHloSharding(*sharding, rank, mesh);
}

TEST_CASE("HLO shardings as the testdata dumps write them, in mesh axes") {
  // Megatron column-parallel weight P(None, 'model') on Mesh(devices.reshape(4, 2)).
  CHECK(Convert("{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}", 2, kMesh4x2)
            .ToString(kMesh4x2) == "[{}, {model}]");
  CHECK(Convert("{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}", 2, kMesh4x2)
            .ToString(kMesh4x2) == "[{model}, {}]");
  CHECK(Convert("{devices=[2,4]<=[4,2]T(1,0) last_tile_dim_replicate}", 1, kMesh4x2)
            .ToString(kMesh4x2) == "[{model}]");
  // The batch P('data', None): the iota [8] is data-major.
  CHECK(Convert("{devices=[4,1,2]<=[8] last_tile_dim_replicate}", 2, kMesh4x2).ToString(kMesh4x2) ==
        "[{data}, {}]");
  CHECK(Convert("{devices=[4,2]<=[8]}", 2, kMesh4x2).ToString(kMesh4x2) == "[{data}, {model}]");
  CHECK(Convert("{devices=[8,1]<=[8]}", 2, kMesh8).ToString(kMesh8) == "[{data}, {}]");
  CHECK(Convert("{devices=[8,1]0,1,2,3,4,5,6,7}", 2, kMesh8).ToString(kMesh8) == "[{data}, {}]");
  CHECK(Convert("{replicated}", 3, kMesh8).IsReplicated());
  CHECK(Convert("{manual}", 3, kMesh8).kind == ArraySharding::Kind::kManual);
  // Not expressible in whole mesh axes: unknown, never replicated.
  CHECK(Convert("{devices=[8,1]7,6,5,4,3,2,1,0}", 2, kMesh8).kind == ArraySharding::Kind::kUnknown);
  CHECK(Convert("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", 2, kMesh8).kind ==
        ArraySharding::Kind::kUnknown);
  CHECK(Convert("{maximal device=0}", 1, kMesh8).kind == ArraySharding::Kind::kUnknown);
}

TEST_CASE("Shardy sharding text, escaped as in frontend attributes") {
  auto one = ParseSdyShardings(R"(#sdy.sharding<@mesh, [{}, {\"model\"}]>)", kMesh4x2);
  REQUIRE(one);
  REQUIRE(one->size() == 1);
  CHECK((*one)[0].ToString(kMesh4x2) == "[{}, {model}]");
  auto two = ParseSdyShardings(
      R"(#sdy.sharding_per_value<[<@mesh, [{\"data\"}, {}, {}]>, <@mesh, [{}]>]>)", kMesh4x2);
  REQUIRE(two);
  REQUIRE(two->size() == 2);
  CHECK((*two)[0].ToString(kMesh4x2) == "[{data}, {}, {}]");
  CHECK((*two)[1].IsReplicated());
  auto sub = ParseSdyShardings(R"(#sdy.sharding<@mesh, [{"data":(1)2}]>)", kMesh4x2);
  REQUIRE(sub);
  CHECK((*sub)[0].kind == ArraySharding::Kind::kUnknown);
  CHECK_FALSE(ParseSdyShardings("{replicated}", kMesh4x2));
}

TEST_CASE("mesh groups, sizes and per-device shapes") {
  CHECK(kMesh4x2.Groups({0}) == std::vector<std::vector<int64_t>>{{0, 2, 4, 6}, {1, 3, 5, 7}});
  CHECK(kMesh4x2.Groups({1}) == std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(kMesh4x2.GroupSize({0, 1}) == 8);
  CHECK(kMesh4x2.AxesName({}) == "-");
  ArraySharding s = ArraySharding::Replicated(3);
  s.dims[0] = {0};
  s.dims[2] = {1};
  const std::optional<ir::Shape> shape = ir::ParseShape("f32[16,32,64]");
  REQUIRE(shape);
  CHECK(ShardShape(*shape, s, kMesh4x2).ToString(false) == "f32[4,32,32]");
  CHECK(s.TileCount(kMesh4x2) == 8);
}

TEST_CASE("the module mesh: Shardy's header attribute, else the parameters' iota") {
  const char* sdy =
      R"(HloModule m, num_partitions=8, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["data"=4, "model"=2]>}}

ENTRY %e (p: f32[8]) -> f32[8] {
  ROOT %p = f32[8] parameter(0), sharding={replicated}
}
)";
  auto parsed = ir::ParseHloText(std::make_shared<ir::SourceBuffer>("a.hlo", sdy));
  REQUIRE(parsed.ok());
  const DeviceMesh a = ModuleMesh(*parsed.modules[0]);
  CHECK(a.names == std::vector<std::string>{"data", "model"});
  CHECK(a.sizes == std::vector<int64_t>{4, 2});

  const char* plain = R"(HloModule m, num_partitions=8

ENTRY %e (p: f32[8,8]) -> f32[8,8] {
  ROOT %p = f32[8,8] parameter(0), sharding={devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}
}
)";
  parsed = ir::ParseHloText(std::make_shared<ir::SourceBuffer>("b.hlo", plain));
  REQUIRE(parsed.ok());
  const DeviceMesh b = ModuleMesh(*parsed.modules[0]);
  CHECK(b.sizes == std::vector<int64_t>{4, 2});
  CHECK(b.names == std::vector<std::string>{"axis0", "axis1"});
}

}  // namespace
}  // namespace spmdsim::passes
