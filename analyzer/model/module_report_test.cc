// One module's report builds its dataflow, buffers and live ranges once: the memory analysis,
// the RNG sites and the remat what-if (a second memory analysis) share them
// (passes/module_analyses.h), and the what-if reuses the first memory analysis' allocation
// decisions.
#include "analyzer/model/module_report.h"

#include <catch2/catch.hpp>

#include "dump/module_loader.h"

namespace spmdsim::analyzer {
namespace {

TEST_CASE("a module's report builds each shared analysis once") {
  // A remat program whose dropout random values are held into the backward pass: the report
  // runs the remat what-if, so memory is analysed twice on the same analyses.
  dump::LoadOptions load;
  load.stage = "after_optimizations";
  dump::LoadOutcome outcome =
      dump::LoadInputs(SPMDSIM_TESTDATA_DIR "/dumps/dp8_partitionable_remat", load);
  REQUIRE_FALSE(outcome.failure);
  REQUIRE(outcome.inputs.modules.size() == 1);
  const dump::ModuleInput& input = outcome.inputs.modules[0];
  passes::ModuleAnalyses analyses(*input.module);
  const ModuleReport report = BuildModuleReport(input, {}, &analyses);
  CHECK(report.rng.remat.ran);
  CHECK(analyses.constructions().dataflow == 1);
  CHECK(analyses.constructions().alias == 1);
  CHECK(analyses.constructions().live_ranges == 1);
  // The what-if re-runs only the heap: the allocation decisions are the first run's.
  CHECK(analyses.constructions().memory_assignment == 1);
  // The same figures as a report that builds its own.
  const ModuleReport alone = BuildModuleReport(input, {});
  CHECK(alone.memory.prediction.peak_bytes == report.memory.prediction.peak_bytes);
  CHECK(alone.rng.totals.sites == report.rng.totals.sites);
  CHECK(alone.rng.remat.peak_bytes_recomputed == report.rng.remat.peak_bytes_recomputed);
}

}  // namespace
}  // namespace spmdsim::analyzer
