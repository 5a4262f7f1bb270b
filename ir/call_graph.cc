#include "ir/call_graph.h"

#include <algorithm>
#include <string>
#include <unordered_map>

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

struct Frame {
  const HloComputation* computation;
  size_t instruction = 0;  // next instruction to look at
  size_t call = 0;         // next call of that instruction
};

}  // namespace

CallGraph CallGraph::Build(const HloModule& module) {
  CallGraph graph;
  enum class State : unsigned char { kNew, kOnPath, kDone };
  std::unordered_map<const HloComputation*, State> state;
  for (const HloComputation* c : module.computations) state.emplace(c, State::kNew);

  // Depth-first from every computation in text order, with an explicit stack: a computation is
  // appended once all it calls are; meeting one that is still on the path is a cycle.
  std::vector<Frame> path;
  for (const HloComputation* start : module.computations) {
    if (state[start] != State::kNew) continue;
    state[start] = State::kOnPath;
    path.push_back({start});
    while (!path.empty()) {
      Frame& frame = path.back();
      const auto& instructions = frame.computation->instructions;
      if (frame.instruction == instructions.size()) {
        state[frame.computation] = State::kDone;
        graph.callees_first_.push_back(frame.computation);
        path.pop_back();
        continue;
      }
      const HloInstruction* instr = instructions[frame.instruction];
      const auto& calls = instr->called_computations();
      if (frame.call >= calls.size()) {
        ++frame.instruction;
        frame.call = 0;
        continue;
      }
      const CalledComputation& called = calls[frame.call++];
      const HloComputation* callee = called.computation;
      if (callee == nullptr) continue;
      auto it = state.find(callee);
      if (it == state.end() || it->second == State::kDone) continue;
      if (it->second == State::kOnPath) {
        // The cycle is the path from the callee's frame to here, then the callee again.
        std::string cycle;
        bool in_cycle = false;
        for (const Frame& f : path) {
          in_cycle = in_cycle || f.computation == callee;
          if (in_cycle) cycle += Name(*f.computation) + " -> ";
        }
        cycle += Name(*callee);
        const std::string what =
            callee == instr->parent
                ? "computation " + Name(*callee) + " calls itself"
                : "computation " + Name(*callee) + " calls itself through " + cycle;
        throw ParseError{CallOffset(*instr, called),
                         what + " (" + std::string(called.role) +
                             "=); an HLO module's calls cannot form a cycle"};
      }
      it->second = State::kOnPath;
      path.push_back({callee});
    }
  }

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
