// spmdsim rng sites FILE|DIR... [--format text|json] [--module NAME] [--all] [--buffers N]
// Lists every random-number site of each module: kind, counter mode, shape, consumers, the
// buffers it materializes and the collectives it causes, what each mode would cost, findings.
#include <iostream>
#include <memory>

#include "analyzer/cli/command.h"
#include "analyzer/cli/module_driver.h"
#include "analyzer/emit/progress.h"
#include "analyzer/model/module_platform.h"
#include "analyzer/model/module_stage.h"
#include "analyzer/views/rng_sites_view.h"
#include "analyzer/views/stats_view.h"
#include "passes/memory/memory_analysis.h"
#include "passes/rng/rng_remat_saving.h"
#include "passes/rng/rng_site_analysis.h"

namespace spmdsim::analyzer {
namespace {

struct RngSitesOptions {
  InputOptions input;
  bool all = false;
  int64_t buffers = 4;
};

// The saving at the peak of recomputing the key residuals (sized per device from the shardings
// for a module not partitioned yet, as `analyze` does).
void AddRematWhatIf(const dump::ModuleInput& input, passes::ModuleAnalyses& analyses,
                    passes::RngSiteResult& result) {
  bool residuals = false;
  for (const passes::RngFinding& f : result.findings)
    residuals |= f.kind == passes::FindingKind::kRngKeyResidual;
  if (!residuals) return;
  passes::MemoryAnalysisOptions memory;
  memory.platform = MemoryProfileOf(input);
  memory.per_device_from_shardings = IsUnpartitioned(input);
  memory.timeline_points = 1;
  memory.live_at_peak_limit = 1;
  const passes::PeakMemoryResult baseline = passes::AnalyzePeakMemory(analyses, memory);
  passes::EstimateRematSavings(analyses, baseline, result, memory);
}

int RunRngSites(const RngSitesOptions& options) {
  LoadedOrExit loaded = LoadAllInputs(options.input);
  if (loaded.exit_code != kExitOk) return loaded.exit_code;
  RngSitesViewOptions view;
  view.show_key_sites = options.all;
  view.buffers_per_site = options.buffers;
  return WriteEachModule(loaded.modules, options.input.format, std::cout,
                         [&](size_t, const dump::ModuleInput& input, nlohmann::ordered_json* json,
                             std::ostream* text) {
                           Progress::Get().Update(std::string(input.module->name) + ": rng sites");
                           passes::RngSiteOptions rng_options;
                           rng_options.stage = StageHintOf(input);
                           rng_options.platform = MemoryProfileOf(input).platform;
                           passes::ModuleAnalyses analyses(*input.module);
                           passes::RngSiteResult result =
                               passes::AnalyzeRngSites(analyses, rng_options);
                           AddRematWhatIf(input, analyses, result);
                           Progress::Get().Clear();
                           if (json != nullptr) {
                             (*json)["num_partitions"] = result.num_partitions;
                             nlohmann::ordered_json rng = RngSitesToJson(result);
                             (*json)["findings"] = rng["findings"];
                             (*json)["rng"] = std::move(rng);
                           }
                           if (text != nullptr) PrintRngSitesText(input, result, view, *text);
                         });
}

}  // namespace

void RegisterRngSitesSubcommand(CLI::App& rng, RunFn& run) {
  auto options = std::make_shared<RngSitesOptions>();
  CLI::App* command = rng.add_subcommand(
      "sites",
      "Find every random-number site of a dump: mode, buffers, collectives, what-if per mode");
  AddInputOptions(*command, options->input);
  command->add_flag("--all", options->all, "Also list key-derivation sites (split, fold_in)");
  command->add_option("--buffers", options->buffers, "Buffers listed per site in text")
      ->capture_default_str();
  command->callback([options, &run] { run = [options] { return RunRngSites(*options); }; });
}

}  // namespace spmdsim::analyzer
