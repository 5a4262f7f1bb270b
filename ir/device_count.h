// How many devices a module runs on: replica_count x num_partitions (each at least 1), or more
// when its collectives name more.
//
// JAX's SPMD programs say `num_partitions=N` (one replica); PyTorch/XLA's and pmap's say
// `replica_count=N` with no num_partitions; a module may have both, or, as some PyTorch/XLA dumps
// are printed, neither though its collectives run over 8 devices. XLA requires every id a
// collective names to be below the count of its kind (replica ids < replica_count, partition
// ids < num_partitions, global ids < their product), so the largest id named, plus one, is a
// lower bound on the devices: DeviceCount takes it where the header says fewer, and
// DevicesFromCollectives says so. Every device count spmdsim shows or uses comes from here. The
// parser caps the product at kMaxDevices (ir/limits.h).
#pragma once

#include <algorithm>
#include <cstdint>

#include "ir/checked_math.h"
#include "ir/hlo.h"

namespace spmdsim::ir {

// The devices the header says: replica_count x num_partitions.
inline int64_t HeaderDeviceCount(const HloModule& module) {
  return SaturatingMul(std::max<int64_t>(1, module.replica_count),
                       std::max<int64_t>(1, module.num_partitions));
}

inline int64_t DeviceCount(const HloModule& module) {
  return std::max(HeaderDeviceCount(module), module.devices_named_by_collectives);
}

// Whether the collectives name more devices than the header says (DeviceCount is then theirs).
inline bool DevicesFromCollectives(const HloModule& module) {
  return module.devices_named_by_collectives > HeaderDeviceCount(module);
}

// The largest device id any collective's replica_groups or source_target_pairs name, plus one
// (the iota and mesh forms: the ids they stand for); 0 when none names an id. At most
// kMaxDevices. The parser stores it in HloModule::devices_named_by_collectives.
int64_t DevicesNamedByCollectives(const HloModule& module);

}  // namespace spmdsim::ir
