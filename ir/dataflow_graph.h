// A Boost.Graph view of one computation's dataflow: a vertex per instruction (in text order), an
// edge operand -> user, plus control-predecessor edges. Lets analyses use Boost's algorithms
// (topological sort, reachability) instead of hand-written traversals.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <optional>
#include <vector>

#include "ir/hlo.h"

namespace spmdsim::ir {

struct DataflowVertex {
  HloInstruction* instruction = nullptr;
};
enum class EdgeKind { kData, kControl };
struct DataflowEdge {
  EdgeKind kind = EdgeKind::kData;
};

using DataflowGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS,
                                            DataflowVertex, DataflowEdge>;

// Vertex i is computation.instructions[i].
DataflowGraph BuildDataflowGraph(const HloComputation& computation);

// A deterministic order in which every instruction follows its operands and control
// predecessors: Kahn's algorithm, ties broken by text position. nullopt when there is a cycle.
std::optional<std::vector<HloInstruction*>> DependencyOrder(const HloComputation& computation);

}  // namespace spmdsim::ir
