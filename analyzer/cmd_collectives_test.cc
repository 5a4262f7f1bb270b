// Runs the built `spmdsim collectives` (SPMDSIM_BINARY): JSON fields and totals against the
// independent count in testdata/expected_collectives.json, every preset loads, --topology FILE
// works and a bad --topology is a usage error (exit 2).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "analyzer/test_support.h"
#include "analyzer/topology_presets.h"

namespace spmdsim::analyzer {
namespace {

using test::RunOutput;
using test::RunSpmdsim;

const std::string kGradAccum = std::string(SPMDSIM_TESTDATA_DIR) +
                               "/dumps/dp8_gradaccum4_partitionable_remat/"
                               "module_0000.jit_train_step.cpu_after_optimizations.txt.gz";

TEST_CASE("spmdsim collectives --format json: fields and totals") {
  const RunOutput run = RunSpmdsim("collectives " + kGradAccum + " --format json");
  REQUIRE(run.exit_code == 0);
  const auto j = nlohmann::json::parse(run.out);
  const auto& c = j.at("modules").at(0).at("collectives");
  std::ifstream in(SPMDSIM_TESTDATA_DIR "/expected_collectives.json");
  const auto expected =
      nlohmann::json::parse(in).at("programs").at("dp8_gradaccum4_partitionable_remat");
  CHECK(c.at("total_wire_bytes_per_device") == expected.at("total_wire_bytes_per_device"));
  const auto& op = c.at("ops").at(0);
  for (const char* field :
       {"instruction", "kind", "group_size", "groups", "bytes", "wire_bytes_per_device",
        "est_time_us", "loop_multiplier", "op_name", "source"}) {
    CHECK(op.contains(field));
  }
  CHECK(op.at("loop_multiplier") == 4);
  CHECK(op.at("est_time_us").get<double>() > 0);
  CHECK(c.at("by_kind").at("all-reduce").at("executions") == 4);
  CHECK(c.at("topology") == "h100-8x-nvswitch");
}

TEST_CASE("every topology preset loads; files and bad names") {
  REQUIRE(TopologyPresetNames().size() >= 4);
  for (const std::string& name : TopologyPresetNames()) {
    std::string error;
    INFO(name << ": " << error);
    CHECK(LoadTopology(name, error).has_value());
  }
  // Two nodes of 4: the gradient all-reduce's ring crosses nodes twice out of 8 hops.
  const RunOutput split = RunSpmdsim("collectives " + kGradAccum +
                                     " --format json --topology h100-ib-400g "
                                     "--devices-per-node 4");
  REQUIRE(split.exit_code == 0);
  const auto parsed = nlohmann::json::parse(split.out);
  const auto& c = parsed.at("modules").at(0).at("collectives");
  const int64_t per_run = c.at("total_wire_bytes_per_device").get<int64_t>() / 4;  // 4 runs
  CHECK(c.at("inter_node_bytes_per_device").get<int64_t>() == per_run * 2 / 8 * 4);

  CHECK(RunSpmdsim("collectives " + kGradAccum + " --topology no-such-machine").exit_code == 2);
  const std::string file = std::string(SPMDSIM_TESTDATA_DIR) +
                           "/../analyzer/topologies/"
                           "tpu-v5e-16x16.json";
  const RunOutput from_file = RunSpmdsim("collectives " + kGradAccum + " --topology " + file);
  CHECK(from_file.exit_code == 0);
  CHECK(from_file.out.find("tpu-v5e-16x16") != std::string::npos);
}

const std::string kMeshBefore = std::string(SPMDSIM_TESTDATA_DIR) +
                                "/dumps/mesh4x2_replicated_remat/"
                                "module_0000.jit_train_step.before_optimizations.txt.gz";

TEST_CASE("spmdsim collectives on a before_optimizations dump: prediction beside XLA's") {
  const RunOutput run = RunSpmdsim("collectives " + kMeshBefore + " --format json");
  REQUIRE(run.exit_code == 0);
  const auto c = nlohmann::json::parse(run.out).at("modules").at(0).at("collectives");
  CHECK(c.at("ops").empty());  // nothing partitioned yet
  REQUIRE_FALSE(c.at("predicted").empty());
  for (const char* field : {"kind", "bytes", "wire_bytes_per_device", "group_size", "mesh_axis",
                            "reason", "op_name", "source", "loop_multiplier", "combined"}) {
    CHECK(c.at("predicted").at(0).contains(field));
  }
  CHECK(c.at("prediction_mesh").at("axes") == nlohmann::json::array({"data", "model"}));
  const auto& cmp = c.at("comparison");
  REQUIRE(cmp.is_object());
  const std::string actual = cmp.at("actual_file");
  CHECK(actual.find("cpu_after_optimizations.txt.gz") != std::string::npos);
  // The actual side is the after_optimizations table, the predicted side sums `predicted`.
  std::ifstream in(SPMDSIM_TESTDATA_DIR "/expected_collectives.json");
  const auto expected = nlohmann::json::parse(in).at("programs").at("mesh4x2_replicated_remat");
  CHECK(cmp.at("actual_total_wire_bytes_per_device") == expected.at("total_wire_bytes_per_device"));
  int64_t sum = 0;
  for (const auto& p : c.at("predicted")) {
    sum += p.at("wire_bytes_per_device").get<int64_t>() * p.at("loop_multiplier").get<int64_t>();
  }
  CHECK(cmp.at("predicted_total_wire_bytes_per_device") == sum);
  CHECK(c.at("predicted_total_wire_bytes_per_device") == sum);
  CHECK(std::abs(cmp.at("total_error_pct").get<double>()) <= 10.0);
  for (const auto& row : cmp.at("by_kind")) {
    CHECK(row.at("predicted_count") == expected.at("counts").at(row.at("kind").get<std::string>()));
  }

  const RunOutput text = RunSpmdsim("collectives " + kMeshBefore + " --max-ops 3");
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("predicted for the partitioned module (mesh [\"data\"=4, \"model\"=2])") !=
        std::string::npos);
  CHECK(text.out.find("compared with ") != std::string::npos);
  CHECK(text.out.find("all-reduce x31") != std::string::npos);  // the combined gradients
}

TEST_CASE("spmdsim collectives on a before_optimizations dump alone: no comparison") {
  const std::string dir = std::string(SPMDSIM_BINARY) + "_prediction_alone";
  REQUIRE(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "' && cp '" + kMeshBefore +
                       "' '" + dir + "/'")
                          .c_str()) == 0);
  const RunOutput run = RunSpmdsim("collectives " + dir + " --format json");
  REQUIRE(run.exit_code == 0);
  const auto c = nlohmann::json::parse(run.out).at("modules").at(0).at("collectives");
  CHECK(c.at("comparison").is_null());
  CHECK(c.at("predicted_by_kind").at("all-reduce").at("count") == 9);
  const RunOutput text = RunSpmdsim("collectives " + dir);
  CHECK(text.out.find("no after_optimizations module") != std::string::npos);
  CHECK(std::system(("rm -rf '" + dir + "'").c_str()) == 0);
}

}  // namespace
}  // namespace spmdsim::analyzer
