#include "passes/collectives/collective_analysis.h"

#include <catch2/catch.hpp>
#include <memory>

#include "ir/parser.h"

namespace spmdsim::passes {
namespace {

// Every collective form once, in loops nested two deep (outer: known_trip_count 2; inner: the
// induction pattern i < 3 from 0), and a computation called twice.
constexpr const char* kModule = R"(HloModule m, num_partitions=8

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%inner_body (p: (s32[], f32[1024])) -> (s32[], f32[1024]) {
  %p = (s32[], f32[1024]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %x = f32[1024] get-tuple-element(%p), index=1
  %ar = f32[1024] all-reduce(%x), channel_id=1, replica_groups=[2,4]<=[8], use_global_device_ids=true, to_apply=%add, metadata={op_name="inner/psum" source_file="model.py" source_line=12}
  %one = s32[] constant(1)
  %i2 = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[1024]) tuple(%i2, %ar)
}

%inner_cond (p: (s32[], f32[1024])) -> pred[] {
  %p = (s32[], f32[1024]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%outer_body (q: f32[1024]) -> f32[1024] {
  %q = f32[1024] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[1024]) tuple(%zero, %q)
  %loop = (s32[], f32[1024]) while(%init), condition=%inner_cond, body=%inner_body
  ROOT %r = f32[1024] get-tuple-element(%loop), index=1
}

%outer_cond (q: f32[1024]) -> pred[] {
  %q = f32[1024] parameter(0)
  ROOT %c = pred[] constant(true)
}

%gather (g: f32[128]) -> f32[1024] {
  %g = f32[128] parameter(0)
  ROOT %ag = f32[1024] all-gather(%g), channel_id=2, replica_groups=[1,8]<=[8], dimensions={0}, use_global_device_ids=true
}

%rs_comp (w: f32[1024]) -> f32[128] {
  %w = f32[1024] parameter(0)
  ROOT %rs = f32[128] reduce-scatter(%w), channel_id=3, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, use_global_device_ids=true, to_apply=%add
}

ENTRY %main (x: f32[8,1024], y: f32[128]) -> f32[1024] {
  %x = f32[8,1024] parameter(0), sharding={devices=[2,4]<=[8]}
  %y = f32[128] parameter(1)
  %x1 = f32[1024] reshape(%x)
  %outer = f32[1024] while(%x1), condition=%outer_cond, body=%outer_body, backend_config={"known_trip_count":{"n":"2"}}
  %c1 = f32[1024] call(%y), to_apply=%gather
  %c2 = f32[1024] call(%y), to_apply=%gather
  %ags = (f32[128], f32[1024]) all-gather-start(%y), channel_id=5, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, use_global_device_ids=true
  %agd = f32[1024] all-gather-done(%ags)
  %cps = (f32[128], f32[128], u32[], u32[]) collective-permute-start(%y), channel_id=6, source_target_pairs={{0,4},{1,2}}
  %cpd = f32[128] collective-permute-done(%cps)
  %rss = ((f32[1024]), f32[128], s32[]) async-start(%outer), calls=%rs_comp
  %rsd = f32[128] async-done(%rss)
  %rar = f32[128] all-reduce(%rsd), replica_groups={}, to_apply=%add
  ROOT %sum = f32[1024] add(%c1, %agd)
}
)";

std::unique_ptr<ir::HloModule> Parse(const char* text) {
  auto result = ir::ParseHloText(std::make_shared<ir::SourceBuffer>("t.hlo", text));
  REQUIRE(result.ok());
  REQUIRE(result.modules.size() == 1);
  return std::move(result.modules[0]);
}

const CollectiveOp& Find(const CollectiveResult& result, const std::string& name) {
  for (const CollectiveOp& op : result.ops) {
    if (op.instruction == name) return op;
  }
  FAIL("no collective " << name);
  return result.ops.front();
}

TEST_CASE("collective table: kinds, bytes, groups, loop multipliers") {
  const auto module = Parse(kModule);
  const CollectiveResult result = AnalyzeCollectives(*module);
  REQUIRE(result.ops.size() == 6);  // -done halves are not counted; the async-start is
  CHECK(result.num_devices == 8);

  const CollectiveOp& ar = Find(result, "ar");
  CHECK(ar.loop_multiplier == 6);  // 2 (known_trip_count) x 3 (induction pattern)
  CHECK(ar.trip_count_known);
  CHECK(ar.group_size == 4);
  CHECK(ar.groups() == std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(ar.id_kind == DeviceIdKind::kGlobalDeviceId);
  CHECK(ar.bytes == 4096);
  CHECK(ar.wire_bytes_per_device == 6144);  // 2 * 3/4 * 4096
  CHECK(ar.mesh_axes == "axis 1 of mesh [2,4]");
  CHECK(ar.source == "model.py:12");
  CHECK(ar.op_name == "inner/psum");

  const CollectiveOp& ag = Find(result, "ag");
  CHECK(ag.loop_multiplier == 2);  // called twice
  CHECK(ag.bytes == 4096);         // result bytes
  CHECK(ag.wire_bytes_per_device == 3584);
  CHECK(ag.mesh_axes == "axes 0,1 of mesh [2,4]");

  const CollectiveOp& ags = Find(result, "ags");
  CHECK(ags.kind == ir::CollectiveKind::kAllGather);
  CHECK(ags.bytes == 4096);  // the result half of (operand, result)

  const CollectiveOp& cps = Find(result, "cps");
  CHECK(cps.kind == ir::CollectiveKind::kCollectivePermute);
  CHECK(cps.bytes == 512);
  CHECK(cps.wire_bytes_per_device == 512);
  CHECK(cps.groups().size() == 2);
  CHECK(cps.id_kind == DeviceIdKind::kPartitionId);

  const CollectiveOp& rss = Find(result, "rss");
  CHECK(rss.kind == ir::CollectiveKind::kReduceScatter);
  CHECK(rss.bytes == 4096);  // operand bytes
  CHECK(rss.wire_bytes_per_device == 3584);

  const CollectiveOp& rar = Find(result, "rar");
  CHECK(rar.id_kind == DeviceIdKind::kReplicaId);
  CHECK(rar.group_size == 1);  // replica_count 1: all participants = one device
  CHECK(rar.wire_bytes_per_device == 0);

  CHECK(result.by_kind.at("all-gather").count == 2);
  CHECK(result.by_kind.at("all-gather").executions == 3);
  CHECK(result.total_wire_bytes_per_device == 6 * 6144 + 2 * 3584 + 3584 + 512 + 3584);
}

TEST_CASE("collective operands: only the ones that travel are counted and sized") {
  // An in-place collective-permute (input, output buffer, then offsets) and send (data, token)
  // move their first operand; a combined permute moves all of them.
  const auto module = Parse(R"(HloModule m, num_partitions=2

ENTRY %main (a: f32[8], b: f32[8], c: f32[4]) -> (f32[8], (f32[8], f32[4]), (f32[8], u32[], token[])) {
  %a = f32[8] parameter(0)
  %b = f32[8] parameter(1)
  %c = f32[4] parameter(2)
  %zero = s32[] constant(0)
  %in_place = f32[8] collective-permute(%a, %b, %zero, %zero), channel_id=1, source_target_pairs={{0,1},{1,0}}, slice_sizes={{8}}
  %combined = (f32[8], f32[4]) collective-permute(%a, %c), channel_id=2, source_target_pairs={{0,1},{1,0}}
  %token = token[] after-all()
  %send = (f32[8], u32[], token[]) send(%b, %token), channel_id=3
  ROOT %t = (f32[8], (f32[8], f32[4]), (f32[8], u32[], token[])) tuple(%in_place, %combined, %send)
}
)");
  const CollectiveResult result = AnalyzeCollectives(*module);
  const CollectiveOp& in_place = Find(result, "in_place");
  CHECK(in_place.operand_count == 1);
  CHECK(in_place.bytes == 32);
  const CollectiveOp& combined = Find(result, "combined");
  CHECK(combined.operand_count == 2);
  CHECK(combined.bytes == 48);
  const CollectiveOp& send = Find(result, "send");
  CHECK(send.kind == ir::CollectiveKind::kSend);
  CHECK(send.operand_count == 1);
  CHECK(send.bytes == 32);
}

TEST_CASE("collective times: a group that spans nodes pays the inter-node link") {
  const auto module = Parse(kModule);
  Topology topology;
  topology.name = "two nodes of 4";
  topology.devices_per_node = 4;
  topology.intra_node = {"nvlink", 1.0, 100.0};
  topology.inter_node = LinkClass{"ib", 10.0, 10.0};
  const CollectiveResult result = AnalyzeCollectives(*module, {&topology});

  const CollectiveOp& ar = Find(result, "ar");  // groups within a node
  CHECK_FALSE(ar.spans_nodes);
  CHECK(ar.inter_node_bytes == 0);
  CHECK(ar.est_time_us == Approx(6 * 1.0 + 6144 / 100e3));

  const CollectiveOp& ag = Find(result, "ag");  // ring 0..7: hops 3->4 and 7->0 cross
  CHECK(ag.spans_nodes);
  CHECK(ag.inter_node_bytes == 3584 * 2 / 8);
  CHECK(ag.intra_node_bytes == 3584 - 896);
  CHECK(ag.est_time_us == Approx(7 * 10.0 + std::max(2688 / 100e3, 896 / 10e3)));

  const CollectiveOp& cps = Find(result, "cps");  // 0 -> 4 crosses
  CHECK(cps.inter_node_bytes == 512);
  CHECK(result.total_inter_node_bytes + result.total_intra_node_bytes ==
        result.total_wire_bytes_per_device);
}

TEST_CASE("topology JSON: fields and errors") {
  std::string error;
  const auto topology = ParseTopologyJson(
      R"({"name": "t", "devices_per_node": 8,
          "intra_node": {"latency_us": 3, "bus_bandwidth_GBps": 360},
          "inter_node": {"name": "ib", "latency_us": 10, "bus_bandwidth_GBps": 45}})",
      error);
  REQUIRE(topology);
  CHECK(topology->devices_per_node == 8);
  CHECK(topology->intra_node.bus_bandwidth_GBps == 360);
  REQUIRE(topology->inter_node);
  CHECK(topology->inter_node->name == "ib");

  CHECK_FALSE(ParseTopologyJson("[1]", error));
  CHECK_FALSE(ParseTopologyJson(R"({"devices_per_node": 8})", error));
  CHECK(error.find("intra_node") != std::string::npos);
  CHECK_FALSE(ParseTopologyJson(
      R"({"devices_per_node": 8, "intra_node": {"latency_us": 1, "bus_bandwidth_GBps": 0}})",
      error));
  CHECK(error.find("bus_bandwidth_GBps") != std::string::npos);
  // A name of another type is an error, not an exception (fuzz finding: type_error.302).
  const std::string link = R"("intra_node": {"latency_us": 1, "bus_bandwidth_GBps": 100)";
  CHECK_FALSE(ParseTopologyJson(R"({"name": 7, "devices_per_node": 8, )" + link + "}}", error));
  CHECK(error == "topology: \"name\" must be a string");
  CHECK_FALSE(ParseTopologyJson(
      R"({"devices_per_node": 8, "intra_node": {"name": [], "latency_us": 1, "bus_bandwidth_GBps": 1}})",
      error));
  CHECK(error == "topology: \"intra_node.name\" must be a string");
}

}  // namespace
}  // namespace spmdsim::passes
