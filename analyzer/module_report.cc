#include "analyzer/module_report.h"

#include "passes/rng_remat_saving.h"

namespace spmdsim::analyzer {

ModuleReport BuildModuleReport(const ModuleInput& input, const ModuleReportOptions& options) {
  ModuleReport report;
  report.input = &input;
  passes::MemoryAnalysisOptions memory = options.memory;
  memory.per_device_from_shardings =
      options.per_device_for_unpartitioned && passes::IsUnpartitioned(*input.module);
  report.memory = BuildMemoryReport(input, memory);
  passes::CollectiveOptions collectives;
  collectives.topology = options.topology;
  report.collectives = passes::AnalyzeCollectives(*input.module, collectives);
  passes::RngSiteOptions rng;
  rng.collectives = &report.collectives;
  report.rng = passes::AnalyzeRngSites(*input.module, rng);
  passes::EstimateRematSavings(*input.module, report.memory.prediction, report.rng, memory);
  return report;
}

}  // namespace spmdsim::analyzer
