// Per-device buffer sizes of a module that is not partitioned yet (an XLA before_optimizations
// dump of a sharded program): each array is sized as the largest piece one device holds under
// its sharding (Sharding::ShardShape).
//
// Instructions without a sharding attribute take one from where their value comes from: a
// get-tuple-element, tuple, while or control-flow parameter from the element it forwards;
// anything else from its operands, dimension by dimension: an operand dimension split in t tiles
// splits the output dimension of the same size (the same position first), as long as the tiles
// multiply to at most the number of partitions. So a batch dimension split over the devices stays
// split through elementwise operations, broadcasts, transposes and dots, and a dimension that a
// reduction or contraction removes is whole. This is an estimate: XLA's sharding propagation may
// choose differently for instructions the user left unannotated.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/sharding.h"
#include "passes/memory/buffer_dataflow_analysis.h"

namespace spmdsim::passes {

class ShardingSizes {
 public:
  // `order` lists the instructions with operands before users (a flattened schedule).
  static ShardingSizes Compute(const DataflowAnalysis& dataflow,
                               const std::vector<const ir::HloInstruction*>& order);

  // Bytes one device holds for the buffer at `slot` (a tuple: its pointer table).
  int64_t SlotBytes(int32_t slot) const;
  // Tiles per dimension of an array slot; empty when the array is whole on every device.
  const std::vector<int64_t>& SlotTiles(int32_t slot) const;

 private:
  const DataflowAnalysis* dataflow_ = nullptr;
  std::vector<std::vector<int64_t>> tiles_;  // by slot
};

}  // namespace spmdsim::passes
