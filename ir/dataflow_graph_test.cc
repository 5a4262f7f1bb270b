#include "ir/dataflow_graph.h"

#include <catch2/catch.hpp>

#include "ir/parser.h"

namespace spmdsim::ir {
namespace {

TEST_CASE("dependency order puts operands and control predecessors first") {
  // Text order deliberately lists a user before its operand (legal in unscheduled HLO).
  auto result = ParseHloText(std::make_shared<SourceBuffer>("t.hlo", R"(HloModule m
ENTRY %e (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %b = f32[4]{0} negate(%a)
  %a = f32[4]{0} exponential(%p)
  %c = f32[4]{0} copy(%p), control-predecessors={%b}
  ROOT %d = f32[4]{0} add(%b, %c)
}
)"));
  REQUIRE(result.ok());
  const HloComputation& entry = *result.modules[0]->entry;
  const DataflowGraph graph = BuildDataflowGraph(entry);
  CHECK(boost::num_vertices(graph) == 5);
  CHECK(boost::num_edges(graph) == 6);
  auto order = DependencyOrder(entry);
  REQUIRE(order);
  std::vector<std::string_view> names;
  for (const HloInstruction* instr : *order) names.push_back(instr->name);
  CHECK(names == std::vector<std::string_view>{"p", "a", "b", "c", "d"});
}

TEST_CASE("a cycle has no dependency order") {
  auto result = ParseHloText(std::make_shared<SourceBuffer>("t.hlo", R"(HloModule m
ENTRY %e {
  %a = f32[] negate(%b)
  ROOT %b = f32[] negate(%a)
}
)"));
  REQUIRE(result.ok());
  CHECK_FALSE(DependencyOrder(*result.modules[0]->entry));
}

}  // namespace
}  // namespace spmdsim::ir
