// The topology a module is timed on (analyzer/model/topology_choice.h) and the platform read from
// its dump (analyzer/model/module_platform.h): the default fits every corpus dump by device count
// and platform, a GPU's compute capability picks its preset, a PyTorch/XLA module counts its
// replicas, and a user's single-node topology that is too small is refused with the presets that
// fit.
#include "analyzer/model/topology_choice.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyzer/model/module_platform.h"
#include "testing/corpus_test.h"

namespace spmdsim::analyzer {
namespace {

dump::ModuleInput LoadOne(const std::string& relative) {
  dump::LoadOutcome outcome = dump::LoadInputs(std::string(SPMDSIM_TESTDATA_DIR) + "/" + relative);
  REQUIRE_FALSE(outcome.failure);
  REQUIRE(outcome.inputs.modules.size() >= 1);
  return std::move(outcome.inputs.modules[0]);
}

TopologyChoice Choose(const dump::ModuleInput& input, const TopologyRequest& request = {}) {
  std::string error;
  std::optional<TopologyChoice> choice = ChooseTopology(input, request, error);
  INFO(error);
  REQUIRE(choice);
  return *choice;
}

TopologyRequest UserRequest(const std::string& topology, int64_t devices_per_node = 0) {
  std::string error;
  std::optional<TopologyRequest> request = MakeTopologyRequest(topology, devices_per_node, error);
  INFO(error);
  REQUIRE(request);
  return *request;
}

const char kPyTorchXla[] =
    "pytorch_xla/module_0000.SyncTensorsGraph.29.sm_8.0_gpu_after_optimizations.txt";
const char kGpu16[] =
    "dumps/jax012_gpu16_flax_dp_partitionable_remat/"
    "module_0001.jit_train_step.sm_9.0a_gpu_after_optimizations.txt.gz";
const char kTpu16[] =
    "dumps/jax012_tpu16_fsdp_partitionable_remat/"
    "module_0003.jit_train_step.cl_1004524046.after_optimizations.txt.gz";

// Before optimizations XLA:GPU and XLA:CPU dumps name no platform; XLA:TPU's tiled entry layout
// is there in both.
SPMDSIM_CORPUS_TEST("the default topology of every corpus dump fits its device count and platform",
                    program) {
  const std::string kind = program.at("platform_kind");
  const int64_t devices = program.at("num_devices");
  for (const char* stage : {"before", "after"}) {
    const nlohmann::json& file = program.at("files").at(stage);
    if (!file.is_string()) continue;
    INFO(file.get<std::string>());
    const dump::ModuleInput input = LoadOne(file);
    const TopologyChoice choice = Choose(input);
    CHECK(choice.devices == devices);
    CHECK(choice.chosen == kChosenByDeviceCount);
    CHECK(passes::HoldsDevices(choice.topology, devices));
    if (kind == "tpu") {
      CHECK(choice.platform == "XLA:TPU");
      CHECK(choice.topology.name == "tpu-v5e-16x16");
      CHECK(choice.nodes == 1);
      continue;
    }
    // A before-optimizations module is named by its optimized files beside it.
    if (kind == "gpu") CHECK(choice.platform == "XLA:GPU (sm_9.0a)");
    if (kind == "cpu") CHECK(choice.platform == "XLA:CPU");
    // Every GPU and CPU cell is H100-shaped: one node of 8, or 2 nodes of 8 over InfiniBand.
    CHECK(choice.topology.name == (devices > 8 ? "h100-ib-400g" : "h100-8x-nvswitch"));
    CHECK(choice.nodes == (devices + 7) / 8);
  }
}

TEST_CASE("a 2-node GPU dump gets the multi-node preset and its reason") {
  const TopologyChoice choice = Choose(LoadOne(kGpu16));
  CHECK(choice.topology.name == "h100-ib-400g");
  CHECK(choice.topology.inter_node.has_value());
  CHECK(choice.nodes == 2);
  CHECK(DescribeTopologyChoice(choice) ==
        "h100-ib-400g, 2 nodes of 8 devices (chosen by device count: 16 devices of an XLA:GPU "
        "(sm_9.0a) module, H100/H200, more than one node of 8; --topology to change)");
}

TEST_CASE("the compute capability in the file name picks the GPU preset") {
  dump::ModuleInput input = LoadOne(kPyTorchXla);
  const struct {
    const char* arch;
    const char* node;
    const char* multi_node;
  } kCases[] = {{"7.0", "v100-8x-nvlink2", "v100-ib-100g"},
                {"8.0", "a100-80gb-8x-nvswitch", "a100-ib-200g"},
                {"9.0a", "h100-8x-nvswitch", "h100-ib-400g"},
                {"10.0a", "b200-8x-nvswitch", "b200-ib-400g"},
                {"8.9", "h100-8x-nvswitch", "h100-ib-400g"}};  // no preset: the H100 default
  for (const auto& c : kCases) {
    input.path = std::string("dir/module_0000.SyncTensorsGraph.29.sm_") + c.arch +
                 "_gpu_after_optimizations.txt";
    INFO(input.path);
    const ModulePlatform platform = PlatformOf(input);
    CHECK(platform.kind == PlatformKind::kGpu);
    CHECK(platform.gpu_arch == c.arch);
    const TopologyChoice one_node = Choose(input);
    CHECK(one_node.topology.name == c.node);
    CHECK(one_node.topology.description != "");  // the table names presets that exist
    TopologyRequest four_per_node;
    four_per_node.devices_per_node = 4;
    const TopologyChoice two_nodes = Choose(input, four_per_node);
    CHECK(two_nodes.topology.name == c.multi_node);
    CHECK(two_nodes.topology.description != "");
    CHECK(two_nodes.nodes == 2);
  }
  input.path = "dir/module_0000.jit_output_fn.cpu_after_optimizations.txt";  // "ouTPUt"
  CHECK(PlatformOf(input).kind == PlatformKind::kCpu);
  input.path = "dir/module_0000.jit_step.tpu_after_optimizations.txt";
  CHECK(PlatformOf(input).kind == PlatformKind::kTpu);
}

TEST_CASE("a PyTorch/XLA module runs on replica_count devices") {
  const dump::ModuleInput input = LoadOne(kPyTorchXla);
  REQUIRE(input.module->replica_count == 8);
  REQUIRE(input.module->num_partitions == 1);
  const TopologyChoice choice = Choose(input);
  CHECK(choice.devices == 8);
  CHECK(choice.topology.name == "a100-80gb-8x-nvswitch");
  std::string error;
  const TopologyRequest too_small = UserRequest("a100-80gb-8x-nvswitch", 4);
  CHECK_FALSE(ChooseTopology(input, too_small, error));
  CHECK(error.find("runs on 8 devices") != std::string::npos);
}

TEST_CASE("a user's single-node topology that cannot hold the module is refused") {
  const dump::ModuleInput gpu = LoadOne(kGpu16);
  std::string error;
  CHECK_FALSE(ChooseTopology(gpu, UserRequest("h100-8x-nvswitch"), error));
  INFO(error);
  CHECK(error.find("module jit_train_step") != std::string::npos);
  CHECK(error.find("runs on 16 devices (XLA:GPU (sm_9.0a))") != std::string::npos);
  CHECK(error.find("h100-8x-nvswitch (given by --topology) is one node of 8 devices") !=
        std::string::npos);
  // The GPU presets with an inter-node class, no TPU slice.
  CHECK(error.find("presets that hold 16 devices: a100-ib-200g, b200-ib-400g, h100-ib-400g, "
                   "h100-roce-400g, v100-ib-100g;") != std::string::npos);
  CHECK(error.find("--devices-per-node 16") != std::string::npos);
  // The same machine made one 16-GPU node, or one with an inter-node link, holds it.
  CHECK(Choose(gpu, UserRequest("h100-8x-nvswitch", 16)).nodes == 1);
  const TopologyChoice ib = Choose(gpu, UserRequest("h100-ib-400g"));
  CHECK(ib.chosen == kChosenByUser);
  CHECK(ib.nodes == 2);
  CHECK(DescribeTopologyChoice(ib) == "h100-ib-400g, 2 nodes of 8 devices (given by --topology)");

  const dump::ModuleInput tpu = LoadOne(kTpu16);
  CHECK(Choose(tpu, UserRequest("tpu-v5e-16x16")).chosen == kChosenByUser);
  CHECK_FALSE(ChooseTopology(tpu, UserRequest("tpu-v5e-16x16", 8), error));
  CHECK(error.find("presets that hold 16 devices: none;") != std::string::npos);
}

TEST_CASE("several modules' topologies in one line") {
  const dump::ModuleInput gpu16 = LoadOne(kGpu16);
  const dump::ModuleInput tpu16 = LoadOne(kTpu16);
  const std::vector<TopologyChoice> same = {Choose(gpu16), Choose(gpu16)};
  CHECK(DescribeTopologyChoices(same) == DescribeTopologyChoice(same[0]));
  const std::vector<TopologyChoice> mixed = {Choose(gpu16), Choose(tpu16)};
  CHECK(DescribeTopologyChoices(mixed) ==
        "h100-ib-400g for the modules of 16 devices, tpu-v5e-16x16 for the modules of 16 devices "
        "(chosen per module by device count and platform; --topology to change)");
}

}  // namespace
}  // namespace spmdsim::analyzer
