// Runs the built `spmdsim collectives` (SPMDSIM_BINARY): JSON fields and totals against the
// independent count in testdata/expected_collectives.json, every preset loads, --topology FILE
// works and a bad --topology is a usage error (exit 2).
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "analyzer/topology_presets.h"

namespace spmdsim::analyzer {
namespace {

struct Run {
  int exit_code = -1;
  std::string out;
};

Run RunTool(const std::string& args) {
  Run run;
  const std::string command = std::string(SPMDSIM_BINARY) + " " + args + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

const std::string kGradAccum = std::string(SPMDSIM_TESTDATA_DIR) +
                               "/dumps/dp8_gradaccum4_partitionable_remat/"
                               "module_0000.jit_train_step.cpu_after_optimizations.txt.gz";

TEST_CASE("spmdsim collectives --format json: fields and totals") {
  const Run run = RunTool("collectives " + kGradAccum + " --format json");
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
  const Run split = RunTool("collectives " + kGradAccum +
                            " --format json --topology h100-ib-400g "
                            "--devices-per-node 4");
  REQUIRE(split.exit_code == 0);
  const auto parsed = nlohmann::json::parse(split.out);
  const auto& c = parsed.at("modules").at(0).at("collectives");
  const int64_t per_run = c.at("total_wire_bytes_per_device").get<int64_t>() / 4;  // 4 runs
  CHECK(c.at("inter_node_bytes_per_device").get<int64_t>() == per_run * 2 / 8 * 4);

  CHECK(RunTool("collectives " + kGradAccum + " --topology no-such-machine").exit_code == 2);
  const std::string file = std::string(SPMDSIM_TESTDATA_DIR) +
                           "/../analyzer/topologies/"
                           "tpu-v5e-16x16.json";
  const Run from_file = RunTool("collectives " + kGradAccum + " --topology " + file);
  CHECK(from_file.exit_code == 0);
  CHECK(from_file.out.find("tpu-v5e-16x16") != std::string::npos);
}

}  // namespace
}  // namespace spmdsim::analyzer
