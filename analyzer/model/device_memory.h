// The memory a device gives XLA, and whether a module's peak fits it (docs/DEVICES.md).
//
// A device's usable memory is what its runtime lets XLA allocate, not the number on the box:
//   GPU  the device's total as the driver reports it (nvidia-smi's memory.total) times the
//        client's memory fraction: JAX's XLA:GPU client gives its BFC allocator
//        total_memory * memory_fraction (xla/pjrt/gpu/gpu_helpers.cc), and JAX's default
//        fraction is 0.75 (XLA_PYTHON_CLIENT_MEM_FRACTION, docs "GPU memory allocation");
//   TPU  the chip's HBM less what libtpu reserves for itself: libtpu's compile-time OOM on a
//        v5e reports 15.75G available of its 16 GiB (256 MiB reserved).
// Which device: --device NAME, else the one the dump names (XLA:GPU writes the compute capability
// into the file name, sm_9.0a; several devices share one, so the most common is assumed and the
// output says so), or --capacity SIZE for any other. XLA:TPU names the generation in the target
// arguments it writes beside the module before optimizations (dump/tpu_target.h); a TPU module
// without them, and XLA:CPU (the host's memory), need --device or --capacity.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "analyzer/model/module_platform.h"

namespace spmdsim::analyzer {

struct DeviceSpec {
  std::string_view name;     // what --device takes: "h100-80gb"
  std::string_view aliases;  // other names --device takes, comma-separated: "h100,h100-sxm"
  std::string_view display;  // "H100 80GB"
  PlatformKind platform = PlatformKind::kUnknown;
  // GPU: the compute capability its dumps name, without the feature suffix ("9.0" for sm_9.0a).
  std::string_view gpu_arch;
  bool default_for_arch = false;  // assumed when a dump names only this arch
  int64_t memory_bytes = 0;       // the device's total as its runtime reports it
  int64_t reserved_bytes = 0;     // kept by the runtime before XLA's share (TPU: libtpu)
  std::string_view source;        // where memory_bytes and reserved_bytes come from
};

// Every device --device knows, GPUs first.
std::span<const DeviceSpec> DeviceTable();

// The device named `name` (its name or an alias, case-insensitive); null when none.
const DeviceSpec* FindDevice(std::string_view name);

// "h100-80gb (h100, h800), h200, ...": the names --device takes, for help and errors.
std::string DeviceNames();

// JAX's default share of a GPU's memory for XLA (XLA_PYTHON_CLIENT_MEM_FRACTION).
inline constexpr double kJaxDefaultGpuMemFraction = 0.75;

// What the command line says about the device.
struct DeviceChoice {
  std::string device;               // --device NAME; empty: from the dump
  std::optional<int64_t> capacity;  // --capacity SIZE: usable bytes, overrides the device's
  // Who states `capacity`, for the output: empty for --capacity; "the OOM message" when `oom`
  // takes the capacity an XLA:TPU message prints ("the OOM message (15.48G of hbm)").
  std::string capacity_from;
  std::optional<double> mem_fraction;  // --mem-fraction F (GPU): the client's share of memory
};

struct DeviceCapacity {
  bool known = false;
  std::string device;        // the table's name; empty for --capacity alone
  std::string display;       // "H100 80GB"; "a device of SIZE" for --capacity alone
  int64_t memory_bytes = 0;  // the device's total (0 for --capacity alone)
  int64_t reserved_bytes = 0;
  std::optional<double> memory_fraction;  // GPU: the share given to XLA
  int64_t usable_bytes = 0;
  std::string basis;       // how usable_bytes was derived, in words
  std::string decided_by;  // "--device h200", "--capacity", "the dump's sm_9.0a (...)"
  std::string unknown;     // why there is no verdict (known is false)
};

// The device `choice` names, else the dump's (`platform`). Never fails: an unknown --device is
// the command line's error (checked before, with FindDevice).
DeviceCapacity ResolveDeviceCapacity(const DeviceChoice& choice, const ModulePlatform& platform);

// Whether a module's peak fits its device.
struct FitVerdict {
  int64_t peak_bytes = 0;
  DeviceCapacity capacity;
  std::optional<bool> fits;  // nullopt without a device
  int64_t margin_bytes = 0;  // usable - peak (negative: over by that much)
  // GPU: the peak fits the device's whole memory. Newer XLA releases' default pool (the "0.75+"
  // policy of XLA_CLIENT_MEM_FRACTION) preallocates 75% and grows to all of it, subject to what
  // else holds device memory; older ones stop at the fraction.
  std::optional<bool> fits_whole_device;
};

FitVerdict JudgeFit(int64_t peak_bytes, DeviceCapacity capacity);

// The memory fraction a GPU client would need to hold `peak_bytes` (two decimals, rounded up),
// when it is above the one in use and no more than 1; nullopt otherwise (not a GPU, fits already,
// or more than the device has).
std::optional<double> GpuFractionThatFits(const FitVerdict& verdict);

// The verdict for one module: its device from `choice`, else from its dump (PlatformOf).
FitVerdict JudgeModuleFit(const dump::ModuleInput& input, int64_t peak_bytes,
                          const DeviceChoice& choice, passes::ModuleAnalyses* analyses = nullptr);

}  // namespace spmdsim::analyzer
