// How many devices a module runs on: replica_count x num_partitions (each at least 1).
//
// JAX's SPMD programs say `num_partitions=N` (one replica); PyTorch/XLA's and pmap's say
// `replica_count=N` with no num_partitions; a module may have both. Every device count spmdsim
// shows or uses comes from here. The parser caps the product at kMaxDevices (ir/limits.h).
#pragma once

#include <algorithm>
#include <cstdint>

#include "ir/checked_math.h"
#include "ir/hlo.h"

namespace spmdsim::ir {

inline int64_t DeviceCount(const HloModule& module) {
  return SaturatingMul(std::max<int64_t>(1, module.replica_count),
                       std::max<int64_t>(1, module.num_partitions));
}

}  // namespace spmdsim::ir
