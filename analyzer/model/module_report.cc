#include "analyzer/model/module_report.h"

#include <memory>
#include <string>

#include "analyzer/emit/progress.h"
#include "analyzer/model/module_stage.h"
#include "analyzer/model/rng_report.h"

namespace spmdsim::analyzer {

FitFixes BuildFitFixes(const dump::ModuleInput& input, passes::ModuleAnalyses& analyses,
                       const passes::PeakMemoryResult& baseline,
                       const passes::MemoryAnalysisOptions& memory, const FitVerdict& verdict,
                       const passes::RngSiteResult* rng) {
  passes::RngSiteResult own;
  if (rng == nullptr) {
    RngReportInputs inputs;
    inputs.baseline = &baseline;
    inputs.memory = &memory;
    own = BuildRngReport(input, analyses, inputs);
    rng = &own;
  }
  FitFixInputs fixes;
  fixes.rng = rng;
  fixes.baseline = &baseline;
  fixes.memory = &memory;
  fixes.gpu = memory.platform.platform == passes::Platform::kGpu;
  return RankFitFixes(analyses, verdict, fixes);
}

ModuleReport BuildModuleReport(const dump::ModuleInput& input, const ModuleReportOptions& options,
                               passes::ModuleAnalyses* analyses) {
  std::unique_ptr<passes::ModuleAnalyses> own;
  if (analyses == nullptr) {
    own = std::make_unique<passes::ModuleAnalyses>(*input.module);
    analyses = own.get();
  }
  ModuleReport report;
  report.input = &input;
  report.unpartitioned = IsUnpartitioned(input);
  Progress& progress = Progress::Get();
  const std::string name(input.module->name);
  const auto start = [&](std::string_view part) {
    if (options.on_part) options.on_part(part);
    progress.Update(name + ": " + std::string(part));
  };
  start("memory");
  const passes::MemoryAnalysisOptions memory =
      SizedMemoryOptions(input, options.memory, options.per_device_for_unpartitioned, analyses);
  report.memory = BuildMemoryReport(input, memory, analyses);
  report.fit = JudgeModuleFit(input, report.memory.prediction.peak_bytes, options.device, analyses);
  start("collectives");
  passes::CollectiveOptions collectives;
  collectives.topology = options.topology;
  report.collectives = passes::AnalyzeCollectives(*analyses, collectives);
  start("rng sites");
  RngReportInputs rng;
  rng.collectives = &report.collectives;
  rng.baseline = &report.memory.prediction;
  rng.memory = &memory;
  report.rng = BuildRngReport(input, *analyses, rng);
  start("fixes");
  report.fixes =
      BuildFitFixes(input, *analyses, report.memory.prediction, memory, report.fit, &report.rng);
  progress.Clear();
  if (options.on_part) options.on_part("done");
  return report;
}

}  // namespace spmdsim::analyzer
