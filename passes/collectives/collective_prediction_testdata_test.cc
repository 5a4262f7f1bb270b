// The collectives predicted from every before_optimizations dump in testdata/ against what XLA
// inserted in the after_optimizations dump of the same program
// (passes/collectives/collective_analysis.h): per kind, wire bytes within 10% and the same op count
// after combining; in total, within 10%. Reproduce the table with
//   spmdsim collectives
//   testdata/dumps/<program>/module_0000.jit_train_step.before_optimizations.txt
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "passes/collectives/collective_prediction.h"
#include "testing/corpus_files.h"
#include "testing/corpus_test.h"

namespace spmdsim::passes {
namespace {

constexpr double kTolerancePct = 10.0;

SPMDSIM_CORPUS_TEST("predicted collectives of every testdata program against XLA's", program) {
  const std::string name = program.at("name");
  const auto before = testing::LoadCorpusModule(program.at("files").at("before"));
  const auto after = testing::LoadCorpusModule(program.at("files").at("after"));
  const CollectivePrediction predicted = PredictCollectives(*before);
  const CollectiveResult actual = AnalyzeCollectives(*after);
  const PredictionComparison cmp = ComparePrediction(predicted, actual);

  CHECK(predicted.unknown_instructions == 0);
  for (const KindComparison& row : cmp.by_kind) {
    INFO(row.kind << ": predicted " << row.predicted_count << " ops, " << row.predicted_wire_bytes
                  << " B; actual " << row.actual_count << " ops, " << row.actual_wire_bytes
                  << " B");
    REQUIRE(row.error_defined);
    CHECK(std::abs(row.wire_error_pct) <= kTolerancePct);
    CHECK(row.predicted_count == row.actual_count);
    CHECK(row.predicted_executions == row.actual_executions);
  }
  INFO("total: predicted " << cmp.predicted_total_wire_bytes << ", actual "
                           << cmp.actual_total_wire_bytes);
  CHECK(cmp.actual_total_wire_bytes > 0);
  CHECK(std::abs(cmp.total_error_pct) <= kTolerancePct);

  // The reasons follow the program's settings: replicated-threefry traffic exactly when JAX
  // ran threefry in non-partitionable mode over split activations.
  const bool replicated_threefry = !program.at("threefry_partitionable").get<bool>() &&
                                   program.at("prng_impl") == "threefry2x32";
  int threefry = 0;
  int gradients = 0;
  for (const PredictedCollective& c : predicted.predicted) {
    threefry += c.reason == "replicated threefry";
    gradients += c.reason == "data-parallel gradient";
    CHECK_FALSE(c.op_name.empty());
    CHECK_FALSE(c.source.empty());
  }
  CHECK((threefry > 0) == replicated_threefry);
  CHECK(gradients > 0);
}

}  // namespace
}  // namespace spmdsim::passes
