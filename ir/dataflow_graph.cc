#include "ir/dataflow_graph.h"

#include <functional>
#include <queue>
#include <unordered_map>

namespace spmdsim::ir {

DataflowGraph BuildDataflowGraph(const HloComputation& computation) {
  const auto& instructions = computation.instructions;
  DataflowGraph graph(instructions.size());
  std::unordered_map<const HloInstruction*, size_t> index;
  index.reserve(instructions.size());
  for (size_t i = 0; i < instructions.size(); ++i) {
    graph[i].instruction = instructions[i];
    index.emplace(instructions[i], i);
  }
  // An operand or predecessor outside the computation (the parser resolves names within it, so
  // none should be) adds no edge.
  const auto add = [&](const HloInstruction* from, size_t to, EdgeKind kind) {
    const auto it = index.find(from);
    if (it != index.end()) boost::add_edge(it->second, to, DataflowEdge{kind}, graph);
  };
  for (size_t i = 0; i < instructions.size(); ++i) {
    for (const HloInstruction* operand : instructions[i]->operands)
      add(operand, i, EdgeKind::kData);
    for (const HloInstruction* pred : instructions[i]->control_predecessors()) {
      add(pred, i, EdgeKind::kControl);
    }
  }
  return graph;
}

std::optional<std::vector<HloInstruction*>> DependencyOrder(const HloComputation& computation) {
  const DataflowGraph graph = BuildDataflowGraph(computation);
  const size_t n = boost::num_vertices(graph);
  std::vector<size_t> pending(n, 0);
  for (size_t v = 0; v < n; ++v) pending[v] = boost::in_degree(v, graph);
  // Smallest text position first keeps the order stable and close to the text.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t v = 0; v < n; ++v) {
    if (pending[v] == 0) ready.push(v);
  }
  std::vector<HloInstruction*> order;
  order.reserve(n);
  while (!ready.empty()) {
    const size_t v = ready.top();
    ready.pop();
    order.push_back(graph[v].instruction);
    for (auto [it, end] = boost::out_edges(v, graph); it != end; ++it) {
      const size_t user = boost::target(*it, graph);
      if (--pending[user] == 0) ready.push(user);
    }
  }
  if (order.size() != n) return std::nullopt;
  return order;
}

}  // namespace spmdsim::ir
