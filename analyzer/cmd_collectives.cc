// spmdsim collectives FILE|DIR... [--topology NAME|FILE] [--devices-per-node N]
//                                 [--format text|json] [--module NAME]
#include <iostream>
#include <memory>

#include "analyzer/collectives_view.h"
#include "analyzer/command.h"
#include "analyzer/stats_view.h"
#include "analyzer/topology_presets.h"

namespace spmdsim::analyzer {
namespace {

struct CollectivesOptions {
  InputOptions input;
  std::string topology = "h100-8x-nvswitch";  // the commonest 8-device machine
  int64_t devices_per_node = 0;               // 0 = the topology's own
  size_t max_ops = 30;
};

int RunCollectives(const CollectivesOptions& options) {
  std::string error;
  std::optional<passes::Topology> topology = LoadTopology(options.topology, error);
  if (!topology) {
    std::cerr << "error: " << error << "\n";
    return kExitUsage;
  }
  if (options.devices_per_node > 0) topology->devices_per_node = options.devices_per_node;
  LoadedOrExit loaded = LoadAllInputs(options.input);
  if (loaded.exit_code != kExitOk) return loaded.exit_code;
  nlohmann::ordered_json modules = nlohmann::ordered_json::array();
  bool first = true;
  for (const ModuleInput& input : loaded.modules) {
    passes::CollectiveOptions analysis;
    analysis.topology = &*topology;
    const passes::CollectiveResult result = passes::AnalyzeCollectives(*input.module, analysis);
    if (options.input.format == "json") {
      nlohmann::ordered_json module = ModuleIdentityJson(input);
      module["collectives"] = CollectivesToJson(result);
      modules.push_back(std::move(module));
    } else {
      if (!first) std::cout << "\n";
      PrintCollectivesText(input, result, std::cout, {options.max_ops});
    }
    first = false;
  }
  if (options.input.format == "json") {
    nlohmann::ordered_json out;
    out["schema_version"] = kSchemaVersion;
    out["modules"] = std::move(modules);
    std::cout << out.dump(2) << "\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterCollectivesCommand(CLI::App& app, RunFn& run) {
  auto options = std::make_shared<CollectivesOptions>();
  CLI::App* command = app.add_subcommand(
      "collectives", "Every collective: device groups, wire bytes, runs per step, estimated time");
  AddInputOptions(*command, options->input);
  std::string presets;
  for (const std::string& name : TopologyPresetNames())
    presets += (presets.empty() ? "" : ", ") + name;
  command->add_option("--topology", options->topology, "Preset (" + presets + ") or a JSON file")
      ->capture_default_str();
  command->add_option("--devices-per-node", options->devices_per_node,
                      "Override the topology's devices per node (e.g. 4 to spread 8 devices "
                      "over 2 nodes)");
  command->add_option("--max-ops", options->max_ops, "Rows of the text per-op table (0 = all)")
      ->capture_default_str();
  command->callback([options, &run] { run = [options] { return RunCollectives(*options); }; });
}

}  // namespace spmdsim::analyzer
