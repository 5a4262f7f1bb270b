#include "ir/call_graph.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/hlo.h"
#include "ir/limits.h"
#include "ir/source.h"

namespace spmdsim::ir {
namespace {

// File offset of `text` when it is a view into the module's source; `fallback` otherwise (names
// the parser made up, e.g. for XLA's async syntax sugar, live in the module's arena).
size_t OffsetIn(const HloModule& module, std::string_view text, size_t fallback) {
  if (module.source == nullptr || text.empty()) return fallback;
  const std::string_view source = module.source->text();
  const auto* begin = source.data();
  if (text.data() < begin || text.data() > begin + source.size()) return fallback;
  return module.SourceOffset(text);
}

// Where the call of `callee` is written on `caller`: the callee's name inside the attribute
// that names it, or the caller's name when the parser made the call up.
size_t CallOffset(const HloInstruction& caller, const CalledComputation& called) {
  const HloModule& module = *caller.parent->parent;
  const size_t at_caller = OffsetIn(module, caller.name, caller.parent->offset);
  const std::string_view value = caller.FindAttribute(called.role);
  const size_t at_value = OffsetIn(module, value, at_caller);
  if (at_value == at_caller) return at_caller;
  size_t found = value.find(called.computation->name);
  if (found == std::string_view::npos) return at_value;
  if (found > 0 && value[found - 1] == '%') --found;
  return at_value + found;
}

std::string Name(const HloComputation& computation) { return "%" + std::string(computation.name); }

// An edge caller -> callee for each call: the instruction and which of its calls.
struct Call {
  const HloInstruction* instruction = nullptr;
  size_t index = 0;
};
using Graph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, Call>;

// Boost's depth-first search (iterative, vertices and calls in text order): a computation is
// finished once all it calls are, and a back edge (a call of one still on the path) is a cycle.
class CycleAndOrder : public boost::default_dfs_visitor {
 public:
  CycleAndOrder(const HloModule& module, std::vector<const HloComputation*>& order,
                std::vector<size_t>& path)
      : module_(&module), order_(&order), path_(&path) {}
  void discover_vertex(size_t v, const Graph&) { path_->push_back(v); }
  void finish_vertex(size_t v, const Graph&) {
    path_->pop_back();
    order_->push_back(module_->computations[v]);
  }
  void back_edge(const Graph::edge_descriptor& e, const Graph& graph) const {
    const Call& call = graph[e];
    const HloComputation* callee = module_->computations[boost::target(e, graph)];
    // The cycle is the path from the callee to here, then the callee again.
    std::string cycle;
    bool in_cycle = false;
    for (size_t v : *path_) {
      const HloComputation* on_path = module_->computations[v];
      in_cycle = in_cycle || on_path == callee;
      if (in_cycle) cycle += Name(*on_path) + " -> ";
    }
    cycle += Name(*callee);
    const CalledComputation& called = call.instruction->called_computations()[call.index];
    const std::string what =
        callee == call.instruction->parent
            ? "computation " + Name(*callee) + " calls itself"
            : "computation " + Name(*callee) + " calls itself through " + cycle;
    throw ParseError{
        CallOffset(*call.instruction, called),
        what + " (" + std::string(called.role) + "=); an HLO module's calls cannot form a cycle"};
  }

 private:
  const HloModule* module_;
  std::vector<const HloComputation*>* order_;
  std::vector<size_t>* path_;
};

}  // namespace

CallGraph CallGraph::Build(const HloModule& module) {
  CallGraph graph;
  std::unordered_map<const HloComputation*, size_t> vertex;
  for (size_t v = 0; v < module.computations.size(); ++v) vertex.emplace(module.computations[v], v);
  Graph calls(module.computations.size());
  for (size_t v = 0; v < module.computations.size(); ++v) {
    for (const HloInstruction* instr : module.computations[v]->instructions) {
      const auto& called = instr->called_computations();
      for (size_t k = 0; k < called.size(); ++k) {
        const auto it =
            called[k].computation == nullptr ? vertex.end() : vertex.find(called[k].computation);
        if (it != vertex.end()) boost::add_edge(v, it->second, Call{instr, k}, calls);
      }
    }
  }
  std::vector<size_t> path;
  std::vector<boost::default_color_type> colors(module.computations.size());
  boost::depth_first_search(
      calls, CycleAndOrder(module, graph.callees_first_, path),
      boost::make_iterator_property_map(colors.begin(), boost::get(boost::vertex_index, calls)));

  // Longest chains, callers first: a computation's depth is final before its callees are seen.
  std::unordered_map<const HloComputation*, int> depth;
  for (auto it = graph.callees_first_.rbegin(); it != graph.callees_first_.rend(); ++it) {
    const int below = depth[*it] + 1;
    for (const HloInstruction* instr : (*it)->instructions) {
      for (const CalledComputation& called : instr->called_computations()) {
        if (called.computation == nullptr) continue;
        if (below > kMaxCallNesting) {
          throw ParseError{CallOffset(*instr, called),
                           "calls nest more than " + std::to_string(kMaxCallNesting) +
                               " levels deep here (" + Name(*called.computation) + " is call " +
                               std::to_string(below) +
                               " of a chain); spmdsim reads modules nested at most " +
                               std::to_string(kMaxCallNesting) + " levels"};
        }
        int& d = depth[called.computation];
        d = std::max(d, below);
      }
    }
  }
  return graph;
}

}  // namespace spmdsim::ir
