// The one interface behind which a lowering plan runs: on a CUDA device (cuda_backend.cu) or on
// the host CPU (cpu_backend.cc), which executes the same per-element code so that CI checks the
// harness, the bits and the byte accounting without a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda_validate/site.h"

namespace spmdsim::validate {

// Peak rates the measured throughput is set against; 0 where unknown.
struct DevicePeaks {
  double memory_bytes_per_s = 0;
  double int32_ops_per_s = 0;
  std::string source;  // how the figures were obtained
};

struct RunOptions {
  int timed_repetitions = 5;    // time_ms is the median of these runs, after one untimed run
  bool collect_outputs = true;  // copy bits, mask and y back for checking
};

struct LoweringRun {
  // Memory the lowering's buffers took while it ran: on CUDA the drop in free device memory
  // (cudaMemGetInfo) between before its allocations and after its first run; on the CPU the
  // high-water mark of its allocations.
  int64_t measured_bytes = 0;
  // High-water mark of the bytes the backend itself requested for the plan's buffers.
  int64_t requested_bytes = 0;
  double time_ms = 0;
  // The local shard's 32-bit bits as the lowering computed them, its mask and its output.
  std::vector<uint32_t> bits;
  std::vector<uint8_t> mask;
  std::vector<float> y;
  std::string error;  // non-empty: the run failed (out of memory, CUDA error, ...)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string Name() const = 0;        // "cuda" | "cpu"
  virtual std::string DeviceName() const = 0;  // e.g. "NVIDIA H200"
  virtual DevicePeaks Peaks() const = 0;
  virtual LoweringRun Run(const LoweringPlan& plan, const RunOptions& options) = 0;
};

// The host backend; max_bytes bounds what one plan may allocate (plans above it fail cleanly).
std::unique_ptr<Backend> MakeCpuBackend(int64_t max_bytes);

#if defined(SPMDSIM_VALIDATE_HAVE_CUDA)
// The CUDA backend on device 0, or null with `error` set (no driver, no device, ...).
std::unique_ptr<Backend> MakeCudaBackend(std::string& error);
#endif

}  // namespace spmdsim::validate
