// spmdsim stats FILE|DIR... [--format text|json] [--module NAME]
#include <iostream>
#include <memory>

#include "analyzer/cli/command.h"
#include "analyzer/cli/module_driver.h"
#include "analyzer/views/stats_view.h"
#include "passes/stats_analysis.h"

namespace spmdsim::analyzer {
namespace {

int RunStats(const InputOptions& options) {
  LoadedOrExit loaded = LoadAllInputs(options);
  if (loaded.exit_code != kExitOk) return loaded.exit_code;
  return WriteEachModule(
      loaded.modules, options.format, std::cout,
      [](size_t, const dump::ModuleInput& input, nlohmann::ordered_json* json, std::ostream* text) {
        const passes::StatsResult stats = passes::ComputeStats(*input.module);
        if (json != nullptr) (*json)["stats"] = StatsToJson(stats);
        if (text != nullptr) PrintStatsText(input, stats, *text);
      });
}

}  // namespace

void RegisterStatsCommand(CLI::App& app, RunFn& run) {
  auto options = std::make_shared<InputOptions>();
  CLI::App* command =
      app.add_subcommand("stats", "Count computations, instructions, collectives and bytes");
  AddInputOptions(*command, *options);
  command->callback([options, &run] { run = [options] { return RunStats(*options); }; });
}

}  // namespace spmdsim::analyzer
