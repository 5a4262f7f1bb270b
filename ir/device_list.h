// Device id lists written in XLA's iota form, shared by shardings and replica groups:
//   [8]            -> 0..7
//   [4,2]T(1,0)    -> iota(8) shaped [4,2], transposed by (1,0), flattened: 0,2,4,6,1,3,5,7
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/limits.h"

namespace spmdsim::ir {

struct IotaList {
  std::vector<int64_t> reshape_dims;
  std::vector<int64_t> transpose_perm;  // empty = identity
  bool operator==(const IotaList&) const = default;
};

// The number of device ids the list stands for, or nullopt when the dims are invalid (a negative
// dim, a bad permutation, a product over kMaxDevices, a rank over kMaxIotaRank). O(rank): parsers
// validate with this, so a short attribute cannot make them write a million ids.
std::optional<int64_t> IotaSize(const IotaList& iota);

// Flattened device ids, or nullopt when IotaSize() is.
std::optional<std::vector<int64_t>> ExpandIota(const IotaList& iota);

}  // namespace spmdsim::ir
