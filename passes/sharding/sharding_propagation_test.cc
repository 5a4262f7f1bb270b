#include "passes/sharding/sharding_propagation.h"

#include <catch2/catch.hpp>
#include <map>
#include <memory>

#include "ir/parser.h"

namespace spmdsim::passes {
namespace {

std::unique_ptr<ir::HloModule> Parse(const char* text) {
  auto parsed = ir::ParseHloText(std::make_shared<ir::SourceBuffer>("t.hlo", text));
  REQUIRE(parsed.ok());
  REQUIRE(parsed.modules.size() == 1);
  return std::move(parsed.modules[0]);
}

std::map<std::string, std::string> Shardings(const ShardingPropagationResult& r) {
  return {r.entry_shardings.begin(), r.entry_shardings.end()};
}

// A data-parallel step in miniature: the forward matmul keeps the batch split, the weight
// gradient contracts it (a partial sum), and so does the loss.
constexpr const char* kDataParallel =
    R"(HloModule dp, num_partitions=8, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["data"=8]>}}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (w: f32[64,256], x: f32[16,64], dy: f32[16,256]) -> (f32[64,256], f32[]) {
  %w = f32[64,256] parameter(0), sharding={replicated}
  %x = f32[16,64] parameter(1), sharding={devices=[8,1]<=[8]}
  %dy = f32[16,256] parameter(2), sharding={devices=[8,1]<=[8]}
  %y = f32[16,256] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %dw = f32[64,256] dot(%x, %dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}, metadata={op_name="jit(step)/transpose(jvp(mlp))/dot_general"}
  %zero = f32[] constant(0)
  %sum = f32[] reduce(%y, %zero), dimensions={0,1}, to_apply=%add
  %w2 = f32[64,256] subtract(%w, %dw)
  ROOT %out = (f32[64,256], f32[]) tuple(%w2, %sum), sharding={{replicated}, {replicated}}
}
)";

TEST_CASE("forward propagation: batch split through a dot, partial sums where it is contracted") {
  const auto module = Parse(kDataParallel);
  const ShardingPropagationResult r = PropagateShardings(*module);
  CHECK(r.mesh.names == std::vector<std::string>{"data"});
  const auto s = Shardings(r);
  CHECK(s.at("y") == "[{data}, {}]");
  CHECK(s.at("dw") == "[{}, {}]");
  CHECK(s.at("w2") == "[{}, {}]");
  REQUIRE(r.needs.size() == 2);
  CHECK(r.needs[0].kind == CommunicationNeed::Kind::kPartialSum);
  CHECK(r.needs[0].rule == "dot");
  CHECK(r.needs[0].instruction->name == "dw");
  CHECK(r.needs[0].axes == std::vector<int>{0});
  CHECK(r.needs[0].op_name == "jit(step)/transpose(jvp(mlp))/dot_general");
  CHECK(r.needs[1].rule == "reduce");
  CHECK(r.needs[1].depends_on.empty());  // the loss does not wait for the gradient
  CHECK(r.unknown_instructions == 0);
}

// A loop of known trip count and a computation called from two places.
constexpr const char* kLoopsAndCalls = R"(HloModule loops, num_partitions=8

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%total (v: f32[16,8]) -> f32[8] {
  %v = f32[16,8] parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[8] reduce(%v, %z), dimensions={0}, to_apply=%add
}

%body (p: (s32[], f32[16,8], f32[8])) -> (s32[], f32[16,8], f32[8]) {
  %p = (s32[], f32[16,8], f32[8]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %v = f32[16,8] get-tuple-element(%p), index=1
  %acc = f32[8] get-tuple-element(%p), index=2
  %g = f32[8] call(%v), to_apply=%total
  %acc2 = f32[8] add(%acc, %g)
  %one = s32[] constant(1)
  %i2 = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[16,8], f32[8]) tuple(%i2, %v, %acc2)
}

