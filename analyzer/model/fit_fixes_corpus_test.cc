// The ranked fixes' peaks against XLA on every twin pair of the corpus (testing/mode_twins.h):
// from one program's dump, the peak per device its fix for the twin's way of drawing random bits
// (or, from a step that keeps its random bits, the remat fix) predicts, against XLA's own peak of
// the twin's compile (argument + output - alias + temp, as `analyze` reads it beside the dump).
// Within 5% each; tools/fit_fix_table.py prints the same pairs as a table.
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "analyzer/model/module_report.h"
#include "dump/module_file_set.h"
#include "dump/module_loader.h"
#include "testing/corpus_test.h"
#include "testing/mode_twins.h"

namespace spmdsim::analyzer {
namespace {

using nlohmann::json;

constexpr double kTolerancePct = 5.0;

dump::LoadOutcome LoadTrainStep(const json& program) {
  const std::string path = std::string(SPMDSIM_TESTDATA_DIR) + "/" +
                           testing::TrainStepFiles(program).at("after").get<std::string>();
  dump::LoadOutcome outcome = dump::LoadInputs(path);
  INFO(path);
  REQUIRE_FALSE(outcome.failure);
  REQUIRE(outcome.inputs.modules.size() == 1);
  dump::ModuleInput& input = outcome.inputs.modules[0];
  input.files = dump::FindModuleFiles(path);
  input.jax_version = program.value("jax_version", "");
  return outcome;
}

// The fix a twin of `program` is: its mode's what-if, or the remat of the random bits for the
// rematerialized twin of a step that is not; "" when the twin is neither.
std::string FixFor(const json& program, const json& twin) {
  if (testing::IdentityOf(twin) == testing::IdentityOf(program)) {
    return testing::PredictedMode(testing::ModeOf(program), testing::ModeOf(twin));
  }
  const bool remat_twin = testing::ModeOf(twin) == testing::ModeOf(program) &&
                          testing::IdentityOf(twin, true) == testing::IdentityOf(program, true) &&
                          !program.value("remat", false) && twin.value("remat", false);
  return remat_twin ? "remat-random-bits" : "";
}

double ErrorPct(int64_t predicted, int64_t actual) {
  if (actual == 0) return predicted == 0 ? 0.0 : 100.0;
  return 100.0 * static_cast<double>(predicted - actual) / static_cast<double>(actual);
}

SPMDSIM_CORPUS_TEST("each fix's peak is within 5% of XLA's peak of the compile with that fix",
                    program) {
  for (const json& twin : testing::CorpusJson("manifest.json").at("programs")) {
    const std::string fix = FixFor(program, twin);
    if (fix.empty()) continue;
    dump::LoadOutcome source = LoadTrainStep(program);
    dump::LoadOutcome target = LoadTrainStep(twin);
    const ModuleReport from = BuildModuleReport(source.inputs.modules[0], {});
    const XlaMemoryFigures xla = BuildMemoryReport(target.inputs.modules[0], {}).xla;
    INFO(program.at("name").get<std::string>()
         << " -> " << twin.at("name").get<std::string>() << " (" << fix << ")");
    REQUIRE(xla.source.size() > 0);  // XLA's figures of the twin are in the corpus
    const FitFix* found = nullptr;
    for (const FitFix& f : from.fixes.ranked) found = f.fix == fix ? &f : found;
    INFO("fixes: " << from.fixes.ranked.size());
    REQUIRE(found != nullptr);
    INFO("predicted " << found->peak_bytes << " to " << found->peak_high_bytes << ", XLA "
                      << xla.peak_bytes << " (" << ErrorPct(found->peak_bytes, xla.peak_bytes)
                      << "%)");
    // A bounded fix (rbg: the generator sharded or replicated) holds XLA's peak between its
    // figures, within the tolerance; a point figure is within it.
    CHECK(ErrorPct(found->peak_bytes, xla.peak_bytes) <= kTolerancePct);
    CHECK(ErrorPct(found->peak_high_bytes, xla.peak_bytes) >= -kTolerancePct);
  }
}

}  // namespace
}  // namespace spmdsim::analyzer
