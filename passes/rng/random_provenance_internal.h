// Internal to passes/rng/random_provenance*.cc: what the provenance's files share.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "ir/hlo.h"
#include "passes/memory/buffer_dataflow_analysis.h"
#include "passes/rng/random_provenance.h"

namespace spmdsim::passes {

// The sources of a module's random bits (random_provenance_sources.cc).
struct FoundSources {
  std::vector<RandomSource> sources;
  std::vector<int64_t> lanes;  // per source: its unrolled hash's lane elements, else -1
  // Instructions where a draw's bits start (its rotations, the loop, the custom call, the
  // generator, Philox's rounds) -> source.
  std::unordered_map<const ir::HloInstruction*, int32_t> starts;
  // Computations of a Philox expansion -> its source: what they compute from the generator's
  // state is the generator's own work.
  std::unordered_map<const ir::HloComputation*, int32_t> generators;
};
FoundSources FindRandomSources(const DataflowAnalysis& dataflow);

// What the counter walk does at a slot: count it (neither data nor bits), go through it without
// counting (a key the hash adds into its counters), or stop.
enum class CounterWalk : uint8_t { kCounters, kThrough, kStop };

// Marks the counters of draw `s`, whose hash starts at the control-flow instruction `top`.
// `is_hash`: an instruction holding a hash or generator (another draw's: the key derivation
// whose output a generator's state is prepared from ends the walk there).
void FindDrawCounters(const DataflowAnalysis& dataflow, const ir::HloInstruction& top, int32_t s,
                      const std::function<CounterWalk(int32_t slot, int32_t source)>& walk,
                      const std::function<bool(const ir::HloInstruction*)>& is_hash,
                      std::vector<RandomKind>& kind, std::vector<int32_t>& source);

}  // namespace spmdsim::passes
