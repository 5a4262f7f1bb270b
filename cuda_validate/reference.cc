#include "cuda_validate/reference.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "passes/rng/threefry.h"

namespace spmdsim::validate {

Reference ComputeReference(const Site& site, const SiteSizes& sizes, bool replicated_scheme) {
  Reference ref;
  const int64_t nl = sizes.local_elements;
  ref.bits.resize(static_cast<size_t>(nl));
  ref.mask.resize(static_cast<size_t>(nl));
  ref.y.resize(static_cast<size_t>(nl));
  const passes::RngMode mode =
      replicated_scheme ? passes::RngMode::kReplicated : passes::RngMode::kPartitionable;
  const int64_t threads =
      std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, std::max<int64_t>(1, nl / 4096));
  std::vector<std::string> errors(static_cast<size_t>(threads));
  std::vector<std::thread> workers;
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t begin = nl * t / threads;
    const int64_t end = nl * (t + 1) / threads;
    workers.emplace_back([&, t, begin, end] {
      const passes::BitsResult bits =
          passes::Bits32Range(site.key, sizes.global_elements, mode, sizes.shard_offset + begin,
                              sizes.shard_offset + end);
      if (!bits.error.empty()) {
        errors[static_cast<size_t>(t)] = bits.error;
        return;
      }
      for (int64_t i = begin; i < end; ++i) {
        const auto k = static_cast<size_t>(i);
        ref.bits[k] = static_cast<uint32_t>(bits.values[static_cast<size_t>(i - begin)]);
        const float x = InputAt(static_cast<uint64_t>(sizes.shard_offset + i));
        DropoutElement(ref.bits[k], x, site.keep_prob, &ref.mask[k], &ref.y[k]);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  for (const std::string& error : errors) {
    if (!error.empty()) ref.error = error;
  }
  return ref;
}

Comparison Compare(const Reference& reference, const LoweringRun& run) {
  Comparison c;
  const size_t n = reference.bits.size();
  const auto note = [&](size_t i) {
    if (c.first_mismatch < 0) c.first_mismatch = static_cast<int64_t>(i);
  };
  if (run.bits.size() != n || run.mask.size() != n || run.y.size() != n) {
    c.bit_mismatches = static_cast<int64_t>(n);
    c.first_mismatch = 0;
    return c;
  }
  for (size_t i = 0; i < n; ++i) {
    if (run.bits[i] != reference.bits[i]) {
      ++c.bit_mismatches;
      note(i);
    }
    if (run.mask[i] != reference.mask[i]) {
      ++c.mask_mismatches;
      note(i);
    }
    if (std::memcmp(&run.y[i], &reference.y[i], sizeof(float)) != 0) {
      ++c.output_mismatches;
      note(i);
    }
  }
  return c;
}

}  // namespace spmdsim::validate
