// Work bounds shared by the libFuzzer targets that run the analyses (passes/analyses_fuzzer.cc,
// analyzer/views_fuzzer.cc). An input whose legitimate work exceeds a bound is skipped, as the
// parser fuzzer caps its device-list expansions (ir/hlo_parser_fuzzer.cc): such inputs are slow by
// design, not by a bug, and a timeout on them would hide the findings behind them.
//
// What is bounded: the instructions of the entry computation with every call site expanded (a
// computation called twice counts twice). Sharding propagation walks a module that way
// (passes/sharding/sharding_propagation.h, up to max_instructions_walked = 20M), so a few KiB of
// text whose computations each call the next twice take minutes under the sanitizers: a 3.4 KiB
// module of 22 such levels walks 12M instructions, 3 s in Release and over 200 s in the fuzz build.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "ir/checked_math.h"
#include "ir/hlo.h"

namespace spmdsim::testing {

// About a second of the fuzz build's sharding propagation.
inline constexpr int64_t kMaxCallSiteInstructions = int64_t{1} << 16;

namespace detail {

// Instructions of `computation` with the computations it calls expanded per call site. A cycle
// (which the parser refuses) counts nothing, so the analyses still see it; nesting deeper than
// `depth_left` counts nothing more, so this never recurses further than that.
inline int64_t CallSiteInstructions(const ir::HloComputation* computation,
                                    std::unordered_map<const ir::HloComputation*, int64_t>& memo,
                                    int depth_left) {
  if (computation == nullptr || depth_left == 0) return 0;
  const auto [it, inserted] = memo.try_emplace(computation, 0);
  if (!inserted) return it->second;  // memoised, or on the current path (a cycle): 0
  int64_t total = 0;
  for (const ir::HloInstruction* instruction : computation->instructions) {
    total = ir::SaturatingAdd(total, 1);
    for (const ir::CalledComputation& called : instruction->called_computations()) {
      total =
          ir::SaturatingAdd(total, CallSiteInstructions(called.computation, memo, depth_left - 1));
    }
  }
  memo[computation] = total;
  return total;
}

}  // namespace detail

// The entry computation's instructions with every call site expanded (saturating).
inline int64_t CallSiteInstructionCount(const ir::HloModule& module) {
  std::unordered_map<const ir::HloComputation*, int64_t> memo;
  return detail::CallSiteInstructions(module.entry, memo, 1024);
}

}  // namespace spmdsim::testing
