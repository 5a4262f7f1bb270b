#include "analyzer/model/module_platform.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "passes/module_facts.h"

namespace spmdsim::analyzer {
namespace {

bool HasTiles(const ir::Shape& shape) {
  if (shape.IsTuple()) {
    return std::any_of(shape.tuple_shapes().begin(), shape.tuple_shapes().end(), HasTiles);
  }
  return shape.HasLayout() && !shape.layout().tiles.empty();
}

bool EntryLayoutIsTiled(const ir::HloModule& module) {
  if (!module.has_entry_layout) return false;
  return HasTiles(module.entry_result_layout) ||
         std::any_of(module.entry_parameter_layouts.begin(), module.entry_parameter_layouts.end(),
                     HasTiles);
}

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// "module_0001.jit_step.sm_9.0a_gpu_after_optimizations.txt" -> "9.0a"; "" when not there.
std::string GpuArch(const std::string& name, size_t gpu_at) {
  const size_t sm = name.rfind("sm_", gpu_at);
  if (sm == std::string::npos) return "";
  const std::string arch = name.substr(sm + 3, gpu_at - sm - 3);
  const bool plausible = !arch.empty() && std::isdigit(static_cast<unsigned char>(arch[0])) &&
                         std::all_of(arch.begin(), arch.end(),
                                     [](unsigned char c) { return std::isalnum(c) || c == '.'; });
  return plausible ? arch : "";
}

}  // namespace

std::string ModulePlatform::Describe() const {
  switch (kind) {
    case PlatformKind::kCpu:
      return "XLA:CPU";
    case PlatformKind::kTpu:
      return tpu_generation.empty() ? "XLA:TPU" : "XLA:TPU (" + tpu_generation + ")";
    case PlatformKind::kGpu:
      return gpu_arch.empty() ? "XLA:GPU" : "XLA:GPU (sm_" + gpu_arch + ")";
    case PlatformKind::kUnknown:
      break;
  }
  return "platform not named by the dump";
}

ModulePlatform PlatformOf(const dump::ModuleInput& input, passes::ModuleAnalyses* analyses) {
  ModulePlatform platform;
  const std::string name = Lower(std::filesystem::path(input.path).filename().string());
  // Not any "tpu" in the name: "jit_output_fn" has one.
  if (EntryLayoutIsTiled(*input.module) ||
      name.find("tpu_after_optimizations") != std::string::npos) {
    platform.kind = PlatformKind::kTpu;
    platform.tpu_generation = input.tpu_generation;
    return platform;
  }
  if (const size_t gpu = name.find("_gpu_after_optimizations"); gpu != std::string::npos) {
    platform.kind = PlatformKind::kGpu;
    platform.gpu_arch = GpuArch(name, gpu);
  } else if (name.find("cpu_after_optimizations") != std::string::npos) {
    platform.kind = PlatformKind::kCpu;
  } else if (analyses != nullptr ? analyses->HasGpuBackendMarks()
                                 : passes::HasGpuBackendMarks(*input.module)) {
    platform.kind = PlatformKind::kGpu;
  } else {
    // A module before optimizations: its optimized files beside it name the platform.
    for (const std::string& path : input.files.after_optimizations) {
      const std::string other = Lower(std::filesystem::path(path).filename().string());
      if (const size_t at = other.find("_gpu_after_optimizations"); at != std::string::npos) {
        platform.kind = PlatformKind::kGpu;
        platform.gpu_arch = GpuArch(other, at);
        break;
      }
      if (other.find("cpu_after_optimizations") != std::string::npos) {
        platform.kind = PlatformKind::kCpu;
        break;
      }
    }
  }
  return platform;
}

passes::PlatformProfile MemoryProfileOf(const dump::ModuleInput& input,
                                        passes::ModuleAnalyses* analyses) {
  if (const auto named = passes::ParsePlatform(input.platform)) {
    return passes::PlatformProfile::For(*named, "--platform");
  }
  const ModulePlatform platform = PlatformOf(input, analyses);
  switch (platform.kind) {
    case PlatformKind::kCpu:
      return passes::PlatformProfile::For(passes::Platform::kCpu, "the dump");
    case PlatformKind::kGpu:
      return passes::PlatformProfile::For(passes::Platform::kGpu, "the dump");
    case PlatformKind::kTpu: {
      passes::PlatformProfile profile =
          passes::PlatformProfile::For(passes::Platform::kTpu, "the dump");
      if (platform.tpu_generation == "v5p" || platform.tpu_generation == "v6e") {
        profile.tpu_tuple_table_unit = 32;
      }
      return profile;
    }
    case PlatformKind::kUnknown:
      break;
  }
  return passes::PlatformProfile::For(
      passes::Platform::kCpu, "assumed: the dump does not name its platform; --platform sets it");
}

}  // namespace spmdsim::analyzer
