// The CPU reference a lowering's output is checked against: the local shard's 32-bit bits from
// passes/rng/threefry (Bits32Range, checked against JAX's tables), and the mask and output a flax
// dropout makes of them. Computed on several threads; large shards take a few seconds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_validate/backend.h"

namespace spmdsim::validate {

struct Reference {
  std::vector<uint32_t> bits;
  std::vector<uint8_t> mask;
  std::vector<float> y;
  std::string error;
};

// The reference for a site in the counter scheme of `replicated_scheme`.
Reference ComputeReference(const Site& site, const SiteSizes& sizes, bool replicated_scheme);

struct Comparison {
  int64_t bit_mismatches = 0;
  int64_t mask_mismatches = 0;
  int64_t output_mismatches = 0;  // y compared bit for bit
  int64_t first_mismatch = -1;    // local index of the first difference, -1 if none
  bool Match() const {
    return bit_mismatches == 0 && mask_mismatches == 0 && output_mismatches == 0;
  }
};

Comparison Compare(const Reference& reference, const LoweringRun& run);

}  // namespace spmdsim::validate
