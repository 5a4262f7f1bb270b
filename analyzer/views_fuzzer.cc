// libFuzzer target over every view of the spmdsim commands, in every format they write, on modules
// parsed from fuzzed HLO text (tools/fuzz.sh --target views). Per module that parses, the
// analyses run as the commands run them and their results are rendered:
//   stats, analyze, collectives (with the prediction, alone and compared), rng sites (with and
//   without key sites)             text and JSON ({"schema_version", "modules"} document)
//   check                          text, JSON, SARIF, JUnit, GitHub annotations and step summary,
//                                  without a baseline, against the module's own figures and
//                                  against those figures halved (regressions, new findings);
//                                  the baseline it would write must parse back (ParseBaseline)
//                                  to the same figures
//   diff                           text and JSON: the module with itself, with the next module of
//                                  the input, and with no counterpart
//   report                         the HTML page of all modules and the Perfetto trace JSON
// Every JSON output is serialized as the command does and must parse back with
// nlohmann::json::parse; a failure aborts after printing the text.
//
// Inputs that do not parse are rejected right after the parser; the work an accepted module
// costs is bounded by the fuzz input's size (tools/fuzz.sh: -max_len) and by kMaxInputBytes, and
// a module whose call sites expand past testing::kMaxCallSiteInstructions (slow by design: sharding
// propagation walks every call site, testing/fuzz_budget.h) is skipped.
// A finding is a sanitizer report (ASan/UBSan), a crash (an uncaught exception included), a
// timeout, an OOM or an abort() below. Build and run with tools/fuzz.sh --target views; replay
// with `build-fuzz/analyzer/views_fuzzer FILE`.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/emit/json_text.h"
#include "analyzer/model/baseline.h"
#include "analyzer/model/check_result.h"
#include "analyzer/model/module_diff.h"
#include "analyzer/model/module_report.h"
#include "analyzer/model/peak_groups.h"
#include "analyzer/model/random_bit_values.h"
#include "analyzer/model/rng_report.h"
#include "analyzer/model/topology_presets.h"
#include "analyzer/views/check_view.h"
#include "analyzer/views/ci_formats.h"
#include "analyzer/views/collectives_view.h"
#include "analyzer/views/diff_view.h"
#include "analyzer/views/html_report.h"
#include "analyzer/views/memory_view.h"
#include "analyzer/views/report_memview.h"
#include "analyzer/views/rng_sites_view.h"
#include "analyzer/views/sarif_report.h"
#include "analyzer/views/stats_view.h"
#include "analyzer/views/trace_writer.h"
#include "dump/module_loader.h"
#include "ir/parser.h"
#include "passes/collectives/collective_prediction.h"
#include "passes/memory/memory_analysis.h"
#include "passes/module_facts.h"
#include "passes/rng/rng_site_analysis.h"
#include "passes/stats_analysis.h"
#include "passes/timeline/step_timeline.h"
#include "testing/fuzz_budget.h"
#include "testing/fuzz_checks.h"

