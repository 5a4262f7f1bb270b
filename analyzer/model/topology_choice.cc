#include "analyzer/model/topology_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "analyzer/model/module_platform.h"
#include "analyzer/model/topology_presets.h"
#include "ir/device_count.h"

namespace spmdsim::analyzer {
namespace {

// One node of 8 GPUs, and the multi-node preset of the same GPU, by compute capability.
struct GpuPresets {
  const char* arch;  // compute capability without the feature suffix ("9.0" of "9.0a")
  const char* gpu;
  const char* node;
  const char* multi_node;
};
constexpr GpuPresets kGpuPresets[] = {
    {"7.0", "V100", "v100-8x-nvlink2", "v100-ib-100g"},
    {"8.0", "A100", "a100-80gb-8x-nvswitch", "a100-ib-200g"},
    {"9.0", "H100/H200", "h100-8x-nvswitch", "h100-ib-400g"},
    {"10.0", "B200", "b200-8x-nvswitch", "b200-ib-400g"},
};
constexpr const GpuPresets& kDefaultGpu = kGpuPresets[2];  // the commonest machine today
constexpr int64_t kGpusPerNode = 8;                        // every GPU preset's node

// TPU slices from small to large; the first that holds the module is taken.
constexpr const char* kTpuPresets[] = {"tpu-v5e-16x16", "tpu-v5p-16x16x24"};

// The presets named here are compiled in; a test loads every one.
passes::Topology LoadPreset(const std::string& name) {
  return LoadTopologyPreset(name).value_or(passes::Topology{});
}

void ApplyDevicesPerNode(passes::Topology& topology, int64_t devices_per_node) {
  if (devices_per_node > 0) topology.devices_per_node = devices_per_node;
}

const GpuPresets* GpuPresetsFor(const std::string& arch) {
  const std::string base = arch.substr(0, arch.find_first_not_of("0123456789."));
  for (const GpuPresets& presets : kGpuPresets) {
    if (base == presets.arch) return &presets;
  }
  return nullptr;
}

// The preset for a module the user gave no --topology for, and why.
passes::Topology DefaultTopology(const ModulePlatform& platform, int64_t devices,
                                 int64_t devices_per_node, std::string& reason) {
  if (platform.kind == PlatformKind::kTpu) {
    passes::Topology topology;
    for (const char* name : kTpuPresets) {
      topology = LoadPreset(name);
      ApplyDevicesPerNode(topology, devices_per_node);
      if (passes::HoldsDevices(topology, devices)) break;
    }
    reason = fmt::format(
        "{} devices of an XLA:TPU module, the smallest TPU preset whose slice holds them; the "
        "dump does not name the TPU generation",
        devices);
    return topology;
  }
  const GpuPresets* gpu =
      platform.kind == PlatformKind::kGpu ? GpuPresetsFor(platform.gpu_arch) : nullptr;
  const GpuPresets& presets = gpu != nullptr ? *gpu : kDefaultGpu;
  const int64_t per_node = devices_per_node > 0 ? devices_per_node : kGpusPerNode;
  const bool multi_node = devices > per_node;
  passes::Topology topology = LoadPreset(multi_node ? presets.multi_node : presets.node);
  ApplyDevicesPerNode(topology, devices_per_node);
  std::string what;
  if (platform.kind == PlatformKind::kGpu && gpu != nullptr) {
    what = fmt::format("an {} module, {}", platform.Describe(), presets.gpu);
  } else if (platform.kind == PlatformKind::kGpu) {
    what = fmt::format("an {} module, a GPU without a preset of its own: priced as {}",
                       platform.Describe(), presets.gpu);
  } else if (platform.kind == PlatformKind::kCpu) {
    what = fmt::format("an XLA:CPU module: priced as {} GPUs, the GPU default", presets.gpu);
  } else {
    what = fmt::format(
        "a module whose dump does not name its platform: priced as {} GPUs, the GPU default",
        presets.gpu);
  }
  reason = fmt::format("{} devices of {}, {} node of {}", devices, what,
                       multi_node ? "more than one" : "one", per_node);
  return topology;
}

std::string NodesText(const passes::Topology& topology, int64_t nodes) {
  if (!topology.inter_node) {
    return fmt::format("one node of up to {} devices", topology.devices_per_node);
  }
  return fmt::format("{} node{} of {} devices", nodes, nodes == 1 ? "" : "s",
                     topology.devices_per_node);
}

// The presets of the module's kind that hold `devices` (after --devices-per-node), by name.
std::string PresetsThatFit(const ModulePlatform& platform, int64_t devices,
                           int64_t devices_per_node) {
  const std::string kind = platform.kind == PlatformKind::kTpu ? "tpu" : "gpu";
  std::string list;
  for (const std::string& name : TopologyPresetNames()) {
    passes::Topology topology = LoadPreset(name);
    ApplyDevicesPerNode(topology, devices_per_node);
    if (topology.platform != kind || !passes::HoldsDevices(topology, devices)) continue;
    list += (list.empty() ? "" : ", ") + name;
  }
  return list.empty() ? "none" : list;
}

}  // namespace

std::optional<TopologyRequest> MakeTopologyRequest(const std::string& topology,
                                                   int64_t devices_per_node, std::string& error) {
  TopologyRequest request;
  request.devices_per_node = devices_per_node;
  if (topology.empty()) return request;
  request.user = LoadTopology(topology, error);
  if (!request.user) return std::nullopt;
  ApplyDevicesPerNode(*request.user, devices_per_node);
  return request;
}

std::optional<TopologyChoice> ChooseTopology(const dump::ModuleInput& input,
                                             const TopologyRequest& request, std::string& error,
                                             passes::ModuleAnalyses* analyses) {
  const ModulePlatform platform = PlatformOf(input, analyses);
  TopologyChoice choice;
  choice.devices = ir::DeviceCount(*input.module);
  choice.platform = platform.Describe();
  if (request.user) {
    choice.topology = *request.user;
    choice.chosen = kChosenByUser;
  } else {
    choice.topology =
        DefaultTopology(platform, choice.devices, request.devices_per_node, choice.reason);
    choice.chosen = kChosenByDeviceCount;
  }
  choice.nodes = passes::NodeCount(choice.topology, choice.devices);
  if (passes::HoldsDevices(choice.topology, choice.devices)) return choice;
  error = fmt::format(
      "module {} ({}) runs on {} devices ({}), but topology {} ({}) is one node of {} devices "
      "with no inter-node link. Pass a multi-node --topology (presets that hold {} devices: {}; "
      "or a file with an \"inter_node\" class), or --devices-per-node {} if one node really "
      "holds them all",
      input.module->name, input.path, choice.devices, choice.platform, choice.topology.name,
      request.user ? "given by --topology" : "the default for it", choice.topology.devices_per_node,
      choice.devices, PresetsThatFit(platform, choice.devices, request.devices_per_node),
      choice.devices);
  return std::nullopt;
}

std::optional<std::vector<TopologyChoice>> ChooseTopologies(
    const std::vector<dump::ModuleInput>& inputs, const TopologyRequest& request,
    std::string& error, std::span<const std::unique_ptr<passes::ModuleAnalyses>> analyses) {
  std::vector<TopologyChoice> choices;
  choices.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::optional<TopologyChoice> choice = ChooseTopology(
        inputs[i], request, error, i < analyses.size() ? analyses[i].get() : nullptr);
    if (!choice) return std::nullopt;
    choices.push_back(std::move(*choice));
  }
  return choices;
}

