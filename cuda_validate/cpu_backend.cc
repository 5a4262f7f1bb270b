// The host "device": runs a lowering plan's stages as plain loops over the same per-element
// functions the CUDA kernels call, allocating the plan's buffers through a counter whose
// high-water mark is the measured bytes.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>

#include "cuda_validate/backend.h"

namespace spmdsim::validate {
namespace {

// Buffers of one run, by role, with the bytes held now and at most. Storage is std::byte arrays
// from operator new[], aligned for any scalar type, in which u32/f32/u8 objects are implicitly
// created (C++20).
class HostArena {
 public:
  template <typename T>
  T* Allocate(BufferRole role, int64_t count) {
    const auto bytes = static_cast<size_t>(count) * sizeof(T);
    buffers_[role] = std::make_unique<std::byte[]>(bytes);
    held_ += static_cast<int64_t>(bytes);
    high_water_ = std::max(high_water_, held_);
    return reinterpret_cast<T*>(buffers_[role].get());
  }
  template <typename T>
  T* Get(BufferRole role) {
    return reinterpret_cast<T*>(buffers_.at(role).get());
  }
  int64_t high_water() const { return high_water_; }

 private:
  std::map<BufferRole, std::unique_ptr<std::byte[]>> buffers_;
  int64_t held_ = 0;
  int64_t high_water_ = 0;
};

void RunStage(const ElementParams& p, StageSpec stage, HostArena& arena, const float* x, float* y,
              uint8_t* mask, uint32_t* bits_out) {
  const auto count = static_cast<uint64_t>(stage.count);
  switch (stage.kind) {
    case StageKind::kIotaReplicated: {
      uint32_t* counters = arena.Get<uint32_t>(BufferRole::kCounters);
      for (uint64_t i = 0; i < count; ++i) IotaReplicatedAt(p, counters, i);
      break;
    }
    case StageKind::kHashReplicated: {
      const uint32_t* counters = arena.Get<uint32_t>(BufferRole::kCounters);
      uint32_t* words = arena.Get<uint32_t>(BufferRole::kWords);
      for (uint64_t j = 0; j < count; ++j) HashReplicatedAt(p, counters, words, j);
      break;
    }
    case StageKind::kIota2x32: {
      uint32_t* hi = arena.Get<uint32_t>(BufferRole::kCounterHi);
      uint32_t* lo = arena.Get<uint32_t>(BufferRole::kCounterLo);
      for (uint64_t i = 0; i < count; ++i) Iota2x32At(p, hi, lo, i);
      break;
    }
    case StageKind::kBroadcastKey: {
      uint32_t* k0 = arena.Get<uint32_t>(BufferRole::kKey0);
      uint32_t* k1 = arena.Get<uint32_t>(BufferRole::kKey1);
      for (uint64_t i = 0; i < count; ++i) BroadcastKeyAt(p, k0, k1, i);
      break;
    }
    case StageKind::kHash: {
      const uint32_t* hi = arena.Get<uint32_t>(BufferRole::kCounterHi);
      const uint32_t* lo = arena.Get<uint32_t>(BufferRole::kCounterLo);
      uint32_t* y0 = arena.Get<uint32_t>(BufferRole::kHash0);
      uint32_t* y1 = arena.Get<uint32_t>(BufferRole::kHash1);
      for (uint64_t i = 0; i < count; ++i) HashAt(p, hi, lo, y0, y1, i);
      break;
    }
    case StageKind::kHashKeyOperands: {
      const uint32_t* k0 = arena.Get<uint32_t>(BufferRole::kKey0);
      const uint32_t* k1 = arena.Get<uint32_t>(BufferRole::kKey1);
      const uint32_t* hi = arena.Get<uint32_t>(BufferRole::kCounterHi);
      const uint32_t* lo = arena.Get<uint32_t>(BufferRole::kCounterLo);
      uint32_t* y0 = arena.Get<uint32_t>(BufferRole::kHash0);
      uint32_t* y1 = arena.Get<uint32_t>(BufferRole::kHash1);
      for (uint64_t i = 0; i < count; ++i) HashKeyOperandsAt(k0, k1, hi, lo, y0, y1, i);
      break;
    }
    case StageKind::kDropoutFromWords: {
      const uint32_t* words = arena.Get<uint32_t>(BufferRole::kWords);
      for (uint64_t i = 0; i < count; ++i) DropoutFromWordsAt(p, words, x, mask, y, i);
      break;
    }
    case StageKind::kDropoutFromPair: {
      const uint32_t* y0 = arena.Get<uint32_t>(BufferRole::kHash0);
      const uint32_t* y1 = arena.Get<uint32_t>(BufferRole::kHash1);
      for (uint64_t i = 0; i < count; ++i) DropoutFromPairAt(p, y0, y1, x, mask, y, i);
      break;
    }
    case StageKind::kDropoutFused:
      for (uint64_t i = 0; i < count; ++i) FusedDropoutAt(p, x, mask, y, bits_out, i);
      break;
  }
}

// The local bits a finished run left in its buffers (the fused lowering keeps none).
std::vector<uint32_t> LocalBits(const LoweringPlan& plan, HostArena& arena) {
  const auto nl = static_cast<size_t>(plan.sizes.local_elements);
  std::vector<uint32_t> bits(nl);
  if (plan.lowering == Lowering::kReplicated) {
    const uint32_t* words = arena.Get<uint32_t>(BufferRole::kWords);
    std::copy_n(words + plan.sizes.shard_offset, nl, bits.begin());
  } else {
    const uint32_t* y0 = arena.Get<uint32_t>(BufferRole::kHash0);
    const uint32_t* y1 = arena.Get<uint32_t>(BufferRole::kHash1);
    for (size_t i = 0; i < nl; ++i) bits[i] = y0[i] ^ y1[i];
  }
  return bits;
}

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(int64_t max_bytes) : max_bytes_(max_bytes) {}
  std::string Name() const override { return "cpu"; }
  std::string DeviceName() const override { return "host CPU (reference backend)"; }
  DevicePeaks Peaks() const override {
    return DevicePeaks{0, 0, "none: the CPU backend checks logic, not speed"};
  }

