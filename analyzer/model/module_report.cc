#include "analyzer/model/module_report.h"

#include <memory>

#include "analyzer/emit/progress.h"
#include "analyzer/model/module_platform.h"
#include "analyzer/model/module_stage.h"
#include "passes/rng/rng_remat_saving.h"

namespace spmdsim::analyzer {

ModuleReport BuildModuleReport(const dump::ModuleInput& input, const ModuleReportOptions& options,
                               passes::ModuleAnalyses* analyses) {
  std::unique_ptr<passes::ModuleAnalyses> own;
  if (analyses == nullptr) {
    own = std::make_unique<passes::ModuleAnalyses>(*input.module);
    analyses = own.get();
  }
  ModuleReport report;
  report.input = &input;
  Progress& progress = Progress::Get();
  const std::string name(input.module->name);
  progress.Update(name + ": memory");
  passes::MemoryAnalysisOptions memory = options.memory;
  memory.platform = MemoryProfileOf(input);
  memory.per_device_from_shardings = options.per_device_for_unpartitioned && IsUnpartitioned(input);
  report.memory = BuildMemoryReport(input, memory, analyses);
  progress.Update(name + ": collectives");
  passes::CollectiveOptions collectives;
  collectives.topology = options.topology;
  report.collectives = passes::AnalyzeCollectives(*input.module, collectives);
  progress.Update(name + ": rng sites");
  passes::RngSiteOptions rng;
  rng.collectives = &report.collectives;
  rng.stage = StageHintOf(input);
  rng.platform = memory.platform.platform;
  report.rng = passes::AnalyzeRngSites(*analyses, rng);
  progress.Update(name + ": remat what-if");
  passes::EstimateRematSavings(*analyses, report.memory.prediction, report.rng, memory);
  progress.Clear();
  return report;
}

}  // namespace spmdsim::analyzer
