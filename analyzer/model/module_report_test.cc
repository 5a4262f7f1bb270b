// One module's report builds its dataflow, buffers and live ranges once: the memory analysis,
// the RNG sites and the remat what-if (a second memory analysis) share them
// (passes/module_analyses.h), and the what-if reuses the first memory analysis' allocation
// decisions.
#include "analyzer/model/module_report.h"

#include <catch2/catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/model/topology_choice.h"
#include "dump/file_reader.h"
#include "dump/module_loader.h"

namespace spmdsim::analyzer {
namespace {

// A remat program's optimized module, whose dropout random values are held into the backward
// pass: its report runs the remat what-if.
dump::LoadOutcome LoadRematModule() {
  dump::LoadOptions load;
  load.stage = "after_optimizations";
  return dump::LoadInputs(SPMDSIM_TESTDATA_DIR "/dumps/dp8_partitionable_remat", load);
}

TEST_CASE("a module's report builds each shared analysis once") {
  // The report runs the remat what-if, so memory is analysed twice on the same analyses.
  const dump::LoadOutcome outcome = LoadRematModule();
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
  // The collectives and the RNG sites count each computation's runs per step once.
  CHECK(analyses.constructions().executions == 1);
  // The same figures as a report that builds its own.
  const ModuleReport alone = BuildModuleReport(input, {});
  CHECK(alone.memory.prediction.peak_bytes == report.memory.prediction.peak_bytes);
  CHECK(alone.rng.totals.sites == report.rng.totals.sites);
  CHECK(alone.rng.remat.peak_bytes_recomputed == report.rng.remat.peak_bytes_recomputed);
}

TEST_CASE("a report tells its parts as they start, for benchmarks that time them") {
  const dump::LoadOutcome outcome = LoadRematModule();
  REQUIRE_FALSE(outcome.failure);
  REQUIRE(outcome.inputs.modules.size() == 1);
  const dump::ModuleInput& input = outcome.inputs.modules[0];
  passes::ModuleAnalyses analyses(*input.module);
  std::vector<std::string> parts;
  std::vector<int> dataflows;  // dataflow analyses built when each part starts
  ModuleReportOptions options;
  options.on_part = [&](std::string_view part) {
    parts.emplace_back(part);
    dataflows.push_back(analyses.constructions().dataflow);
  };
  const ModuleReport report = BuildModuleReport(input, options, &analyses);
  CHECK(parts == std::vector<std::string>{"memory", "collectives", "rng sites", "fixes", "done"});
  // The shared analyses are built in the first part that needs them (memory), so a benchmark
  // that forces them first times each alone (tools/bench_phases.cc).
  CHECK(dataflows == std::vector<int>{0, 1, 1, 1, 1});
  CHECK(report.rng.remat.ran);
}

TEST_CASE("a module whose file name does not name its platform is scanned for it once") {
  // The same module under a name that says nothing: its platform comes from its contents (a scan
  // of every instruction for XLA:GPU's marks), which the topology choice, the memory sizing and
  // the RNG what-if all ask for.
  dump::DumpResult<std::string> text = dump::ReadFileContents(
      SPMDSIM_TESTDATA_DIR
      "/dumps/dp8_partitionable_remat/module_0000.jit_train_step.cpu_after_optimizations.txt.gz");
  REQUIRE(text);
  dump::LoadOutcome outcome = dump::LoadModuleText("renamed.txt", std::move(*text), {});
  REQUIRE_FALSE(outcome.failure);
  REQUIRE(outcome.inputs.modules.size() == 1);
  const dump::ModuleInput& input = outcome.inputs.modules[0];
  passes::ModuleAnalyses analyses(*input.module);
  std::string error;
  const std::optional<TopologyChoice> topology = ChooseTopology(input, {}, error, &analyses);
  REQUIRE(topology);
  CHECK(topology->platform == "platform not named by the dump");
  const ModuleReport report = BuildModuleReport(input, {}, &analyses);
  CHECK(report.rng.remat.ran);
  CHECK(analyses.constructions().gpu_backend_marks == 1);
}

}  // namespace
}  // namespace spmdsim::analyzer
