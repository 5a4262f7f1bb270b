// The CUDA backend: each stage of a lowering plan is one kernel, a grid-stride loop over the
// same per-element function the CPU backend runs (lowering_ops.h). Buffers are plain cudaMalloc
// allocations; the measured bytes are the drop in free device memory (cudaMemGetInfo) from
// before the plan's allocations to after its first run, and time is CUDA events around the
// stages of one run (median of the timed repetitions).
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "cuda_validate/backend.h"

namespace spmdsim::validate {
namespace {

constexpr int kThreads = 256;

// --- Kernels: one per stage kind --------------------------------------------------------------

#define SPMDSIM_GRID_STRIDE(i, count)                                                          \
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < (count); \
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)

__global__ void IotaReplicatedKernel(ElementParams p, uint32_t* counters, uint64_t count) {
  SPMDSIM_GRID_STRIDE(i, count) { IotaReplicatedAt(p, counters, i); }
}
__global__ void HashReplicatedKernel(ElementParams p, const uint32_t* counters, uint32_t* words,
                                     uint64_t count) {
  SPMDSIM_GRID_STRIDE(j, count) { HashReplicatedAt(p, counters, words, j); }
}
__global__ void Iota2x32Kernel(ElementParams p, uint32_t* hi, uint32_t* lo, uint64_t count) {
  SPMDSIM_GRID_STRIDE(i, count) { Iota2x32At(p, hi, lo, i); }
}
__global__ void BroadcastKeyKernel(ElementParams p, uint32_t* k0, uint32_t* k1, uint64_t count) {
  SPMDSIM_GRID_STRIDE(i, count) { BroadcastKeyAt(p, k0, k1, i); }
}
__global__ void HashKernel(ElementParams p, const uint32_t* hi, const uint32_t* lo, uint32_t* y0,
                           uint32_t* y1, uint64_t count) {
  SPMDSIM_GRID_STRIDE(i, count) { HashAt(p, hi, lo, y0, y1, i); }
}
__global__ void HashKeyOperandsKernel(const uint32_t* k0, const uint32_t* k1, const uint32_t* hi,
                                      const uint32_t* lo, uint32_t* y0, uint32_t* y1,
                                      uint64_t count) {
  SPMDSIM_GRID_STRIDE(i, count) { HashKeyOperandsAt(k0, k1, hi, lo, y0, y1, i); }
}
__global__ void DropoutFromWordsKernel(ElementParams p, const uint32_t* words, const float* x,
                                       uint8_t* mask, float* y, uint64_t count) {
  SPMDSIM_GRID_STRIDE(i, count) { DropoutFromWordsAt(p, words, x, mask, y, i); }
}
__global__ void DropoutFromPairKernel(ElementParams p, const uint32_t* y0, const uint32_t* y1,
                                      const float* x, uint8_t* mask, float* y, uint64_t count) {
  SPMDSIM_GRID_STRIDE(i, count) { DropoutFromPairAt(p, y0, y1, x, mask, y, i); }
}
__global__ void DropoutFusedKernel(ElementParams p, const float* x, uint8_t* mask, float* y,
                                   uint32_t* bits_out, uint64_t count) {
  SPMDSIM_GRID_STRIDE(i, count) { FusedDropoutAt(p, x, mask, y, bits_out, i); }
}
__global__ void FillInputKernel(uint64_t offset, float* x, uint64_t count) {
  SPMDSIM_GRID_STRIDE(i, count) { x[i] = InputAt(offset + i); }
}
__global__ void XorKernel(const uint32_t* a, const uint32_t* b, uint32_t* out, uint64_t count) {
  SPMDSIM_GRID_STRIDE(i, count) { out[i] = a[i] ^ b[i]; }
}

#undef SPMDSIM_GRID_STRIDE

std::string CudaError(const char* what, cudaError_t status) {
  return std::string(what) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) +
         ")";
}

