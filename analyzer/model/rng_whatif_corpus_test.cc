// The flipped-mode what-if against XLA on every mode pair of the corpus: for each program, every
// twin that differs from it only in how random bits are made (threefry partitionable or
// replicated, rbg), spmdsim's prediction of the twin's mode from this program's dump, against
// what XLA did in the twin's dump: the bytes of the buffers holding its random values by XLA's
// own op_names (testing/xla_random_values.h), and the wire bytes of the collectives it inserted
// for them. Within 5% each, as `rng sites` computes it
// (analyzer/model/rng_report.h), told the JAX release that compiled the program as a user would
// (--jax-version, from the manifest). tools/rng_flip_table.py prints the same pairs as a table.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyzer/model/rng_report.h"
#include "dump/module_file_set.h"
#include "dump/module_loader.h"
#include "dump/xla_memory_files.h"
#include "passes/memory/buffer_alias_analysis.h"
#include "passes/module_analyses.h"
#include "testing/corpus_test.h"
#include "testing/mode_twins.h"
#include "testing/xla_random_values.h"

namespace spmdsim::analyzer {
namespace {

using nlohmann::json;

constexpr double kTolerancePct = 5.0;

using testing::IdentityOf;
using testing::ModeOf;
using testing::PredictedMode;
using testing::TrainStepFiles;

passes::RngSiteResult Rng(const json& program) {
  const std::string path = std::string(SPMDSIM_TESTDATA_DIR) + "/" +
                           TrainStepFiles(program).at("after").get<std::string>();
  dump::LoadOutcome outcome = dump::LoadInputs(path);
  INFO(path);
  REQUIRE_FALSE(outcome.failure);
  REQUIRE(outcome.inputs.modules.size() == 1);
  dump::ModuleInput& input = outcome.inputs.modules[0];
  input.files = dump::FindModuleFiles(path);  // the platform and the source module beside it
  // What a user of that JAX names (--jax-version): its XLA's lowering of the other mode.
  input.jax_version = program.value("jax_version", "");
  passes::ModuleAnalyses analyses(*input.module);
  return BuildRngReport(input, analyses);
}

// What XLA materialized and sent for the random bits of `program`: the bytes of the buffers
// holding XLA's random values (testing/xla_random_values.h: op_names in a drawing function's
// scope, read from XLA's own files, not spmdsim's definition), and the wire bytes of the
// collectives attributed to the sites.
struct XlaRandomBits {
  int64_t memory = 0;
  int64_t wire = 0;
};
XlaRandomBits XlaFigures(const json& program, const passes::RngSiteResult& rng) {
  const std::string path = std::string(SPMDSIM_TESTDATA_DIR) + "/" +
                           TrainStepFiles(program).at("after").get<std::string>();
  dump::LoadOutcome outcome = dump::LoadInputs(path);
  REQUIRE_FALSE(outcome.failure);
  REQUIRE(outcome.inputs.modules.size() == 1);
  const ir::HloModule& module = *outcome.inputs.modules[0].module;
  const auto assignment = dump::LoadXlaBufferAssignment(
      std::string(SPMDSIM_TESTDATA_DIR) + "/" +
      TrainStepFiles(program).at("buffer_assignment").get<std::string>());
  REQUIRE(assignment);
  passes::ModuleAnalyses analyses(module);
  const passes::DataflowAnalysis& dataflow = analyses.Dataflow();
  std::vector<std::vector<std::string>> buffers;
  for (const passes::HloBuffer& buffer : analyses.Alias().buffers()) {
    std::vector<std::string>& names = buffers.emplace_back();
    for (const int32_t id : buffer.values) {
      std::string name = dataflow.ValueName(dataflow.value(id));
      if (name.find('{') == std::string::npos) name += "{}";
      names.push_back(std::move(name));
    }
  }
  XlaRandomBits xla;
  xla.memory = testing::XlaRandomBytes(testing::XlaRandomValues(module, *assignment), buffers);
  for (const passes::RngSite& site : rng.sites) {
    if (site.purpose == passes::SitePurpose::kBits) xla.wire += site.wire_bytes_per_device;
  }
  return xla;
}

double ErrorPct(int64_t predicted, int64_t actual) {
  if (actual == 0) return predicted == 0 ? 0.0 : 100.0;
  return 100.0 * static_cast<double>(predicted - actual) / static_cast<double>(actual);
}

SPMDSIM_CORPUS_TEST("the flipped-mode what-if is within 5% of the other mode's compile", program) {
  const std::string from = ModeOf(program);
  const json identity = IdentityOf(program);
  for (const json& twin : testing::CorpusJson("manifest.json").at("programs")) {
    const std::string mode = PredictedMode(from, ModeOf(twin));
    if (mode.empty() || IdentityOf(twin) != identity) continue;
    const passes::RngSiteResult source = Rng(program);
    const passes::RngSiteResult target = Rng(twin);
    const passes::RngCost& predicted = *passes::CostOf(source.totals.whatif, mode.c_str());
    const XlaRandomBits xla = XlaFigures(twin, target);
    const double memory_error = ErrorPct(predicted.memory_bytes, xla.memory);
    const double wire_error = ErrorPct(predicted.wire_bytes_per_device, xla.wire);
    INFO(program.at("name").get<std::string>()
         << " -> " << twin.at("name").get<std::string>() << ": memory predicted "
         << predicted.memory_bytes
         << (predicted.bounded ? " to " + std::to_string(predicted.memory_high_bytes) : "")
         << ", XLA " << xla.memory << " (" << memory_error << "%); wire predicted "
         << predicted.wire_bytes_per_device << ", XLA " << xla.wire << " (" << wire_error << "%)");
    if (predicted.bounded) {
      // Bounds: each is the figure of one named lowering (passes::BoundsBasisOf), and XLA's
      // compile of the other mode lies between them, within the point figures' tolerance.
      CHECK(predicted.memory_bytes < predicted.memory_high_bytes);
      CHECK(ErrorPct(predicted.memory_bytes, xla.memory) <= kTolerancePct);
      CHECK(ErrorPct(predicted.memory_high_bytes, xla.memory) >= -kTolerancePct);
    } else {
      CHECK(std::abs(memory_error) <= kTolerancePct);
    }
    CHECK(std::abs(wire_error) <= kTolerancePct);
  }
}

}  // namespace
}  // namespace spmdsim::analyzer
