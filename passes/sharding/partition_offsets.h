// How many distinct slices of a tensor the devices hold, from the device-position arithmetic that
// offsets its counters.
//
// JAX's partitionable threefry hashes a global row-major index per element; after SPMD
// partitioning each device adds its slice's offset, an integer computed from partition-id (and
// replica-id): partition-id times the slice size on a 1-D mesh, a constant table indexed by
// partition-id on a 2-D mesh where some axis replicates the tensor. Evaluating that arithmetic for
// every device and counting the distinct results gives the shard count on any platform, however
// XLA folded or fused it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/hlo.h"

namespace spmdsim::passes {

// The scalar integer value of `instr` (of a non-fusion computation) on the device (partition,
// replica), for the scalar arithmetic XLA leaves in partitioned modules: partition-id,
// replica-id, constants, converts, + - * / % min max, bitwise and shift ops, bitcasts and reshapes
// of scalars, and a dynamic-slice or gather of one element of a constant table (read through
// copies and copy-start/copy-done). nullopt for anything else.
std::optional<int64_t> EvaluateOnDevice(const ir::HloInstruction* instr, int64_t partition,
                                        int64_t replica);

// A scalar that depends on the device's position: an instruction of a non-fusion computation,
// or one inside the fused computation of `fusion` (a table lookup fused into the counters).
struct DeviceOffset {
  const ir::HloInstruction* value = nullptr;
  const ir::HloInstruction* fusion = nullptr;
};

// The outermost scalar integer values that `roots` (and their producers, a few levels up) read
// and that depend on the device's position: the offsets of their counters.
std::vector<DeviceOffset> DeviceOffsets(const std::vector<const ir::HloInstruction*>& roots);

// Distinct values of `offsets` (as one tuple per device) over partitions x replicas; 0 when one
// of them cannot be evaluated.
int64_t DistinctDeviceSlices(const std::vector<DeviceOffset>& offsets, int64_t partitions,
                             int64_t replicas);

// Whether an offset reads a table XLA left out of the dump: constants of more than 10 elements
// print as "{...}" unless the compile ran with --xla_dump_large_constants, so the offsets of a
// mesh of more than 10 devices cannot be evaluated from the text.
bool ReadsElidedTable(const std::vector<DeviceOffset>& offsets);

}  // namespace spmdsim::passes