// Device buffers of one run, freed on destruction.
class DeviceArena {
 public:
  ~DeviceArena() {
    for (auto& [name, pointer] : buffers_) cudaFree(pointer);
  }
  // Returns an error message, empty on success.
  std::string Allocate(int key, int64_t bytes) {
    void* pointer = nullptr;
    const cudaError_t status =
        cudaMalloc(&pointer, static_cast<size_t>(std::max<int64_t>(bytes, 1)));
    if (status != cudaSuccess) {
      cudaGetLastError();  // clear the sticky-free error state of a failed allocation
      return CudaError(("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str(), status);
    }
    buffers_[key] = pointer;
    requested_ += bytes;
    return "";
  }
  template <typename T>
  T* Get(int key) const {
    return static_cast<T*>(buffers_.at(key));
  }
  int64_t requested() const { return requested_; }

 private:
  std::map<int, void*> buffers_;
  int64_t requested_ = 0;
};

// Keys of the unmeasured buffers, beside the plan's roles.
constexpr int kInputX = 100;
constexpr int kOutputY = 101;
constexpr int kCheckBits = 102;

int RoleKey(BufferRole role) { return static_cast<int>(role); }

class CudaBackend : public Backend {
 public:
  CudaBackend(std::string name, int sm_count, DevicePeaks peaks)
      : name_(std::move(name)), sm_count_(sm_count), peaks_(std::move(peaks)) {}

  std::string Name() const override { return "cuda"; }
  std::string DeviceName() const override { return name_; }
  DevicePeaks Peaks() const override { return peaks_; }

  LoweringRun Run(const LoweringPlan& plan, const RunOptions& options) override {
    LoweringRun run;
    run.error = RunOrError(plan, options, run);
    return run;
  }

 private:
  unsigned Blocks(int64_t count) const {
    const int64_t wanted = (count + kThreads - 1) / kThreads;
    return static_cast<unsigned>(std::clamp<int64_t>(wanted, 1, int64_t{sm_count_} * 16));
  }

  void LaunchStage(const LoweringPlan& plan, StageSpec stage, const DeviceArena& a,
                   uint32_t* bits_out) const {
    const ElementParams& p = plan.params;
    const auto n = static_cast<uint64_t>(stage.count);
    const unsigned blocks = Blocks(stage.count);
    const auto u32 = [&](BufferRole role) { return a.Get<uint32_t>(RoleKey(role)); };
    uint8_t* mask = a.Get<uint8_t>(RoleKey(BufferRole::kMask));
    const float* x = a.Get<float>(kInputX);
    float* y = a.Get<float>(kOutputY);
    switch (stage.kind) {
      case StageKind::kIotaReplicated:
        IotaReplicatedKernel<<<blocks, kThreads>>>(p, u32(BufferRole::kCounters), n);
        break;
      case StageKind::kHashReplicated:
        HashReplicatedKernel<<<blocks, kThreads>>>(p, u32(BufferRole::kCounters),
                                                   u32(BufferRole::kWords), n);
        break;
      case StageKind::kIota2x32:
        Iota2x32Kernel<<<blocks, kThreads>>>(p, u32(BufferRole::kCounterHi),
                                             u32(BufferRole::kCounterLo), n);
        break;
      case StageKind::kBroadcastKey:
        BroadcastKeyKernel<<<blocks, kThreads>>>(p, u32(BufferRole::kKey0), u32(BufferRole::kKey1),
                                                 n);
        break;
      case StageKind::kHash:
        HashKernel<<<blocks, kThreads>>>(p, u32(BufferRole::kCounterHi),
                                         u32(BufferRole::kCounterLo), u32(BufferRole::kHash0),
                                         u32(BufferRole::kHash1), n);
        break;
      case StageKind::kHashKeyOperands:
        HashKeyOperandsKernel<<<blocks, kThreads>>>(
            u32(BufferRole::kKey0), u32(BufferRole::kKey1), u32(BufferRole::kCounterHi),
            u32(BufferRole::kCounterLo), u32(BufferRole::kHash0), u32(BufferRole::kHash1), n);
        break;
      case StageKind::kDropoutFromWords:
        DropoutFromWordsKernel<<<blocks, kThreads>>>(p, u32(BufferRole::kWords), x, mask, y, n);
        break;
      case StageKind::kDropoutFromPair:
        DropoutFromPairKernel<<<blocks, kThreads>>>(p, u32(BufferRole::kHash0),
                                                    u32(BufferRole::kHash1), x, mask, y, n);
        break;
      case StageKind::kDropoutFused:
        DropoutFusedKernel<<<blocks, kThreads>>>(p, x, mask, y, bits_out, n);
        break;
    }
  }

  std::string RunStages(const LoweringPlan& plan, const DeviceArena& arena,
                        uint32_t* bits_out) const {
    for (const StageSpec& stage : plan.stages) LaunchStage(plan, stage, arena, bits_out);
    const cudaError_t status = cudaGetLastError();
    return status == cudaSuccess ? "" : CudaError("kernel launch", status);
  }

  std::string RunOrError(const LoweringPlan& plan, const RunOptions& options, LoweringRun& run) {
    const int64_t nl = plan.sizes.local_elements;
    DeviceArena arena;
    // Input and output activations exist whatever the lowering: allocated before the baseline.
    std::string error = arena.Allocate(kInputX, 4 * nl);
    if (error.empty()) error = arena.Allocate(kOutputY, 4 * nl);
    if (!error.empty()) return error;
    FillInputKernel<<<Blocks(nl), kThreads>>>(plan.params.shard_offset, arena.Get<float>(kInputX),
                                              static_cast<uint64_t>(nl));
    cudaError_t status = cudaDeviceSynchronize();
    if (status != cudaSuccess) return CudaError("filling the input", status);
    size_t free_before = 0;
    size_t total = 0;
    status = cudaMemGetInfo(&free_before, &total);
    if (status != cudaSuccess) return CudaError("cudaMemGetInfo", status);
    if (plan.PlannedBytes() > static_cast<int64_t>(free_before)) {
      return "plan needs " + std::to_string(plan.PlannedBytes()) + " bytes; the device has " +
             std::to_string(free_before) + " free";
    }
    const int64_t unmeasured = arena.requested();
    for (const BufferSpec& buffer : plan.buffers) {
      error = arena.Allocate(RoleKey(buffer.role), buffer.Bytes());
      if (!error.empty()) return error;
    }
    // First run: warms caches and is the one whose footprint is measured.
    error = RunStages(plan, arena, nullptr);
    if (!error.empty()) return error;
    status = cudaDeviceSynchronize();
    if (status != cudaSuccess) return CudaError("first run", status);
    size_t free_after = 0;
    status = cudaMemGetInfo(&free_after, &total);
    if (status != cudaSuccess) return CudaError("cudaMemGetInfo", status);
    run.measured_bytes = static_cast<int64_t>(free_before) - static_cast<int64_t>(free_after);
    run.requested_bytes = arena.requested() - unmeasured;

    cudaEvent_t start = nullptr;
    cudaEvent_t stop = nullptr;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    std::vector<double> times;
    for (int r = 0; r < std::max(1, options.timed_repetitions) && error.empty(); ++r) {
      cudaEventRecord(start);
      error = RunStages(plan, arena, nullptr);
      cudaEventRecord(stop);
      status = cudaEventSynchronize(stop);
      if (status != cudaSuccess) error = CudaError("timed run", status);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      times.push_back(ms);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    if (!error.empty()) return error;
    std::sort(times.begin(), times.end());
    run.time_ms = times[times.size() / 2];

    if (!options.collect_outputs) return "";
    // After the measurement: a buffer for the bits, written by a XOR kernel or a checking run of
    // the fused kernel.
    error = arena.Allocate(kCheckBits, 4 * nl);
    if (!error.empty()) return error;
    uint32_t* check_bits = arena.Get<uint32_t>(kCheckBits);
    const auto n = static_cast<uint64_t>(nl);
    switch (plan.lowering) {
      case Lowering::kReplicated:
        status = cudaMemcpy(
            check_bits, arena.Get<uint32_t>(RoleKey(BufferRole::kWords)) + plan.sizes.shard_offset,
            4 * n, cudaMemcpyDeviceToDevice);
        if (status != cudaSuccess) return CudaError("copying the bits", status);
        break;
      case Lowering::kPartitionableMaterialized:
      case Lowering::kCustomCall:
        XorKernel<<<Blocks(nl), kThreads>>>(arena.Get<uint32_t>(RoleKey(BufferRole::kHash0)),
                                            arena.Get<uint32_t>(RoleKey(BufferRole::kHash1)),
                                            check_bits, n);
        break;
      case Lowering::kFused:
        error = RunStages(plan, arena, check_bits);
        if (!error.empty()) return error;
        break;
    }
    status = cudaDeviceSynchronize();
    if (status != cudaSuccess) return CudaError("checking run", status);
    run.bits.resize(n);
    run.mask.resize(n);
    run.y.resize(n);
    status = cudaMemcpy(run.bits.data(), check_bits, 4 * n, cudaMemcpyDeviceToHost);
    if (status == cudaSuccess) {
      status = cudaMemcpy(run.mask.data(), arena.Get<uint8_t>(RoleKey(BufferRole::kMask)), n,
                          cudaMemcpyDeviceToHost);
    }
    if (status == cudaSuccess) {
      status = cudaMemcpy(run.y.data(), arena.Get<float>(kOutputY), 4 * n, cudaMemcpyDeviceToHost);
    }
    return status == cudaSuccess ? "" : CudaError("copying the outputs back", status);
  }

  std::string name_;
  int sm_count_;
  DevicePeaks peaks_;
};

DevicePeaks PeaksOf(int device, const std::string& name) {
  DevicePeaks peaks;
  int sm_count = 0;
  int clock_khz = 0;
  int memory_clock_khz = 0;
  int bus_bits = 0;
  cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
  cudaDeviceGetAttribute(&memory_clock_khz, cudaDevAttrMemoryClockRate, device);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device);
  // sm_90 (and sm_80, sm_89) issue 64 32-bit integer operations per SM per clock.
  peaks.int32_ops_per_s = static_cast<double>(sm_count) * 64.0 * clock_khz * 1e3;
  const double from_clocks = 2.0 * memory_clock_khz * 1e3 * (bus_bits / 8.0);
  if (name.find("H200") != std::string::npos) {
    peaks.memory_bytes_per_s = 4.8e12;
    peaks.source = "memory: H200 datasheet 4.8 TB/s; int32: " + std::to_string(sm_count) +
                   " SMs x 64 lanes x " + std::to_string(clock_khz / 1000) + " MHz";
  } else {
    peaks.memory_bytes_per_s = from_clocks;
    peaks.source = "memory: 2 x " + std::to_string(memory_clock_khz / 1000) + " MHz x " +
                   std::to_string(bus_bits) + "-bit bus; int32: " + std::to_string(sm_count) +
                   " SMs x 64 lanes x " + std::to_string(clock_khz / 1000) + " MHz";
  }
  return peaks;
}

}  // namespace

std::unique_ptr<Backend> MakeCudaBackend(std::string& error) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    error = status != cudaSuccess ? CudaError("cudaGetDeviceCount", status) : "no CUDA device";
    return nullptr;
  }
  status = cudaSetDevice(0);
  if (status == cudaSuccess) status = cudaFree(nullptr);  // create the context now
  if (status != cudaSuccess) {
    error = CudaError("creating a context on device 0", status);
    return nullptr;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  auto backend =
      std::make_unique<CudaBackend>(prop.name, prop.multiProcessorCount, PeaksOf(0, prop.name));
  // Load every kernel once on a tiny site, so that lazy module loading cannot allocate device
  // memory inside a measurement.
  Site tiny;
  tiny.shape = {2, 3, 5};
  std::string sizes_error;
  const std::optional<SiteSizes> sizes = ComputeSizes(tiny, sizes_error);
  for (const Lowering lowering : kAllLowerings) {
    RunOptions warm;
    warm.timed_repetitions = 1;
    const LoweringRun run = backend->Run(MakePlan(lowering, tiny, *sizes), warm);
    if (!run.error.empty()) {
      error = "warm-up of " + std::string(LoweringName(lowering)) + ": " + run.error;
      return nullptr;
    }
  }
  return backend;
}

}  // namespace spmdsim::validate
