// Runs the built `spmdsim collectives` (SPMDSIM_BINARY): JSON fields and totals against the
// independent count in testdata/expected_collectives.json, every preset loads (and is in
// docs/COLLECTIVES.md), --topology FILE works and a bad --topology is a usage error (exit 2); the
// topology fits the module: chosen by device count and platform when not given (2-node GPU, TPU,
// CPU and PyTorch/XLA dumps), stated in text, JSON and the report, and a given single node too
// small for the module is a usage error.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/model/topology_presets.h"
#include "analyzer/test_support.h"

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
  // An XLA:CPU module of 8 devices keeps the GPU default, and says so.
  const auto& choice = c.at("topology_choice");
  CHECK(choice.at("name") == "h100-8x-nvswitch");
  CHECK(choice.at("chosen") == "default-by-device-count");
  CHECK(choice.at("devices") == 8);
  CHECK(choice.at("nodes") == 1);
  CHECK(choice.at("platform") == "XLA:CPU");
  CHECK(choice.at("reason").get<std::string>().find("XLA:CPU module: priced as H100/H200 GPUs") !=
        std::string::npos);
}

TEST_CASE("every topology preset loads; files and bad names") {
  std::ifstream doc(SPMDSIM_TESTDATA_DIR "/../docs/COLLECTIVES.md");
  std::stringstream collectives_md;
  collectives_md << doc.rdbuf();
  for (const std::string& name : TopologyPresetNames()) {
    std::string error;
    const auto topology = LoadTopology(name, error);
    INFO(name << ": " << error);
    REQUIRE(topology.has_value());
    CHECK(topology->name == name);
    CHECK((topology->platform == "gpu" || topology->platform == "tpu"));
    // Each figure says where it comes from, and that the bus bandwidth is derived.
    CHECK(topology->source.find("approximate") != std::string::npos);
    CHECK(collectives_md.str().find("| `" + name + "` |") != std::string::npos);
  }
  // The names of earlier releases keep working, beside the machines real dumps come from.
  const std::vector<std::string> names = TopologyPresetNames();
  for (const char* name :
       {"h100-8x-nvswitch", "h100-ib-400g", "h200-8x-nvswitch", "tpu-v5e-16x16",
        "a100-40gb-8x-nvswitch", "a100-80gb-8x-nvswitch", "a100-ib-200g", "v100-8x-nvlink2",
        "b200-8x-nvswitch", "h100-roce-400g", "tpu-v5p-16x16x24", "tpu-v6e-16x16"}) {
    CHECK(std::find(names.begin(), names.end(), name) != names.end());
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

// stdout discarded, stderr kept: what a usage error says.
std::string StderrOf(const std::string& args) {
  const std::string command = std::string(SPMDSIM_BINARY) + " " + args + " 2>&1 >/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string err;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) err.append(buffer, n);
  pclose(pipe);
  return err;
}

// XLA:GPU compiled for 2 nodes of 8 H100s (JAX's topology "1x2x8"): the gradient all-reduce
// over all 16 devices crosses the node boundary twice per ring.
const std::string kGpu16 = std::string(SPMDSIM_TESTDATA_DIR) +
                           "/dumps/jax012_gpu16_flax_dp_partitionable_remat/"
                           "module_0001.jit_train_step.sm_9.0a_gpu_after_optimizations.txt.gz";

TEST_CASE("spmdsim collectives on a 2-node GPU dump: the multi-node InfiniBand preset by default") {
  const RunOutput run = RunSpmdsim("collectives " + kGpu16 + " --format json");
  REQUIRE(run.exit_code == 0);
  const auto c = nlohmann::json::parse(run.out).at("modules").at(0).at("collectives");
  CHECK(c.at("topology") == "h100-ib-400g");
  const auto& choice = c.at("topology_choice");
  CHECK(choice.at("name") == "h100-ib-400g");
  CHECK(choice.at("chosen") == "default-by-device-count");
  CHECK(choice.at("devices") == 16);
  CHECK(choice.at("devices_per_node") == 8);
  CHECK(choice.at("nodes") == 2);
  CHECK(choice.at("platform") == "XLA:GPU (sm_9.0a)");
  const auto& op = c.at("ops").at(0);
  REQUIRE(op.at("group_size") == 16);
  CHECK(op.at("spans_nodes") == true);
  // 2 of the ring's 16 hops cross nodes.
  CHECK(op.at("inter_node_bytes").get<int64_t>() ==
        op.at("wire_bytes_per_device").get<int64_t>() * 2 / 16);
  // The inter-node share is priced on InfiniBand: slower than the same bytes all on NVSwitch
  // (what the old default, one 8-GPU node, charged for them).
  const RunOutput flat = RunSpmdsim("collectives " + kGpu16 +
                                    " --format json --topology h100-8x-nvswitch "
                                    "--devices-per-node 16");
  REQUIRE(flat.exit_code == 0);
  const auto f = nlohmann::json::parse(flat.out).at("modules").at(0).at("collectives");
  CHECK(f.at("topology_choice").at("chosen") == "user");
  CHECK(f.at("inter_node_bytes_per_device") == 0);
  CHECK(c.at("est_time_us").get<double>() > 2 * f.at("est_time_us").get<double>());

  const RunOutput text = RunSpmdsim("collectives " + kGpu16);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("  topology: h100-ib-400g, 2 nodes of 8 devices (chosen by device count: 16 "
                      "devices of an XLA:GPU (sm_9.0a) module, H100/H200, more than one node of "
                      "8; --topology to change)\n") != std::string::npos);
}

TEST_CASE("a given single-node topology that cannot hold the module is a usage error") {
  CHECK(RunSpmdsim("collectives " + kGpu16 + " --topology h100-8x-nvswitch").exit_code == 2);
  const std::string err = StderrOf("collectives " + kGpu16 + " --topology h100-8x-nvswitch");
  CHECK(err.find("error: module jit_train_step (") != std::string::npos);
  CHECK(err.find("runs on 16 devices") != std::string::npos);
  CHECK(err.find("Pass a multi-node --topology (presets that hold 16 devices: a100-ib-200g, "
                 "b200-ib-400g, h100-ib-400g, h100-roce-400g, v100-ib-100g;") != std::string::npos);
  CHECK(err.find("or --devices-per-node 16") != std::string::npos);
  // Also when --devices-per-node splits one node's devices over nodes it has no link between.
  CHECK(RunSpmdsim("collectives " + kGradAccum +
                   " --topology h100-8x-nvswitch "
                   "--devices-per-node 4")
            .exit_code == 2);
  CHECK(RunSpmdsim("report " + kGpu16 + " -o /dev/null --topology h100-8x-nvswitch").exit_code ==
        2);
}

TEST_CASE("spmdsim collectives on a TPU dump: a TPU slice by default") {
  const std::string tpu16 = std::string(SPMDSIM_TESTDATA_DIR) +
                            "/dumps/jax012_tpu16_fsdp_partitionable_remat/"
                            "module_0003.jit_train_step.cl_1004524046.after_optimizations.txt.gz";
  const RunOutput run = RunSpmdsim("collectives " + tpu16 + " --format json");
  REQUIRE(run.exit_code == 0);
  const auto c = nlohmann::json::parse(run.out).at("modules").at(0).at("collectives");
  CHECK(c.at("topology") == "tpu-v5e-16x16");
  CHECK(c.at("topology_choice").at("platform") == "XLA:TPU");
  CHECK(c.at("topology_choice").at("devices") == 16);
  CHECK(c.at("inter_node_bytes_per_device") == 0);  // one ICI domain
}

// testdata/pytorch_xla/: a hand-written module in XLA's syntax, modeled on PyTorch/XLA's output:
// replica_count=8, no num_partitions, an all-reduce over replica_groups={{0,...,7}}.
const std::string kPyTorchXla =
    std::string(SPMDSIM_TESTDATA_DIR) +
    "/pytorch_xla/module_0000.SyncTensorsGraph.29.sm_8.0_gpu_after_optimizations.txt";

TEST_CASE("spmdsim collectives on a PyTorch/XLA module counts its replicas as devices") {
  const RunOutput text = RunSpmdsim("collectives " + kPyTorchXla);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("8 devices, topology a100-80gb-8x-nvswitch") != std::string::npos);
  const RunOutput run = RunSpmdsim("collectives " + kPyTorchXla + " --format json");
  REQUIRE(run.exit_code == 0);
  const auto c = nlohmann::json::parse(run.out).at("modules").at(0).at("collectives");
  CHECK(c.at("num_devices") == 8);
  CHECK(c.at("topology_choice").at("devices") == 8);
  CHECK(c.at("topology_choice").at("platform") == "XLA:GPU (sm_8.0)");
  CHECK(c.at("ops").at(0).at("id_kind") == "replica_id");
  CHECK(c.at("ops").at(0).at("group_size") == 8);
  // 8 replicas do not fit a node of 4 without a link between nodes ...
  CHECK(RunSpmdsim("collectives " + kPyTorchXla +
                   " --topology a100-80gb-8x-nvswitch "
                   "--devices-per-node 4")
            .exit_code == 2);
  // ... and over InfiniBand the ring crosses nodes on 2 of its 8 hops.
  const RunOutput split = RunSpmdsim("collectives " + kPyTorchXla +
                                     " --format json --topology a100-ib-200g --devices-per-node 4");
  REQUIRE(split.exit_code == 0);
  const auto s = nlohmann::json::parse(split.out).at("modules").at(0).at("collectives");
  CHECK(s.at("topology_choice").at("nodes") == 2);
  CHECK(s.at("inter_node_bytes_per_device").get<int64_t>() ==
        s.at("total_wire_bytes_per_device").get<int64_t>() * 2 / 8);
}