%cond (p: (s32[], f32[16,8], f32[8])) -> pred[] {
  %p = (s32[], f32[16,8], f32[8]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main (x: f32[16,8]) -> f32[8] {
  %x = f32[16,8] parameter(0), sharding={devices=[8,1]<=[8]}
  %zero = s32[] constant(0)
  %fz = f32[] constant(0)
  %acc = f32[8] broadcast(%fz), dimensions={}
  %init = (s32[], f32[16,8], f32[8]) tuple(%zero, %x, %acc)
  %loop = (s32[], f32[16,8], f32[8]) while(%init), condition=%cond, body=%body
  %once = f32[8] call(%x), to_apply=%total
  %sum = f32[8] get-tuple-element(%loop), index=2
  ROOT %r = f32[8] add(%sum, %once)
}
)";

TEST_CASE("calls are walked per call site, loop bodies with their trip count") {
  const auto module = Parse(kLoopsAndCalls);
  const ShardingPropagationResult r = PropagateShardings(*module);
  REQUIRE(r.needs.size() == 2);
  // In text order: the loop body's call first (4 runs per step), then the direct call.
  CHECK(r.needs[0].multiplier == 4);
  CHECK(r.needs[0].multiplier_known);
  CHECK(r.needs[0].loop >= 0);
  CHECK(r.needs[1].multiplier == 1);
  CHECK(r.needs[1].loop == -1);
  CHECK(r.needs[0].instruction == r.needs[1].instruction);  // the same reduce, twice
  CHECK(Shardings(r).at("loop") == "[], [{axis0}, {}], [{}]");
}

// A with_sharding_constraint-style annotation that disagrees with the propagated sharding, an op
// the propagation does not know on split data, and a shard_map region with a psum.
constexpr const char* kConstraintsAndManual = R"(HloModule cm, num_partitions=8

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%body (l: f32[2,64]) -> f32[2,64] {
  %l = f32[2,64] parameter(0)
  ROOT %ps = f32[2,64] all-reduce(%l), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%add
}

ENTRY %main (x: f32[16,64]) -> (f32[16,64], f32[16,64], f32[16,64], f32[]) {
  %x = f32[16,64] parameter(0), sharding={devices=[8,1]<=[8]}
  %gathered = f32[16,64] copy(%x), sharding={replicated}
  %moved = f32[16,64] copy(%x), sharding={devices=[1,8]<=[8]}
  %sorted = f32[16,64] sort(%x), dimensions={1}, to_apply=%add
  %z = f32[] constant(0)
  %lost = f32[] reduce(%sorted, %z), dimensions={0,1}, to_apply=%add
  %local = f32[2,64] custom-call(%x), custom_call_target="xla.sdy.GlobalToLocalShape", frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"axis0\"}, {}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"axis0\"}>"}
  %inside = f32[2,64] call(%local), to_apply=%body
  %global = f32[16,64] custom-call(%inside), custom_call_target="xla.sdy.LocalToGlobalShape", frontend_attributes={xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"axis0\"}, {}]>]>"}
  ROOT %out = (f32[16,64], f32[16,64], f32[16,64], f32[]) tuple(%gathered, %moved, %global, %lost)
}
)";

TEST_CASE("constraints reshard, unknown ops raise nothing, shard_map bodies are manual") {
  const auto module = Parse(kConstraintsAndManual);
  const ShardingPropagationResult r = PropagateShardings(*module);
  std::vector<const CommunicationNeed*> reshards;
  std::vector<const CommunicationNeed*> explicit_ops;
  for (const CommunicationNeed& n : r.needs) {
    if (n.kind == CommunicationNeed::Kind::kReshard) reshards.push_back(&n);
    if (n.kind == CommunicationNeed::Kind::kExplicit) explicit_ops.push_back(&n);
    CHECK(n.kind != CommunicationNeed::Kind::kPartialSum);  // not from the unknown sort
  }
  REQUIRE(reshards.size() == 2);
  CHECK(reshards[0]->instruction->name == "gathered");
  CHECK(reshards[0]->to.IsReplicated());
  CHECK(reshards[1]->instruction->name == "moved");
  REQUIRE(explicit_ops.size() == 1);
  CHECK(explicit_ops[0]->rule == "all-reduce");
  CHECK(r.unknown_instructions >= 2);  // sort and the reduce it feeds
  const auto s = Shardings(r);
  CHECK(s.at("local") == "manual");
  CHECK(s.at("global") == "[{axis0}, {}]");
}

TEST_CASE("a call tree that doubles at every level stops at the walk budget") {
  std::string text =
      "HloModule tree, num_partitions=8\n\n%c0 (a: f32[8]) -> f32[8] {\n"
      "  %a = f32[8] parameter(0)\n  ROOT %n = f32[8] negate(%a)\n}\n\n";
  for (int level = 1; level <= 40; ++level) {
    const std::string me = "c" + std::to_string(level);
    const std::string callee = "c" + std::to_string(level - 1);
    text += "%" + me + " (a: f32[8]) -> f32[8] {\n  %a = f32[8] parameter(0)\n" +
            "  %x = f32[8] call(%a), to_apply=%" + callee + "\n" +
            "  %y = f32[8] call(%x), to_apply=%" + callee + "\n" +
            "  ROOT %z = f32[8] add(%x, %y)\n}\n\n";
  }
  text +=
      "ENTRY %e (p: f32[8]) -> f32[8] {\n  %p = f32[8] parameter(0), sharding={replicated}\n"
      "  ROOT %r = f32[8] call(%p), to_apply=%c40\n}\n";
  auto parsed = ir::ParseHloText(std::make_shared<ir::SourceBuffer>("tree.hlo", text));
  REQUIRE(parsed.ok());
  ShardingPropagationOptions options;
  options.max_instructions_walked = 10000;
  const ShardingPropagationResult r = PropagateShardings(*parsed.modules[0], options);
  CHECK(r.instructions_walked < 20000);
  REQUIRE_FALSE(r.notes.empty());
  CHECK(r.notes.front().find("were not entered") != std::string::npos);
}

}  // namespace
}  // namespace spmdsim::passes
