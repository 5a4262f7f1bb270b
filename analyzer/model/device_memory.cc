#include "analyzer/model/device_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include "analyzer/emit/human_units.h"

namespace spmdsim::analyzer {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

constexpr std::string_view kSmiSource =
    "nvidia-smi memory.total of the card (public nvidia-smi listings), the total the CUDA driver "
    "reports; XLA:GPU gives its allocator that total times the client's memory fraction";
constexpr std::string_view kTpuSource =
    "HBM per JAX device (Google Cloud TPU system architecture pages); libtpu keeps 256 MiB: its "
    "compile-time OOM (E1000) reports 15.75G of a v5e's 16 GiB available (older libtpu kept "
    "530 MiB, \"reserved 530.00M\"); assumed on v5p, v6e and v3";

constexpr std::string_view kTpuV4Source =
    "HBM per chip (Google Cloud TPU v4 pages); libtpu keeps 1.25G on a v4: its compile-time OOM "
    "on a TPU v4-32 (erfanzar/EasyDeL#166, testdata/oom/tpu_v4_easydel_166.log) reports \"Used "
    "63.80G of 30.75G hbm\" with \"reserved 1.25G\"";

// clang-format off
constexpr std::array kDevices = {
    DeviceSpec{"h100-80gb", "h100,h100-sxm,h100-pcie,h800", "H100 80GB", PlatformKind::kGpu, "9.0",
               true, 81559 * kMiB, 0, kSmiSource},
    DeviceSpec{"h200", "h200-141gb,gh200", "H200 141GB", PlatformKind::kGpu, "9.0", false,
               143771 * kMiB, 0, kSmiSource},
    DeviceSpec{"b200", "b200-180gb", "B200 180GB", PlatformKind::kGpu, "10.0", true,
               183359 * kMiB, 0, kSmiSource},
    DeviceSpec{"a100-80gb", "a100-80g", "A100 80GB", PlatformKind::kGpu, "8.0", true,
               81920 * kMiB, 0, kSmiSource},
    DeviceSpec{"a100-40gb", "a100,a100-40g", "A100 40GB", PlatformKind::kGpu, "8.0", false,
               40960 * kMiB, 0, kSmiSource},
    DeviceSpec{"v100-32gb", "v100-32g", "V100 32GB", PlatformKind::kGpu, "7.0", true,
               32768 * kMiB, 0, kSmiSource},
    DeviceSpec{"v100-16gb", "v100,v100-16g", "V100 16GB", PlatformKind::kGpu, "7.0", false,
               16384 * kMiB, 0, kSmiSource},
    DeviceSpec{"tpu-v5e", "v5e,v5litepod,v5lite", "TPU v5e", PlatformKind::kTpu, "", false,
               16 * kGiB, 256 * kMiB, kTpuSource},
    DeviceSpec{"tpu-v5p", "v5p", "TPU v5p", PlatformKind::kTpu, "", false, 95 * kGiB, 256 * kMiB,
               kTpuSource},
    DeviceSpec{"tpu-v6e", "v6e,trillium", "TPU v6e", PlatformKind::kTpu, "", false, 32 * kGiB,
               256 * kMiB, kTpuSource},
    DeviceSpec{"tpu-v4", "v4", "TPU v4", PlatformKind::kTpu, "", false, 32 * kGiB,
               1280 * kMiB, kTpuV4Source},
    DeviceSpec{"tpu-v3", "v3", "TPU v3 (one core)", PlatformKind::kTpu, "", false, 16 * kGiB,
               256 * kMiB, kTpuSource},
};
// clang-format on

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool HasAlias(const DeviceSpec& spec, std::string_view name) {
  std::string_view rest = spec.aliases;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    if (SameName(rest.substr(0, comma), name)) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

// "9.0a" -> "9.0": the feature suffix does not change the device.
std::string_view ArchNumber(std::string_view arch) {
  size_t end = arch.size();
  while (end > 0 && std::isalpha(static_cast<unsigned char>(arch[end - 1]))) --end;
  return arch.substr(0, end);
}

std::string SharingTheArch(const DeviceSpec& chosen) {
  std::string others;
  for (const DeviceSpec& spec : kDevices) {
    if (&spec == &chosen || spec.gpu_arch != chosen.gpu_arch) continue;
    others += others.empty() ? "" : ", ";
    others += spec.name;
  }
  return others;
}

void FillFromSpec(const DeviceSpec& spec, const DeviceChoice& choice, DeviceCapacity& capacity) {
  capacity.known = true;
  capacity.device = std::string(spec.name);
  capacity.display = std::string(spec.display);
  capacity.memory_bytes = spec.memory_bytes;
  capacity.reserved_bytes = spec.reserved_bytes;
  if (spec.platform == PlatformKind::kGpu) {
    const double fraction = choice.mem_fraction.value_or(kJaxDefaultGpuMemFraction);
    capacity.memory_fraction = fraction;
    capacity.usable_bytes = static_cast<int64_t>(static_cast<double>(spec.memory_bytes) * fraction);
    capacity.basis =
        fmt::format("{:g}% of {}{}", fraction * 100, HumanBytes(spec.memory_bytes),
                    choice.mem_fraction ? " (--mem-fraction)"
                                        : ", JAX's default XLA_PYTHON_CLIENT_MEM_FRACTION=.75");
  } else {
    capacity.usable_bytes = spec.memory_bytes - spec.reserved_bytes;
    capacity.basis = fmt::format("{} of HBM less {} libtpu keeps", HumanBytes(spec.memory_bytes),
                                 HumanBytes(spec.reserved_bytes));
  }
}

}  // namespace

std::span<const DeviceSpec> DeviceTable() { return kDevices; }

const DeviceSpec* FindDevice(std::string_view name) {
  for (const DeviceSpec& spec : kDevices) {
    if (SameName(spec.name, name) || HasAlias(spec, name)) return &spec;
  }
  return nullptr;
}

std::string DeviceNames() {
  std::string names;
  for (const DeviceSpec& spec : kDevices) {
    names += names.empty() ? "" : ", ";
    names += spec.name;
  }
  return names;
}

DeviceCapacity ResolveDeviceCapacity(const DeviceChoice& choice, const ModulePlatform& platform) {
  DeviceCapacity capacity;
  const DeviceSpec* spec = nullptr;
  if (!choice.device.empty()) {
    spec = FindDevice(choice.device);
    if (spec != nullptr) capacity.decided_by = "--device " + choice.device;
  } else if (platform.kind == PlatformKind::kGpu && !platform.gpu_arch.empty()) {
    const std::string_view arch = ArchNumber(platform.gpu_arch);
    for (const DeviceSpec& candidate : kDevices) {
      if (candidate.gpu_arch == arch && candidate.default_for_arch) spec = &candidate;
    }
    if (spec != nullptr) {
      const std::string others = SharingTheArch(*spec);
      capacity.decided_by = fmt::format(
          "the dump's sm_{}: {} assumed{}", platform.gpu_arch, spec->display,
          others.empty() ? "" : " (also sm_" + std::string(arch) + ": --device " + others + ")");
    }
  } else if (platform.kind == PlatformKind::kTpu && !platform.tpu_generation.empty()) {
    spec = FindDevice("tpu-" + platform.tpu_generation);
    if (spec != nullptr) {
      capacity.decided_by = fmt::format("the dump's target arguments: {}", spec->display);
    }
  }
  if (spec != nullptr) FillFromSpec(*spec, choice, capacity);
  if (choice.capacity) {
    capacity.known = true;
    capacity.usable_bytes = *choice.capacity;
    capacity.memory_fraction.reset();
    const std::string from = choice.capacity_from.empty() ? "--capacity" : choice.capacity_from;
    capacity.basis = from;
    capacity.decided_by = spec != nullptr ? capacity.decided_by + ", " + from : from;
    if (spec == nullptr) {
      capacity.display = choice.capacity_from.empty() ? "device of " + HumanBytes(*choice.capacity)
                                                      : "device of " + choice.capacity_from;
    }
  }
  if (capacity.known) return capacity;
  switch (platform.kind) {
    case PlatformKind::kTpu:
      capacity.unknown =
          "the TPU generation is in the compile's target_arguments.txt, which is not beside this "
          "module: --device tpu-v5e, tpu-v5p, tpu-v6e, tpu-v4, ... or --capacity SIZE";
      break;
    case PlatformKind::kCpu:
      capacity.unknown = "XLA:CPU uses the host's memory: --device NAME or --capacity SIZE";
      break;
    case PlatformKind::kGpu:
      capacity.unknown = platform.gpu_arch.empty()
                             ? "the dump does not name the GPU: --device NAME or --capacity SIZE"
                             : "no device of sm_" + platform.gpu_arch +
                                   " in the table: --device NAME or --capacity SIZE";
      break;
    case PlatformKind::kUnknown:
      capacity.unknown = "the dump names no platform: --device NAME or --capacity SIZE";
      break;
  }
  return capacity;
}

FitVerdict JudgeFit(int64_t peak_bytes, DeviceCapacity capacity) {
  FitVerdict verdict;
  verdict.peak_bytes = peak_bytes;
  verdict.capacity = std::move(capacity);
  if (verdict.capacity.known) {
    verdict.fits = peak_bytes <= verdict.capacity.usable_bytes;
    verdict.margin_bytes = verdict.capacity.usable_bytes - peak_bytes;
    if (verdict.capacity.memory_fraction && verdict.capacity.memory_bytes > 0) {
      verdict.fits_whole_device = peak_bytes <= verdict.capacity.memory_bytes;
    }
  }
  return verdict;
}

FitVerdict JudgeModuleFit(const dump::ModuleInput& input, int64_t peak_bytes,
                          const DeviceChoice& choice, passes::ModuleAnalyses* analyses) {
  return JudgeFit(peak_bytes, ResolveDeviceCapacity(choice, PlatformOf(input, analyses)));
}

std::optional<double> GpuFractionThatFits(const FitVerdict& verdict) {
  const DeviceCapacity& c = verdict.capacity;
  if (!c.memory_fraction || c.memory_bytes <= 0 || verdict.fits.value_or(true)) return std::nullopt;
  const double needed = std::ceil(static_cast<double>(verdict.peak_bytes) * 100.0 /
                                  static_cast<double>(c.memory_bytes)) /
                        100.0;
  if (needed > 1.0 || needed <= *c.memory_fraction) return std::nullopt;
  return needed;
}

}  // namespace spmdsim::analyzer