std::string DescribeTopologyChoice(const TopologyChoice& choice) {
  const std::string where = NodesText(choice.topology, choice.nodes);
  if (choice.chosen == kChosenByUser) {
    return fmt::format("{}, {} (given by --topology)", choice.topology.name, where);
  }
  return fmt::format("{}, {} (chosen by device count: {}; --topology to change)",
                     choice.topology.name, where, choice.reason);
}

std::string DescribeTopologyChoices(const std::vector<TopologyChoice>& choices) {
  if (choices.empty()) return "";
  // The same preset on as many nodes: the first module's reason stands for all (a report puts
  // the after_optimizations module, whose file name tells the platform, first).
  const auto same = [&](const TopologyChoice& c) {
    return c.topology.name == choices[0].topology.name && c.nodes == choices[0].nodes &&
           c.devices == choices[0].devices;
  };
  if (std::all_of(choices.begin(), choices.end(), same)) return DescribeTopologyChoice(choices[0]);
  // name -> the device counts of the modules it was used for, in first-seen order of names.
  std::vector<std::pair<std::string, std::vector<int64_t>>> used;
  for (const TopologyChoice& c : choices) {
    auto it = std::find_if(used.begin(), used.end(),
                           [&](const auto& entry) { return entry.first == c.topology.name; });
    if (it == used.end()) it = used.insert(used.end(), {c.topology.name, {}});
    if (std::find(it->second.begin(), it->second.end(), c.devices) == it->second.end()) {
      it->second.push_back(c.devices);
    }
  }
  std::string out;
  for (const auto& [name, counts] : used) {
    out += out.empty() ? "" : ", ";
    out += name + " for the modules of ";
    for (size_t i = 0; i < counts.size(); ++i) {
      out += (i == 0 ? "" : i + 1 == counts.size() ? " or " : ", ") + std::to_string(counts[i]);
    }
    out += " devices";
  }
  return out + (choices[0].chosen == kChosenByUser ? " (given by --topology)"
                                                   : " (chosen per module by device count and "
                                                     "platform; --topology to change)");
}

}  // namespace spmdsim::analyzer
