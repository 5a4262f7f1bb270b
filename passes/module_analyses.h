// One module's shared analyses, each built on first use and kept for the rest of the module's
// commands (as XLA's BufferAssignment owns its alias analysis and live ranges, or MLIR's analysis
// manager caches per operation): the dataflow, the buffers after aliasing and the live ranges
// that the memory analysis, the RNG sites and the remat what-if all read. A pass given a
// ModuleAnalyses takes them from it instead of building its own; the overloads that take a bare
// module make a ModuleAnalyses of their own.
//
//   passes::ModuleAnalyses analyses(module);
//   const PeakMemoryResult memory = AnalyzePeakMemory(analyses, options);
//   const RngSiteResult rng = AnalyzeRngSites(analyses, rng_options);  // same dataflow
//   EstimateRematSavings(analyses, memory, rng, options);              // same buffers, ranges
//
// constructions() counts what was built, so a test can hold the pipeline to one of each.
#pragma once

#include <memory>

#include "ir/hlo.h"
#include "passes/memory/buffer_alias_analysis.h"
#include "passes/memory/buffer_dataflow_analysis.h"
#include "passes/memory/live_range_analysis.h"

namespace spmdsim::passes {

class ModuleAnalyses {
 public:
  explicit ModuleAnalyses(const ir::HloModule& module) : module_(module) {}
  ModuleAnalyses(const ModuleAnalyses&) = delete;
  ModuleAnalyses& operator=(const ModuleAnalyses&) = delete;

  const ir::HloModule& module() const { return module_; }
  const DataflowAnalysis& Dataflow();
  const AliasAnalysis& Alias();
  const LiveRangeAnalysis& LiveRanges();

  struct Constructions {
    int dataflow = 0;
    int alias = 0;
    int live_ranges = 0;
  };
  const Constructions& constructions() const { return constructions_; }

 private:
  const ir::HloModule& module_;
  // Held by pointer: each refers to the ones before it, so none may move.
  std::unique_ptr<const DataflowAnalysis> dataflow_;
  std::unique_ptr<const AliasAnalysis> alias_;
  std::unique_ptr<const LiveRangeAnalysis> live_ranges_;
  Constructions constructions_;
};

}  // namespace spmdsim::passes
