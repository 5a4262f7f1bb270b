// A module whose devices are replicas, as PyTorch/XLA and JAX 0.4's pmap hand them to XLA
// (`replica_count=8`, no num_partitions; testdata/replicas/pmap_cpu8, written by XLA:CPU, see
// tools/gen_replica_dump.py): every command counts 8 devices, groups of 8 replicas, and sizes
// memory exactly as XLA's memory_analysis().
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "analyzer/test_support.h"

namespace spmdsim::analyzer {
namespace {

using nlohmann::json;
using test::RunSpmdsim;

const std::string kDump = std::string(SPMDSIM_TESTDATA_DIR) + "/replicas/pmap_cpu8";

json After(const std::string& command) {
  const test::RunOutput run = RunSpmdsim(command + " --format json --stage after " + kDump);
  REQUIRE(run.exit_code == 0);
  const json modules = json::parse(run.out).at("modules");
  REQUIRE(modules.size() == 1);
  return modules.at(0);
}

TEST_CASE("a replica-based module counts its replicas as devices in every command") {
  const json stats = After("stats").at("stats");
  REQUIRE(stats.at("replica_count") == 8);
  REQUIRE(stats.at("num_partitions") == 1);

  const json collectives = After("collectives").at("collectives");
  CHECK(collectives.at("num_devices") == 8);
  CHECK(collectives.at("topology_choice").at("devices") == 8);
  REQUIRE_FALSE(collectives.at("ops").empty());
  for (const json& op : collectives.at("ops")) {
    INFO(op.at("instruction"));
    CHECK(op.at("kind") == "all-reduce");
    CHECK(op.at("group_size") == 8);
    // Ring all-reduce: 2 (n - 1) / n of the buffer per device (REFERENCE section 5).
    CHECK(op.at("wire_bytes_per_device").get<int64_t>() ==
          op.at("bytes").get<int64_t>() * 2 * 7 / 8);
  }
  CHECK(After("rng sites").at("rng").at("num_partitions") == 8);  // devices: replicas x partitions
  CHECK(RunSpmdsim("rng sites --stage after " + kDump).out.find(", 8 devices\n") !=
        std::string::npos);

  std::ifstream in(kDump + "/memory_analysis.json");
  const json xla = json::parse(in);
  const json memory = After("analyze").at("memory");
  CHECK(memory.at("argument_bytes") == xla.at("argument_size_in_bytes"));
  CHECK(memory.at("output_bytes") == xla.at("output_size_in_bytes"));
  CHECK(memory.at("alias_bytes") == xla.at("alias_size_in_bytes"));
  CHECK(memory.at("temp_bytes") == xla.at("temp_size_in_bytes"));
}

}  // namespace
}  // namespace spmdsim::analyzer
