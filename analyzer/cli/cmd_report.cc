// spmdsim report FILE|DIR... -o report.html [--module NAME] [--topology NAME|FILE]
//                            [--devices-per-node N]
//                            [--trace trace.json] [--max-rows N] [--timeline-points N]
//
// Writes one self-contained HTML page (analyzer/views/html_report.h) for every loaded module and,
// with --trace, the simulated step of one module as a Chrome trace-event JSON file
// (analyzer/views/trace_writer.h): the after_optimizations module with the largest peak (a dump
// folder's train step, not its init function), else the first module
// (narrow with --module). docs/REPORT.md describes both.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>

#include "analyzer/cli/command.h"
#include "analyzer/emit/json_text.h"
#include "analyzer/model/module_report.h"
#include "analyzer/model/topology_choice.h"
#include "analyzer/model/topology_presets.h"
#include "analyzer/views/html_report.h"
#include "analyzer/views/trace_writer.h"
#include "passes/timeline/step_timeline.h"

namespace spmdsim::analyzer {
namespace {

struct ReportOptions {
  InputOptions input;
  std::string output;             // -o
  std::string topology;           // as `collectives`: empty = chosen per module by device count
  int64_t devices_per_node = 0;   // 0 = the topology's own
  std::string trace;              // --trace; empty = none
  size_t max_rows = 200;          // rows of each long table
  int64_t timeline_points = 512;  // points of the memory curve
  DeviceChoice device;            // the fit verdict's device
};

int RunReport(const ReportOptions& options) {
  if (options.output == "-" && options.trace == "-") {
    std::cerr << "error: -o - and --trace - would both write to standard output; give one a "
                 "file name\n";
    return kExitUsage;
  }
  std::string error;
  const std::optional<TopologyRequest> topology =
      MakeTopologyRequest(options.topology, options.devices_per_node, error);
  if (!topology) {
    std::cerr << "error: " << error << "\n";
    return kExitUsage;
  }
  LoadedOrExit loaded = LoadAllInputs(options.input);
  if (loaded.exit_code != kExitOk) return loaded.exit_code;
  if (loaded.modules.empty()) {
    std::cerr << "error: no module to report on"
              << (options.input.module_filter.empty() ? "" : " (check --module)") << "\n";
    return kExitUsage;
  }
  ModuleReportOptions analysis;
  analysis.memory.timeline_points = options.timeline_points;
  analysis.memory.record_lifetimes = true;  // the page's memory view lists any position
  analysis.device = options.device;
  std::vector<ModuleReport> reports;
  reports.reserve(loaded.modules.size());
  // Each module's analyses, built on first use and dropped once its report is made.
  std::vector<std::unique_ptr<passes::ModuleAnalyses>> analyses;
  for (const dump::ModuleInput& input : loaded.modules) {
    analyses.push_back(std::make_unique<passes::ModuleAnalyses>(*input.module));
  }
  // Every module's topology before any analysis: one that does not fit stops the command.
  const std::optional<std::vector<TopologyChoice>> topologies =
      ChooseTopologies(loaded.modules, *topology, error, analyses);
  if (!topologies) {
    std::cerr << "error: " << error << "\n";
    return kExitUsage;
  }
  for (size_t i = 0; i < loaded.modules.size(); ++i) {
    analysis.topology = &(*topologies)[i].topology;
    reports.push_back(BuildModuleReport(loaded.modules[i], analysis, analyses[i].get()));
    analyses[i].reset();
  }

  HtmlReportOptions html;
  html.max_rows = options.max_rows;
  html.topology = DescribeTopologyChoices(*topologies);
  html.trace_path = options.trace;
  if (!WriteOutput(options.output, RenderHtmlReport(reports, html), "HTML report")) {
    return kExitUsage;
  }
  if (!options.trace.empty()) {
    // The step a user asks about: of the after-optimizations modules (what runs), the one with
    // the largest peak (a dump folder's train step, not its init function); else the first.
    const ModuleReport* traced = &reports.front();
    bool after = false;
    for (const ModuleReport& report : reports) {
      if (report.input->stage != dump::ModuleStage::kAfterOptimizations) continue;
      if (!after || report.memory.prediction.peak_bytes > traced->memory.prediction.peak_bytes) {
        traced = &report;
      }
      after = true;
    }
    // Invalid UTF-8 in a dump's strings becomes U+FFFD rather than an exception.
    const passes::StepTimeline step =
        passes::SimulateStep(*traced->input->module, traced->collectives);
    const std::string trace = JsonText(BuildTrace(*traced, step), 1);
    if (!WriteOutput(options.trace, trace + "\n", "trace")) return kExitUsage;
  }
  return kExitOk;
}

}  // namespace

void RegisterReportCommand(CLI::App& app, RunFn& run) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* command = app.add_subcommand(
      "report",
      "One self-contained HTML page of memory, collectives and RNG costs per module; with "
      "--trace, the simulated step as a trace for ui.perfetto.dev");
  AddInputOptions(*command, options->input, /*with_format=*/false);  // HTML only
  AddJaxVersionOption(*command, options->input.jax_version);
  command->add_option("-o,--output", options->output, "The HTML file to write (- for stdout)")
      ->required();
  std::string presets;
  for (const std::string& name : TopologyPresetNames())
    presets += (presets.empty() ? "" : ", ") + name;
  command->add_option("--topology", options->topology,
                      "Collective times on this preset (" + presets +
                          ") or JSON file; default: a preset chosen per module by its device "
                          "count and platform");
  command->add_option("--devices-per-node", options->devices_per_node,
                      "Override the topology's devices per node");
  command->add_option("--trace", options->trace,
                      "Also write the simulated step of one module (the after_optimizations one "
                      "with the largest peak) as Chrome trace-event JSON (- for stdout)");
  command
      ->add_option("--max-rows", options->max_rows, "Rows of each long table; the rest summarised")
      ->check(AtLeastOne())
      ->capture_default_str();
  AddTimelinePointsOption(*command, options->timeline_points);
  AddDeviceOptions(*command, options->device);
  command->callback([options, &run] { run = [options] { return RunReport(*options); }; });
}

}  // namespace spmdsim::analyzer
