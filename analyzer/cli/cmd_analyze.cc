// spmdsim analyze FILE|DIR... [--format text|json] [--module NAME] [--live N]
//                             [--timeline-points N] [--sizes global|sharded|auto]
//                             [--platform auto|cpu|gpu|tpu] [--memory-space N]
//                             [--device NAME] [--capacity SIZE] [--mem-fraction F]
//                             [--at POSITION]
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <sstream>

#include "analyzer/cli/command.h"
#include "analyzer/cli/module_driver.h"
#include "analyzer/emit/progress.h"
#include "analyzer/model/module_report.h"
#include "analyzer/model/module_stage.h"
#include "analyzer/model/peak_groups.h"
#include "analyzer/model/random_bit_values.h"
#include "analyzer/model/rng_report.h"
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
  int64_t at = -1;                // a schedule position whose live buffers are listed; -1: none
};

// What is live at options.at, each buffer with its category (the RNG sites tell random bits).
void AddLiveAt(const dump::ModuleInput& input, passes::ModuleAnalyses& analyses,
               const MemoryReport& report, const passes::MemoryAnalysisOptions& analysis,
               const AnalyzeOptions& options, nlohmann::ordered_json* json, std::ostream* text,
               bool& out_of_range) {
  const passes::PeakMemoryResult& m = report.prediction;
  if (options.at >= m.schedule_length) {
    out_of_range = true;
    const std::string message =
        fmt::format("--at {}: the schedule of {} has {} positions (0..{})", options.at,
                    input.module->name, m.schedule_length, m.schedule_length - 1);
    if (json != nullptr)
      (*json)["memory"]["live_at"] = {{"position", options.at}, {"error", message}};
    std::cerr << "error: " << message << "\n";
    return;
  }
  Progress::Get().Update(std::string(input.module->name) + ": rng sites");
  RngReportInputs inputs;
  inputs.baseline = &m;
  inputs.memory = &analysis;
  const passes::RngSiteResult rng = BuildRngReport(input, analyses, inputs);
  Progress::Get().Clear();
  const RandomBitValues random(rng);
  const passes::LiveAtPosition at = passes::LiveAt(m, options.at);
  std::vector<std::string> categories;
  categories.reserve(at.buffers.size());
  for (const passes::LiveBuffer& b : at.buffers) categories.push_back(BufferCategory(b, random));
  if (json != nullptr) (*json)["memory"]["live_at"] = LiveAtToJson(at, categories);
  if (text != nullptr) PrintLiveAtText(at, categories, options.live_buffers, *text);
}

int RunAnalyze(const AnalyzeOptions& options) {
  LoadedOrExit loaded = LoadAllInputs(options.input);
  if (loaded.exit_code != kExitOk) return loaded.exit_code;
  // Several modules in text: a one-screen summary first, then each module's details (kept until
  // the summary is written).
  const bool summary = options.input.format == "text" && loaded.modules.size() > 1;
  std::vector<ModuleSummaryRow> rows;
  std::ostringstream details;
  bool out_of_range = false;  // --at past a module's schedule
  const int status = WriteEachModule(
      loaded.modules, options.input.format, summary ? details : std::cout,
      [&](size_t, const dump::ModuleInput& input, nlohmann::ordered_json* json,
          std::ostream* text) {
        passes::MemoryAnalysisOptions analysis;
        analysis.timeline_points = options.timeline_points;
        analysis.memory_space = options.memory_space;
        analysis.record_lifetimes = options.at >= 0;
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
        if (options.at >= 0) {
          AddLiveAt(input, analyses, report, analysis, options, json, text, out_of_range);
        }
      });
  const int code = status == kExitOk && out_of_range ? kExitUsage : status;
  if (!summary || status != kExitOk) return code;
  PrintModuleSummary(rows, std::cout);
  std::cout << details.str();
  std::cout.flush();
  return std::cout.good() ? code : kExitUsage;
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
  command
      ->add_option("--at", options->at,
                   "Also list what is live at this schedule position (0-based, as the memory "
                   "curve and XLA's live-range file number them), each buffer with its category")
      ->check(CLI::NonNegativeNumber);
  command->callback([options, &run] { run = [options] { return RunAnalyze(*options); }; });
}

}  // namespace spmdsim::analyzer