namespace spmdsim::analyzer {
namespace {

constexpr size_t kMaxInputBytes = 64 * 1024;
// Modules of one input rendered; the rest are ignored (each costs every analysis several times).
constexpr size_t kMaxModules = 4;

[[noreturn]] void Failure(std::string_view what, std::string_view detail, std::string_view text) {
  testing::FuzzFailure("views fuzzer", what, detail, text);
}

void CheckJson(std::string_view what, const std::string& text) {
  testing::CheckJsonParses("views fuzzer", what, text);
}

// As the commands print a {"schema_version", "modules"} document.
void CheckModulesJson(std::string_view what, nlohmann::ordered_json module) {
  nlohmann::ordered_json modules = nlohmann::ordered_json::array();
  modules.push_back(std::move(module));
  std::ostringstream out;
  PrintModulesJson(std::move(modules), out);
  CheckJson(what, out.str());
}

const passes::Topology& DefaultTopology() {
  static const passes::Topology topology = [] {
    std::string error;
    std::optional<passes::Topology> t = LoadTopology("h100-8x-nvswitch", error);
    if (!t) Failure("topology preset", error, "");
    return *t;
  }();
  return topology;
}

// What a directory load would name the stage of such a module.
dump::ModuleStage StageOf(const ir::HloModule& module) {
  if (module.is_scheduled) return dump::ModuleStage::kAfterOptimizations;
  if (passes::IsUnpartitioned(module)) return dump::ModuleStage::kBeforeOptimizations;
  return dump::ModuleStage::kUnknown;
}

// `spmdsim stats`.
void RenderStats(const dump::ModuleInput& input) {
  const passes::StatsResult stats = passes::ComputeStats(*input.module);
  std::ostringstream text;
  PrintStatsText(input, stats, text);
  nlohmann::ordered_json module = ModuleIdentityJson(input);
  module["stats"] = StatsToJson(stats);
  CheckModulesJson("stats --format json", std::move(module));
}

// `spmdsim analyze` (default options: sizes auto, 512 points, 10 buffers in full): the memory
// report BuildModuleReport made with the same options.
void RenderAnalyze(const dump::ModuleInput& input, const MemoryReport& report) {
  std::ostringstream text;
  PrintMemoryText(input, report, text);
  PrintMemoryText(input, report, text, {0, 8});
  nlohmann::ordered_json module = ModuleIdentityJson(input);
  module["memory"] = MemoryToJson(report);
  CheckModulesJson("analyze --format json", std::move(module));
}

// `analyze --at`: what is live at each point of the curve is the curve's value there (one model,
// two readings), and its views render.
void RenderLiveAt(const ModuleReport& report) {
  const passes::PeakMemoryResult& m = report.memory.prediction;
  if (static_cast<int64_t>(m.schedule_instructions.size()) != m.schedule_length) {
    Failure("analyze --at", "schedule names missing with record_lifetimes", "");
  }
  const RandomBitValues random(report.rng);
  for (const passes::TimelinePoint& point : m.timeline) {
    const passes::LiveAtPosition at = passes::LiveAt(m, point.time);
    if (at.live_bytes != point.live_bytes) {
      Failure("analyze --at", "live bytes differ from the curve's",
              std::to_string(at.live_bytes) + " at " + std::to_string(point.time) + " vs " +
                  std::to_string(point.live_bytes));
    }
    std::vector<std::string> categories;
    for (const passes::LiveBuffer& b : at.buffers) categories.push_back(BufferCategory(b, random));
    std::ostringstream text;
    PrintLiveAtText(at, categories, 4, text);
    nlohmann::ordered_json module = ModuleIdentityJson(*report.input);
    module["memory"]["live_at"] = LiveAtToJson(at, categories);
    CheckModulesJson("analyze --at --format json", std::move(module));
  }
  // The page's data block: JSON, with no "<" left to end its script element.
  const std::string data = MemoryViewData(report, random);
  if (data.find('<') != std::string::npos) Failure("report memview", "'<' in the data", data);
  CheckJson("report memview data", data);
}

// `spmdsim collectives`, with the prediction alone and compared with the written collectives.
void RenderCollectives(const dump::ModuleInput& input) {
  passes::CollectiveOptions analysis;
  analysis.topology = &DefaultTopology();
  const passes::CollectiveResult result = passes::AnalyzeCollectives(*input.module, analysis);
  const passes::CollectivePrediction prediction = passes::PredictCollectives(*input.module);
  const passes::PredictionComparison comparison =
      passes::ComparePrediction(prediction, passes::AnalyzeCollectives(*input.module));
  PredictionReport alone;
  alone.prediction = &prediction;
  PredictionReport compared = alone;
  compared.comparison = &comparison;
  compared.actual_path = input.path;
  std::ostringstream text;
  PrintCollectivesText(input, result, text);
  PrintCollectivesText(input, result, text, {0});
  for (const PredictionReport* report : {&alone, &compared}) {
    PrintPredictionText(*report, text);
    PrintPredictionText(*report, text, {0});
    nlohmann::ordered_json module = ModuleIdentityJson(input);
    module["collectives"] = CollectivesToJson(result);
    AddPredictionJson(*report, module["collectives"]);
    CheckModulesJson("collectives --format json", std::move(module));
  }
}

// `spmdsim rng sites`, with the remat what-if as the command adds it.
void RenderRngSites(const dump::ModuleInput& input) {
  passes::ModuleAnalyses analyses(*input.module);
  const passes::RngSiteResult result = BuildRngReport(input, analyses);
  std::ostringstream text;
  for (const bool all : {false, true}) {
    RngSitesViewOptions view;
    view.show_key_sites = all;
    PrintRngSitesText(input, result, view, text);
  }
  nlohmann::ordered_json module = ModuleIdentityJson(input);
  module["num_partitions"] = result.num_partitions;
  nlohmann::ordered_json rng = RngSitesToJson(result);
  module["findings"] = rng["findings"];
  module["rng"] = std::move(rng);
  CheckModulesJson("rng sites --format json", std::move(module));
}

// `spmdsim check`'s outputs for one run.
void RenderCheckRun(const CheckRun& run) {
  std::ostringstream text;
  PrintCheckText(run, text);
  CheckJson("check --format json", JsonText(CheckToJson(run)));
  const SarifOptions sarif{"0.1.0", "/work"};
  CheckJson("check --sarif", JsonText(SarifLog(run, sarif)));
  testing::CheckXml("views fuzzer", "check --junit", JunitXml(run));
  CiOutputOptions ci;
  ci.source_root = "/work";
  PrintGithubAnnotations(run, ci, text);
  testing::CheckMarkdownTables("views fuzzer", "check step summary", GithubStepSummary(run));
}

// `spmdsim check`: no baseline, the module's own figures, and a baseline they exceed.
void RenderCheck(const std::vector<ModuleReport>& reports) {
  std::vector<ModuleFigures> now;
  for (const ModuleReport& report : reports) now.push_back(FiguresFromReport(report));
  const std::string written = JsonText(BaselineToJson(now)) + "\n";
  CheckJson("check --write-baseline", written);
  std::string error;
  const std::optional<std::vector<ModuleFigures>> reread = ParseBaseline(written, error);
  if (!reread) Failure("the written baseline does not parse", error, written);
  if (JsonText(BaselineToJson(*reread)) + "\n" != written) {
    Failure("the written baseline changed when read back", JsonText(BaselineToJson(*reread)),
            written);
  }

  CheckOptions limits;
  limits.max_peak_bytes = 1 << 20;
  limits.max_wire_bytes = 0;
  RenderCheckRun(RunChecks(now, nullptr, {}));
  RenderCheckRun(RunChecks(now, nullptr, limits));
  RenderCheckRun(RunChecks(now, &*reread, {}));
  std::vector<ModuleFigures> lower = *reread;
  for (ModuleFigures& m : lower) {
    m.peak_bytes /= 2;
    m.temp_bytes /= 2;
    m.wire_bytes_per_device /= 2;
    for (auto& [kind, bytes] : m.wire_by_kind) bytes /= 2;
    m.rng_materialized_bytes /= 2;
    if (!m.findings.empty()) m.findings.pop_back();
    m.stage += "-other";  // one module missing from the inputs, one new
  }
  lower.insert(lower.end(), reread->begin(), reread->end());
  CheckOptions tolerant;
  tolerant.tolerance_pct = 5;
  RenderCheckRun(RunChecks(now, &lower, tolerant));
}

// `spmdsim diff`: a against b, and each side without a counterpart.
void RenderDiff(const ModuleReport& a, const ModuleReport& b) {
  DiffOptions options;
  const ModuleDiff diff = DiffModules(a, b, options);
  std::ostringstream text;
  PrintDiffText(a.input, b.input, &diff, text);
  PrintDiffText(a.input, nullptr, nullptr, text);
  PrintDiffText(nullptr, b.input, nullptr, text);
  nlohmann::ordered_json module;
  module["name"] = std::string(a.input->module->name);
  module["a"] = {{"file", a.input->path}, {"stage", dump::ModuleStageName(a.input->stage)}};
  module["b"] = {{"file", b.input->path}, {"stage", dump::ModuleStageName(b.input->stage)}};
  module["diff"] = DiffToJson(diff);
  CheckModulesJson("diff --format json", std::move(module));
}

// `spmdsim report -o FILE --trace FILE`: as the command writes the trace.
void RenderReport(const std::vector<ModuleReport>& reports) {
  HtmlReportOptions html;
  html.topology = DefaultTopology().name;
  testing::CheckPrintable("views fuzzer", "report (HTML)", RenderHtmlReport(reports, html));
  html.max_rows = 1;
  html.max_groups = 1;
  html.trace_path = "trace.json";
  testing::CheckPrintable("views fuzzer", "report (HTML)", RenderHtmlReport(reports, html));
  for (const ModuleReport& report : reports) {
    const passes::StepTimeline step =
        passes::SimulateStep(*report.input->module, report.collectives);
    CheckJson("report --trace", JsonText(BuildTrace(report, step), 1));
  }
}

void RenderAll(ir::ParseResult& parsed) {
  std::vector<dump::ModuleInput> inputs;
  for (std::unique_ptr<ir::HloModule>& module : parsed.modules) {
    if (inputs.size() == kMaxModules) break;
    dump::ModuleInput input;
    // No companion files (input.files is empty): the views render the module alone.
    input.path = "<fuzz>/module_" + std::to_string(inputs.size()) + ".txt";
    input.stage = StageOf(*module);
    input.module = std::move(module);
    inputs.push_back(std::move(input));
  }
  std::vector<ModuleReport> reports;
  for (const dump::ModuleInput& input : inputs) {
    ModuleReportOptions options;
    options.topology = &DefaultTopology();
    options.memory.record_lifetimes = true;  // as `report` and `analyze --at` run it
    reports.push_back(BuildModuleReport(input, options));
    RenderStats(input);
    RenderAnalyze(input, reports.back().memory);
    RenderLiveAt(reports.back());
    RenderCollectives(input);
    RenderRngSites(input);
  }
  RenderCheck(reports);
  for (size_t i = 0; i < reports.size(); ++i) {
    RenderDiff(reports[i], reports[i]);
    if (i + 1 < reports.size()) RenderDiff(reports[i], reports[i + 1]);
  }
  RenderReport(reports);
}

}  // namespace
}  // namespace spmdsim::analyzer

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > spmdsim::analyzer::kMaxInputBytes) return -1;  // not added to the corpus
  auto source = std::make_shared<spmdsim::ir::SourceBuffer>(
      "fuzz.hlo", std::string(reinterpret_cast<const char*>(data), size));
  spmdsim::ir::ParseResult parsed = spmdsim::ir::ParseHloText(source);
  if (!parsed.ok() || parsed.modules.empty()) return -1;  // the parser fuzzer covers these
  for (const auto& module : parsed.modules) {
    // Slow by design (testing/fuzz_budget.h), not rendered.
    if (spmdsim::testing::CallSiteInstructionCount(*module) >
        spmdsim::testing::kMaxCallSiteInstructions) {
      return -1;
    }
  }
  spmdsim::analyzer::RenderAll(parsed);
  return 0;
}
