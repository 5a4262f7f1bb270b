// Everything spmdsim says about one module, computed once: memory (with XLA's figures beside it),
// collectives (with their time on a topology), RNG sites and findings. `check`, `diff` and
// `report` all render this one structure, so the numbers they print agree with `analyze`,
// `collectives` and `rng sites`.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/model/device_memory.h"
#include "analyzer/model/fit_fixes.h"
#include "analyzer/model/memory_report.h"
#include "dump/module_loader.h"
#include "passes/collectives/collective_analysis.h"
#include "passes/collectives/topology.h"
#include "passes/memory/memory_analysis.h"
#include "passes/module_analyses.h"
#include "passes/rng/rng_site_analysis.h"

namespace spmdsim::analyzer {

struct ModuleReportOptions {
  passes::MemoryAnalysisOptions memory;
  // Collective times are estimated on this topology; nullptr = no time estimates.
  const passes::Topology* topology = nullptr;
  // Size an unpartitioned module (before_optimizations) per device from its shardings.
  bool per_device_for_unpartitioned = true;
  // The device the fit verdict compares the peak with (default: the one the dump names).
  DeviceChoice device;
  // Told each part's name as it starts ("memory", "collectives", "rng sites"), then "done";
  // none when empty. For benchmarks that time the parts (tools/bench_phases.cc).
  std::function<void(std::string_view part)> on_part;
};

struct ModuleReport {
  const dump::ModuleInput* input = nullptr;
  // Not yet partitioned by XLA's SPMD partitioner (a before_optimizations module, or one with
  // no partitions): its sizes and collectives are estimates.
  bool unpartitioned = false;
  MemoryReport memory;
  passes::CollectiveResult collectives;
  passes::RngSiteResult rng;
  FitVerdict fit;  // the peak against the device's usable memory
  FitFixes fixes;  // ranked by the peak each gives (fit_fixes.h)
};

// Memory, collectives, RNG sites, the remat what-if, the fit verdict and the ranked fixes on one
// set of shared analyses (built here when `analyses` is null): the dataflow, buffers and live
// ranges are built once per module.
ModuleReport BuildModuleReport(const dump::ModuleInput& input, const ModuleReportOptions& options,
                               passes::ModuleAnalyses* analyses = nullptr);

// The ranked fixes of a module whose memory is already analysed (`baseline`, sized by `memory`):
// its RNG sites are analysed here when `rng` is null (analyze, which has only the memory).
FitFixes BuildFitFixes(const dump::ModuleInput& input, passes::ModuleAnalyses& analyses,
                       const passes::PeakMemoryResult& baseline,
                       const passes::MemoryAnalysisOptions& memory, const FitVerdict& verdict,
                       const passes::RngSiteResult* rng = nullptr);

}  // namespace spmdsim::analyzer
