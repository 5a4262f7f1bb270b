// spmdsim rng sites FILE|DIR... [--format text|json] [--module NAME] [--all] [--buffers N]
// Lists every random-number site of each module: kind, counter mode, shape, consumers, the
// buffers it materializes and the collectives it causes, what each mode would cost, findings.
#include <iostream>
#include <memory>

#include "analyzer/cli/command.h"
#include "analyzer/cli/module_driver.h"
#include "analyzer/emit/progress.h"
#include "analyzer/model/rng_report.h"
#include "analyzer/views/rng_sites_view.h"
#include "analyzer/views/stats_view.h"

namespace spmdsim::analyzer {
namespace {

struct RngSitesOptions {
  InputOptions input;
  bool all = false;
  int64_t buffers = 4;
};

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
                           passes::ModuleAnalyses analyses(*input.module);
                           const passes::RngSiteResult result = BuildRngReport(input, analyses);
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
  AddJaxVersionOption(*command, options->input.jax_version);
  command->add_flag("--all", options->all, "Also list key-derivation sites (split, fold_in)");
  command->add_option("--buffers", options->buffers, "Buffers listed per site in text")
      ->capture_default_str();
  command->callback([options, &run] { run = [options] { return RunRngSites(*options); }; });
}

}  // namespace spmdsim::analyzer
