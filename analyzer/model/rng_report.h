// The RNG sites of one module as `rng sites` and `report` give them, wired once: the passes are
// told the stage and platform the dump names, and where a key residual is found, the remat
// what-if's saving is sized as `analyze` sizes the module.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "dump/module_loader.h"
#include "passes/collectives/collective_analysis.h"
#include "passes/memory/memory_analysis.h"
#include "passes/module_analyses.h"
#include "passes/rng/rng_site_analysis.h"

namespace spmdsim::analyzer {

// `base` with the platform profile the dump names (or --platform) and, for a module not
// partitioned yet when `per_device_for_unpartitioned`, sizes per device from its shardings.
// `analyses` (may be null) keeps what deciding the platform scans.
passes::MemoryAnalysisOptions SizedMemoryOptions(const dump::ModuleInput& input,
                                                 passes::MemoryAnalysisOptions base = {},
                                                 bool per_device_for_unpartitioned = true,
                                                 passes::ModuleAnalyses* analyses = nullptr);

// A JAX release "MAJOR.MINOR[.PATCH]" (a leading "v" and a suffix after the numbers, such as
// ".dev20250101" or "rc1", are allowed); nullopt when `text` is not one.
std::optional<std::array<int64_t, 3>> ParseJaxVersion(std::string_view text);

// How the XLA of that JAX release partitions replicated threefry's concatenation of its halves:
// all-reduced before jaxlib 0.5.0, all-gathered since (tools/research/concat_lowering/, measured
// on jaxlib 0.4.30 to 0.10.2); today's for an empty or unparsable version.
passes::ConcatLowering ConcatLoweringOf(std::string_view jax_version);

struct RngReportInputs {
  // What the caller already has of the module; nullptr = computed here when needed.
  const passes::CollectiveResult* collectives = nullptr;
  // The module's peak, sized by `memory`.
  const passes::PeakMemoryResult* baseline = nullptr;
  // The sizing of the remat what-if; nullptr = SizedMemoryOptions(input).
  const passes::MemoryAnalysisOptions* memory = nullptr;
};

passes::RngSiteResult BuildRngReport(const dump::ModuleInput& input,
                                     passes::ModuleAnalyses& analyses,
                                     const RngReportInputs& inputs = {});

}  // namespace spmdsim::analyzer
