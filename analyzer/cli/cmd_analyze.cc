// spmdsim analyze FILE|DIR... [--format text|json] [--module NAME] [--live N]
//                             [--timeline-points N] [--sizes global|sharded|auto]
//                             [--platform auto|cpu|gpu|tpu] [--memory-space N]
//                             [--device NAME] [--capacity SIZE] [--mem-fraction F]
#include <iostream>
#include <memory>
#include <sstream>

#include "analyzer/cli/command.h"
#include "analyzer/cli/module_driver.h"
#include "analyzer/emit/progress.h"
#include "analyzer/model/module_report.h"
#include "analyzer/model/module_stage.h"
#include "analyzer/views/fit_view.h"
#include "analyzer/views/memory_view.h"
#include "analyzer/views/module_summary_view.h"
#include "analyzer/views/stats_view.h"

namespace spmdsim::analyzer {
namespace {

struct AnalyzeOptions {
  InputOptions input;
  size_t live_buffers = 10;       // text: buffers of the peak listing shown in full
  int64_t timeline_points = 512;  // points of the memory curve
  std::string sizes = "auto";     // auto: per device from shardings for unpartitioned modules
  int64_t memory_space = 0;       // the S(n) whose temporaries are listed (0: device memory)
  DeviceChoice device;            // what the fit verdict compares the peak with
};

int RunAnalyze(const AnalyzeOptions& options) {
  LoadedOrExit loaded = LoadAllInputs(options.input);
  if (loaded.exit_code != kExitOk) return loaded.exit_code;
  // Several modules in text: a one-screen summary first, then each module's details (kept until
  // the summary is written).
  const bool summary = options.input.format == "text" && loaded.modules.size() > 1;
  std::vector<ModuleSummaryRow> rows;
  std::ostringstream details;
  const int status = WriteEachModule(
      loaded.modules, options.input.format, summary ? details : std::cout,
      [&](size_t, const dump::ModuleInput& input, nlohmann::ordered_json* json,
          std::ostream* text) {
        passes::MemoryAnalysisOptions analysis;
        analysis.timeline_points = options.timeline_points;
        analysis.memory_space = options.memory_space;
        analysis.per_device_from_shardings =
            options.sizes == "sharded" || (options.sizes == "auto" && IsUnpartitioned(input));
        Progress::Get().Update(std::string(input.module->name) + ": memory");
        passes::ModuleAnalyses analyses(*input.module);
        const MemoryReport report = BuildMemoryReport(input, analysis, &analyses);
        // The verdict is about the device memory (HBM), not another space; a step over its
        // device gets the fixes ranked by the peak each gives.
        std::optional<FitVerdict> fit;
        FitFixes fixes;
        if (options.memory_space == 0) {
          fit = JudgeModuleFit(input, report.prediction.peak_bytes, options.device, &analyses);
          if (!fit->fits.value_or(true)) {
            Progress::Get().Update(std::string(input.module->name) + ": fixes");
            passes::MemoryAnalysisOptions sized = analysis;
            sized.platform = report.prediction.platform;  // the rules the peak was sized by
            fixes = BuildFitFixes(input, analyses, report.prediction, sized, *fit);
          }
        }
        Progress::Get().Clear();
        ModuleSummaryRow& row = rows.emplace_back();
        row.module = std::string(input.module->name);
        row.stage = std::string(dump::ModuleStageName(input.stage));
        row.peak_bytes = report.prediction.peak_bytes;
        row.fit = fit;
        if (!fixes.ranked.empty()) row.best_fix = fixes.ranked.front();
        if (!report.prediction.live_at_peak.empty()) {
          row.largest_shape = report.prediction.live_at_peak.front().shape;
          row.largest_bytes = report.prediction.live_at_peak.front().size_bytes;
        }
        if (json != nullptr) {
          (*json)["fit"] = fit ? FitToJson(*fit) : nullptr;
          if (fit) AddFixesJson(fixes, (*json)["fit"]);
          (*json)["memory"] = MemoryToJson(report);
        }
        if (text != nullptr) {
          if (fit) PrintFitText(input, *fit, *text);
          PrintFixesText(fixes, *text);
          PrintMemoryText(input, report, *text, {options.live_buffers});
        }
      });
  if (!summary || status != kExitOk) return status;
  PrintModuleSummary(rows, std::cout);
  std::cout << details.str();
  std::cout.flush();
  return std::cout.good() ? kExitOk : kExitUsage;
}

}  // namespace

void RegisterAnalyzeCommand(CLI::App& app, RunFn& run) {
  auto options = std::make_shared<AnalyzeOptions>();
  CLI::App* command = app.add_subcommand(
      "analyze",
      "Peak memory per device: argument/output/alias/temp, the peak, what is live there");
  AddInputOptions(*command, options->input);
  command
      ->add_option("--live", options->live_buffers,
                   "Text: buffers of the live-at-peak listing shown in full")
      ->capture_default_str();
  AddTimelinePointsOption(*command, options->timeline_points);
  AddDeviceOptions(*command, options->device);
  command
      ->add_option("--sizes", options->sizes,
                   "Buffer sizes: as written (global), per device from the shardings "
                   "(sharded), or sharded only for modules not partitioned yet (auto)")
      ->check(CLI::IsMember({"auto", "global", "sharded"}))
      ->capture_default_str();
  command
      ->add_option("--memory-space", options->memory_space,
                   "The memory space whose temporaries, peak and curve are shown: 0 the device "
                   "memory (HBM), or a layout's S(n), e.g. 1 for a TPU's VMEM")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
      ->capture_default_str();
  command->callback([options, &run] { run = [options] { return RunAnalyze(*options); }; });
}

}  // namespace spmdsim::analyzer
