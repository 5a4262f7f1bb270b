// spmdsim rng sites FILE|DIR... [--format text|json] [--module NAME] [--all] [--buffers N]
// Lists every random-number site of each module: kind, counter mode, shape, consumers, the
// buffers it materializes and the collectives it causes, what each mode would cost, findings.
#include <iostream>
#include <memory>

#include "analyzer/cli/command.h"
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
  nlohmann::ordered_json modules = nlohmann::ordered_json::array();
  RngSitesViewOptions view;
  view.show_key_sites = options.all;
  view.buffers_per_site = options.buffers;
  bool first = true;
  for (const dump::ModuleInput& input : loaded.modules) {
    Progress::Get().Update(std::string(input.module->name) + ": rng sites");
    passes::RngSiteOptions rng_options;
    rng_options.stage = StageHintOf(input);
    passes::ModuleAnalyses analyses(*input.module);
    passes::RngSiteResult result = passes::AnalyzeRngSites(analyses, rng_options);
    AddRematWhatIf(input, analyses, result);
    Progress::Get().Clear();
    if (options.input.format == "json") {
      nlohmann::ordered_json module = ModuleIdentityJson(input);
      module["num_partitions"] = result.num_partitions;
      nlohmann::ordered_json rng = RngSitesToJson(result);
      module["findings"] = rng["findings"];
      module["rng"] = std::move(rng);
      modules.push_back(std::move(module));
    } else {
      if (!first) std::cout << "\n";
      PrintRngSitesText(input, result, view, std::cout);
    }
    first = false;
  }
  if (options.input.format == "json") {
    PrintModulesJson(std::move(modules), std::cout);
  }
  std::cout.flush();
  return std::cout.good() ? kExitOk : kExitUsage;
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
