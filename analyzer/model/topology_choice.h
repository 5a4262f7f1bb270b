// Which machine a module's collectives are timed on: the user's --topology, else a preset chosen
// by the module's device count (ir/device_count.h) and platform (analyzer/model/module_platform.h):
//   XLA:GPU  the preset of that GPU (by compute capability: sm_7.0 V100, sm_8.0 A100, sm_9.0
//            H100, sm_10.0 B200; another or none: H100): one NVLink node for up to 8 devices
//            (or --devices-per-node), its multi-node InfiniBand preset past that;
//   XLA:TPU  the first of tpu-v5e-16x16 (256 chips), tpu-v5p-16x16x24 (6,144) whose slice holds
//            the devices (the TPU generation is not in the dump);
//   XLA:CPU  and dumps that do not name their platform: the GPU default (H100), said so.
// A topology that cannot hold the module's devices (one node, fewer devices than the module, no
// inter-node link) is an error naming the module, its device count and the presets that fit.
//
// Described in text as, e.g.:
//   h100-ib-400g, 2 nodes of 8 devices (chosen by device count: 16 devices of an XLA:GPU
//   (sm_9.0a) module, H100/H200, more than one node of 8; --topology to change)
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dump/module_loader.h"
#include "passes/collectives/topology.h"
#include "passes/module_analyses.h"

namespace spmdsim::analyzer {

inline constexpr char kChosenByUser[] = "user";
inline constexpr char kChosenByDeviceCount[] = "default-by-device-count";

// What the command line asked for, checked before any module is loaded.
struct TopologyRequest {
  std::optional<passes::Topology> user;  // --topology, loaded; nullopt = choose per module
  int64_t devices_per_node = 0;          // --devices-per-node; 0 = the topology's own
};

// Loads --topology when given (empty = none). nullopt and a message for an unknown preset or an
// unreadable file.
std::optional<TopologyRequest> MakeTopologyRequest(const std::string& topology,
                                                   int64_t devices_per_node, std::string& error);

struct TopologyChoice {
  passes::Topology topology;  // --devices-per-node applied
  std::string chosen;         // kChosenByUser or kChosenByDeviceCount
  int64_t devices = 1;        // the module's device count
  int64_t nodes = 1;          // nodes those devices fill
  std::string platform;       // ModulePlatform::Describe()
  std::string reason;         // why this preset ("16 devices of an XLA:GPU ..."); empty for user
};

// nullopt and a message (name, device count, the presets that fit) when the topology cannot hold
// the module's devices.
// `analyses` (may be null): the module's shared analyses, which keep what deciding its platform
// scans.
std::optional<TopologyChoice> ChooseTopology(const dump::ModuleInput& input,
                                             const TopologyRequest& request, std::string& error,
                                             passes::ModuleAnalyses* analyses = nullptr);

// Every module's choice, in order; nullopt and the first module's message when one does not fit.
// `analyses`: empty, or each input's shared analyses, in order.
std::optional<std::vector<TopologyChoice>> ChooseTopologies(
    const std::vector<dump::ModuleInput>& inputs, const TopologyRequest& request,
    std::string& error, std::span<const std::unique_ptr<passes::ModuleAnalyses>> analyses = {});

// One line for text and HTML: "NAME, NODES (given by --topology)" or "(chosen by ...)".
std::string DescribeTopologyChoice(const TopologyChoice& choice);

// Several modules' choices (a report): the first one's description when all have the same
// preset and device count, else each name with the device counts it was used for.
std::string DescribeTopologyChoices(const std::vector<TopologyChoice>& choices);

}  // namespace spmdsim::analyzer
