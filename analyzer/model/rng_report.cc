#include "analyzer/model/rng_report.h"

#include <charconv>
#include <memory>

#include "analyzer/model/module_platform.h"
#include "analyzer/model/module_stage.h"
#include "dump/module_loader.h"
#include "passes/rng/rng_remat_saving.h"

namespace spmdsim::analyzer {

namespace {

// The module before optimizations beside `input` (its global shapes), for sites whose device
// offsets the dump elides; null when there is no such file or it does not load.
std::unique_ptr<ir::HloModule> SourceModule(const dump::ModuleInput& input) {
  if (input.files.before_optimizations.empty()) return nullptr;
  dump::LoadOptions load;
  load.stage = dump::ModuleStageName(dump::ModuleStage::kBeforeOptimizations);
  dump::LoadOutcome loaded = dump::LoadInputs(input.files.before_optimizations, load);
  if (loaded.failure || loaded.inputs.modules.size() != 1) return nullptr;
  return std::move(loaded.inputs.modules.front().module);
}

}  // namespace

std::optional<std::array<int64_t, 3>> ParseJaxVersion(std::string_view text) {
  if (!text.empty() && (text.front() == 'v' || text.front() == 'V')) text.remove_prefix(1);
  std::array<int64_t, 3> version{0, 0, 0};
  const char* at = text.data();
  const char* const end = text.data() + text.size();
  size_t parts = 0;
  while (parts < version.size()) {
    if (parts > 0) {
      if (at == end || *at != '.') break;
      ++at;
    }
    if (at == end || *at < '0' || *at > '9') break;  // no sign
    const auto [next, error] = std::from_chars(at, end, version[parts]);
    if (error != std::errc()) break;
    at = next;
    ++parts;
  }
  // MAJOR.MINOR at least; whatever follows the numbers (".dev...", "rc1") is a suffix.
  if (parts < 2) return std::nullopt;
  return version;
}

passes::ConcatLowering ConcatLoweringOf(std::string_view jax_version) {
  const auto version = ParseJaxVersion(jax_version);
  if (version && *version < std::array<int64_t, 3>{0, 5, 0}) {
    return passes::ConcatLowering::kAllReduce;
  }
  return passes::ConcatLowering::kAllGather;
}

passes::MemoryAnalysisOptions SizedMemoryOptions(const dump::ModuleInput& input,
                                                 passes::MemoryAnalysisOptions base,
                                                 bool per_device_for_unpartitioned,
                                                 passes::ModuleAnalyses* analyses) {
  base.platform = MemoryProfileOf(input, analyses);
  base.per_device_from_shardings = per_device_for_unpartitioned && IsUnpartitioned(input);
  return base;
}

passes::RngSiteResult BuildRngReport(const dump::ModuleInput& input,
                                     passes::ModuleAnalyses& analyses,
                                     const RngReportInputs& inputs) {
  passes::MemoryAnalysisOptions memory;
  if (inputs.memory != nullptr) {
    memory = *inputs.memory;
  } else {
    // The what-if needs the peak's size only, not its curve or listing.
    memory.timeline_points = 1;
    memory.live_at_peak_limit = 1;
    memory = SizedMemoryOptions(input, memory, /*per_device_for_unpartitioned=*/true, &analyses);
  }
  passes::RngSiteOptions options;
  options.collectives = inputs.collectives;
  options.stage = StageHintOf(input);
  options.platform = memory.platform.platform;
  options.concat = ConcatLoweringOf(input.jax_version);
  passes::RngSiteResult rng = passes::AnalyzeRngSites(analyses, options);
  if (passes::SomeSitesSizableFromSource(rng)) {
    // Loaded only when needed: a before-optimizations module is as large as the optimized one.
    const std::unique_ptr<ir::HloModule> source = SourceModule(input);
    if (source != nullptr) passes::SizesFromSource(analyses, options, *source, rng);
  }

  bool residuals = false;
  for (const passes::RngFinding& f : rng.findings)
    residuals |= f.kind == passes::FindingKind::kRngKeyResidual;
  if (!residuals) return rng;
  if (inputs.baseline != nullptr) {
    passes::EstimateRematSavings(analyses, *inputs.baseline, rng, memory);
  } else {
    const passes::PeakMemoryResult baseline = passes::AnalyzePeakMemory(analyses, memory);
    passes::EstimateRematSavings(analyses, baseline, rng, memory);
  }
  return rng;
}

}  // namespace spmdsim::analyzer