TEST_CASE("spmdsim report states the topology and how it was chosen") {
  const std::string html = std::string(SPMDSIM_BINARY) + "_topology_report.html";
  // The whole dump directory: the after_optimizations module, whose file name tells the GPU,
  // its before_optimizations module and compiled.as_text(), which do not; one preset for all.
  const std::string dir = kGpu16.substr(0, kGpu16.rfind('/'));
  REQUIRE(RunSpmdsim("report " + dir + " -o " + html).exit_code == 0);
  std::ifstream in(html);
  std::stringstream page;
  page << in.rdbuf();
  CHECK(page.str().find("collective times on h100-ib-400g, 2 nodes of 8 devices (chosen by "
                        "device count: 16 devices of an XLA:GPU (sm_9.0a) module") !=
        std::string::npos);
  REQUIRE(RunSpmdsim("report " + kGpu16 + " -o " + html + " --topology h100-ib-400g").exit_code ==
          0);
  std::ifstream given(html);
  std::stringstream given_page;
  given_page << given.rdbuf();
  CHECK(given_page.str().find("collective times on h100-ib-400g, 2 nodes of 8 devices (given by "
                              "--topology)") != std::string::npos);
  std::remove(html.c_str());
}

}  // namespace
}  // namespace spmdsim::analyzer
