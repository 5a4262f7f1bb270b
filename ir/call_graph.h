// The module's call graph: which computations each computation's instructions call (fusion
// calls=, to_apply=, while body/condition, conditional branches, async wrapped computations...).
// The parser builds it once per module and rejects a cycle (a computation reachable from itself)
// or nesting deeper than kMaxCallNesting with a located error, so every analysis may walk it
// without a depth cap of its own: the order below holds each computation once, and anything
// recursive over calls is bounded by kMaxCallNesting.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace spmdsim::ir {

class HloComputation;
class HloModule;

class CallGraph {
 public:
  // Builds the graph of `module` (its calls resolved). Throws ParseError, at the call that
  // closes the cycle or goes one level too deep, when the graph has a cycle or nests deeper
  // than kMaxCallNesting.
  static CallGraph Build(const HloModule& module);

  // Every computation of the module, each after every computation it calls (callees first;
  // ties in text order). Reverse it for callers first.
  std::span<const HloComputation* const> CalleesFirst() const { return callees_first_; }

 private:
  std::vector<const HloComputation*> callees_first_;
};

}  // namespace spmdsim::ir
