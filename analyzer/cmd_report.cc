// spmdsim report FILE|DIR... -o report.html [--module NAME] [--topology NAME|FILE]
//                            [--trace trace.json] [--max-rows N] [--timeline-points N]
//
// Writes one self-contained HTML page (analyzer/html_report.h) for every loaded module and,
// with --trace, the simulated step of one module as a Chrome trace-event JSON file
// (analyzer/trace_writer.h): the first after_optimizations module, else the first module (narrow
// with --module). docs/REPORT.md describes both.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>

#include "analyzer/command.h"
#include "analyzer/html_report.h"
#include "analyzer/json_text.h"
#include "analyzer/module_report.h"
#include "analyzer/topology_presets.h"
#include "analyzer/trace_writer.h"

namespace spmdsim::analyzer {
namespace {

struct ReportOptions {
  InputOptions input;
  std::string output;                         // -o
  std::string topology = "h100-8x-nvswitch";  // as `collectives`: the commonest 8-device machine
  std::string trace;                          // --trace; empty = none
  size_t max_rows = 200;                      // rows of each long table
  int64_t timeline_points = 512;              // points of the memory curve
};

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return false;
  out << text;
  out.close();
  return static_cast<bool>(out);
}

int RunReport(const ReportOptions& options) {
  std::string error;
  const std::optional<passes::Topology> topology = LoadTopology(options.topology, error);
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
  analysis.topology = &*topology;
  // What runs on the devices first: optimized modules, then unknown stages, then the modules
  // before optimizations; input order otherwise.
  const auto stage_rank = [](const ModuleInput& input) {
    return input.stage == "after_optimizations" ? 0 : input.stage == "unknown" ? 1 : 2;
  };
  std::stable_sort(
      loaded.modules.begin(), loaded.modules.end(),
      [&](const ModuleInput& a, const ModuleInput& b) { return stage_rank(a) < stage_rank(b); });
  std::vector<ModuleReport> reports;
  reports.reserve(loaded.modules.size());
  for (const ModuleInput& input : loaded.modules) {
    reports.push_back(BuildModuleReport(input, analysis));
  }

  HtmlReportOptions html;
  html.max_rows = options.max_rows;
  html.topology = topology->name;
  html.trace_path = options.trace;
  if (!WriteFile(options.output, RenderHtmlReport(reports, html))) {
    std::cerr << "error: cannot write " << options.output << "\n";
    return kExitUsage;
  }
  if (!options.trace.empty()) {
    const ModuleReport* traced = &reports.front();
    for (const ModuleReport& report : reports) {
      if (report.input->stage == "after_optimizations") {
        traced = &report;
        break;
      }
    }
    // Invalid UTF-8 in a dump's strings becomes U+FFFD rather than an exception.
    const std::string trace = JsonText(BuildTrace(*traced), 1);
    if (!WriteFile(options.trace, trace + "\n")) {
      std::cerr << "error: cannot write " << options.trace << "\n";
      return kExitUsage;
    }
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
  AddInputOptions(*command, options->input);
  command->add_option("-o,--output", options->output, "The HTML file to write")->required();
  std::string presets;
  for (const std::string& name : TopologyPresetNames())
    presets += (presets.empty() ? "" : ", ") + name;
  command
      ->add_option("--topology", options->topology,
                   "Collective times on this preset (" + presets + ") or JSON file")
      ->capture_default_str();
  command->add_option("--trace", options->trace,
                      "Also write the simulated step of one module (the first "
                      "after_optimizations one) as Chrome trace-event JSON");
  command
      ->add_option("--max-rows", options->max_rows, "Rows of each long table; the rest summarised")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command
      ->add_option("--timeline-points", options->timeline_points,
                   "Points of the memory curve (each the maximum of its stretch)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->callback([options, &run] { run = [options] { return RunReport(*options); }; });
}

}  // namespace spmdsim::analyzer
