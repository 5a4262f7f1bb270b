// spmdsim stats FILE|DIR... [--format text|json] [--module NAME]
#include <iostream>
#include <memory>

#include "analyzer/cli/command.h"
#include "analyzer/views/stats_view.h"
#include "passes/stats_analysis.h"

namespace spmdsim::analyzer {
namespace {

int RunStats(const InputOptions& options) {
  LoadedOrExit loaded = LoadAllInputs(options);
  if (loaded.exit_code != kExitOk) return loaded.exit_code;
  nlohmann::ordered_json modules = nlohmann::ordered_json::array();
  bool first = true;
  for (const dump::ModuleInput& input : loaded.modules) {
    const passes::StatsResult stats = passes::ComputeStats(*input.module);
    if (options.format == "json") {
      nlohmann::ordered_json module = ModuleIdentityJson(input);
      module["stats"] = StatsToJson(stats);
      modules.push_back(std::move(module));
    } else {
      if (!first) std::cout << "\n";
      PrintStatsText(input, stats, std::cout);
    }
    first = false;
  }
  if (options.format == "json") {
    PrintModulesJson(std::move(modules), std::cout);
  }
  return kExitOk;
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
