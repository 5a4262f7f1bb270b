// spmdsim collectives FILE|DIR... [--topology NAME|FILE] [--devices-per-node N]
//                                 [--format text|json] [--module NAME]
//
// A module not partitioned yet (before_optimizations) also gets the collectives the SPMD
// partitioner is predicted to insert (passes/collectives/collective_prediction.h), compared with
// XLA's after_optimizations module of the same program: one loaded from the same directory with the
// same module name, else the `*after_optimizations.txt[.gz]` file beside it.
//
// Without --topology each module is timed on a preset chosen by its device count and platform
// (analyzer/model/topology_choice.h); a topology that cannot hold a module's devices is a usage
// error.
#include <filesystem>
#include <iostream>
#include <memory>
#include <utility>
#include <vector>

#include "analyzer/cli/command.h"
#include "analyzer/cli/module_driver.h"
#include "analyzer/emit/progress.h"
#include "analyzer/model/module_stage.h"
#include "analyzer/model/topology_choice.h"
#include "analyzer/model/topology_presets.h"
#include "analyzer/views/collectives_view.h"
#include "analyzer/views/stats_view.h"

namespace spmdsim::analyzer {
namespace {

struct CollectivesOptions {
  InputOptions input;
  std::string topology;          // empty = chosen per module by device count and platform
  int64_t devices_per_node = 0;  // 0 = the topology's own
  size_t max_ops = 30;
};

// XLA's partitioned module of the same program: among the loaded modules, else the optimized
// module file the loader found beside the file (dump/module_file_set.h:
// `<stem>.before_optimizations.txt` -> `<stem>.<platform>_after_optimizations.txt[.gz]`).
const dump::ModuleInput* FindAfterModule(const dump::ModuleInput& before,
                                         const std::vector<dump::ModuleInput>& loaded,
                                         std::vector<dump::ModuleInput>& extra) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(before.path).parent_path();
  for (const dump::ModuleInput& other : loaded) {
    if (other.stage == dump::ModuleStage::kAfterOptimizations &&
        other.module->name == before.module->name && fs::path(other.path).parent_path() == dir) {
      return &other;
    }
  }
  for (const std::string& path : before.files.after_optimizations) {
    dump::LoadOutcome outcome = dump::LoadInputs(path);
    if (outcome.failure || outcome.inputs.modules.empty()) continue;
    if (outcome.inputs.modules[0].module->name != before.module->name) continue;
    extra.push_back(std::move(outcome.inputs.modules[0]));
    return &extra.back();
  }
  return nullptr;
}

int RunCollectives(const CollectivesOptions& options) {
  std::string error;
  const std::optional<TopologyRequest> request =
      MakeTopologyRequest(options.topology, options.devices_per_node, error);
  if (!request) {
    std::cerr << "error: " << error << "\n";
    return kExitUsage;
  }
  LoadedOrExit loaded = LoadAllInputs(options.input);
  if (loaded.exit_code != kExitOk) return loaded.exit_code;
  // Every module's topology before any analysis: one that does not fit stops the command.
  const std::optional<std::vector<TopologyChoice>> topologies =
      ChooseTopologies(loaded.modules, *request, error);
  if (!topologies) {
    std::cerr << "error: " << error << "\n";
    return kExitUsage;
  }
  return WriteEachModule(
      loaded.modules, options.input.format, std::cout,
      [&](size_t i, const dump::ModuleInput& input, nlohmann::ordered_json* json,
          std::ostream* text) {
        const TopologyChoice& topology = (*topologies)[i];
        passes::CollectiveOptions analysis;
        analysis.topology = &topology.topology;
        Progress::Get().Update(std::string(input.module->name) + ": collectives");
        const passes::CollectiveResult result = passes::AnalyzeCollectives(*input.module, analysis);
        std::optional<passes::CollectivePrediction> prediction;
        std::optional<passes::PredictionComparison> comparison;
        PredictionReport report;
        if (IsUnpartitioned(input)) {
          prediction = passes::PredictCollectives(*input.module);
          report.prediction = &*prediction;
          std::vector<dump::ModuleInput> extra;
          if (const dump::ModuleInput* after = FindAfterModule(input, loaded.modules, extra)) {
            comparison =
                passes::ComparePrediction(*prediction, passes::AnalyzeCollectives(*after->module));
            report.comparison = &*comparison;
            report.actual_path = after->path;
          }
        }
        Progress::Get().Clear();
        if (json != nullptr) {
          (*json)["collectives"] = CollectivesToJson(result, &topology);
          if (prediction) AddPredictionJson(report, (*json)["collectives"]);
        }
        if (text != nullptr) {
          PrintCollectivesText(input, result, *text, {options.max_ops, &topology});
          if (prediction) PrintPredictionText(report, *text, {options.max_ops});
        }
      });
}

}  // namespace

void RegisterCollectivesCommand(CLI::App& app, RunFn& run) {
  auto options = std::make_shared<CollectivesOptions>();
  CLI::App* command = app.add_subcommand(
      "collectives",
      "Every collective: device groups, wire bytes, runs per step, estimated time; for a module "
      "not partitioned yet, the collectives the partitioner will insert, beside XLA's");
  AddInputOptions(*command, options->input);
  std::string presets;
  for (const std::string& name : TopologyPresetNames())
    presets += (presets.empty() ? "" : ", ") + name;
  command->add_option("--topology", options->topology,
                      "Preset (" + presets +
                          ") or a JSON file; default: a preset chosen per module by its device "
                          "count and platform");
  command->add_option("--devices-per-node", options->devices_per_node,
                      "Override the topology's devices per node (e.g. 4 to spread 8 devices "
                      "over 2 nodes of a multi-node topology)");
  command->add_option("--max-ops", options->max_ops, "Rows of the text per-op table (0 = all)")
      ->capture_default_str();
  command->callback([options, &run] { run = [options] { return RunCollectives(*options); }; });
}

}  // namespace spmdsim::analyzer