  LoweringRun Run(const LoweringPlan& plan, const RunOptions& options) override {
    LoweringRun run;
    const int64_t nl = plan.sizes.local_elements;
    const int64_t io_bytes = 8 * nl;  // x and y
    if (plan.PlannedBytes() > max_bytes_ - io_bytes) {
      run.error = "plan needs " + std::to_string(plan.PlannedBytes() + io_bytes) +
                  " bytes of host memory, over the CPU backend's limit of " +
                  std::to_string(max_bytes_) + " (--max-host-bytes)";
      return run;
    }
    std::vector<float> x(static_cast<size_t>(nl));
    for (int64_t i = 0; i < nl; ++i) {
      x[static_cast<size_t>(i)] = InputAt(plan.params.shard_offset + static_cast<uint64_t>(i));
    }
    std::vector<float> y(static_cast<size_t>(nl));
    HostArena arena;
    uint8_t* mask = nullptr;
    for (const BufferSpec& buffer : plan.buffers) {
      if (buffer.element_bytes == 1) {
        uint8_t* p = arena.Allocate<uint8_t>(buffer.role, buffer.count);
        if (buffer.role == BufferRole::kMask) mask = p;
      } else {
        arena.Allocate<uint32_t>(buffer.role, buffer.count);
      }
    }
    std::vector<double> times;
    const int runs = 1 + std::max(0, options.timed_repetitions);
    for (int r = 0; r < runs; ++r) {
      const auto start = std::chrono::steady_clock::now();
      for (const StageSpec& stage : plan.stages) {
        RunStage(plan.params, stage, arena, x.data(), y.data(), mask, nullptr);
      }
      const std::chrono::duration<double, std::milli> elapsed =
          std::chrono::steady_clock::now() - start;
      if (r > 0 || runs == 1) times.push_back(elapsed.count());
    }
    std::sort(times.begin(), times.end());
    run.time_ms = times[times.size() / 2];
    run.measured_bytes = arena.high_water();
    run.requested_bytes = arena.high_water();
    if (options.collect_outputs) {
      if (plan.lowering == Lowering::kFused) {
        // A separate run that also writes the bits, after the measurement.
        run.bits.resize(static_cast<size_t>(nl));
        for (const StageSpec& stage : plan.stages) {
          RunStage(plan.params, stage, arena, x.data(), y.data(), mask, run.bits.data());
        }
      } else {
        run.bits = LocalBits(plan, arena);
      }
      run.mask.assign(mask, mask + nl);
      run.y = std::move(y);
    }
    return run;
  }

 private:
  int64_t max_bytes_;
};

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend(int64_t max_bytes) {
  return std::make_unique<CpuBackend>(max_bytes);
}

}  // namespace spmdsim::validate
