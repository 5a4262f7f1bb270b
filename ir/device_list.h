// Device id lists written in XLA's iota form, shared by shardings and replica groups:
//   [8]            -> 0..7
//   [4,2]T(1,0)    -> iota(8) shaped [4,2], transposed by (1,0), flattened: 0,2,4,6,1,3,5,7
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace spmdsim::ir {

// Upper bound on devices we will expand, so hostile input cannot ask for unbounded memory.
inline constexpr int64_t kMaxDevices = 1 << 20;

struct IotaList {
  std::vector<int64_t> reshape_dims;
  std::vector<int64_t> transpose_perm;  // empty = identity
  bool operator==(const IotaList&) const = default;
};

// Flattened device ids, or nullopt when the dims are invalid (a bad permutation, a product over
// kMaxDevices).
std::optional<std::vector<int64_t>> ExpandIota(const IotaList& iota);

}  // namespace spmdsim::ir
