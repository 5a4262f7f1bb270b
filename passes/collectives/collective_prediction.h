// The collectives the SPMD partitioner will insert into a module that is not partitioned yet
// (an XLA before_optimizations dump), predicted from the needs that
// passes/sharding/sharding_propagation.h finds, and compared with what XLA actually inserted
// (passes/collectives/collective_analysis.h on the after_optimizations dump of the same program).
//
// Needs -> collectives (B and wire bytes as in collective_analysis.h, from per-device shapes):
//   partial sum over axes A        all-reduce over A of the result's per-device piece.
//                                  reason: "data-parallel gradient" when it sums over the
//                                  leading (batch) dimension into the shape and sharding of an
//                                  entry parameter (a weight's gradient; a label only),
//                                  "tensor-parallel matmul" for other dots, "reduction" or
//                                  "scatter" otherwise.
//   reshard from -> to             per axis: dropped from a dimension and not used again ->
//                                  all-gather (B = the gathered piece); moved to another
//                                  dimension -> all-to-all (B = the local piece); added where the
//                                  data is replicated -> a local slice, nothing.
//   replicated threefry (n, K)     with the consumer's sharding cutting the flat counter into K
//                                  contiguous blocks over the axes A (REFERENCE §2: element j of
//                                  the first half pairs with element j + n/2):
//                                  - 2 all-gathers over A, one per half, B = 4 * n/2 each;
//                                  - the halves re-split from the counter's K blocks (b = n/K
//                                    words) into K blocks each (c = n/2K words): shard t of half
//                                    h needs words [h*n/2 + t*c, +c) of block s = (h*n/2 + t*c)/b;
//                                    the r-th non-local target of every source forms one
//                                    collective-permute, which sends c words when every source
//                                    sends from the same offset within its block, else the
//                                    whole block (b words).
//                                  This is what XLA does in the testdata dumps (dp8: AG 2 x 64 KiB,
//                                  permutes 16+8+8+8 KiB per dropout; 4x2: over 'data' only).
//                                  Partitionable threefry and rng-bit-generator need nothing.
//   collective in the module       as written (shard_map bodies).
//
// XLA combines independent all-reduces (its all-reduce combiner; on CPU every gradient of the
// seed model, 512 MiB, went into one op), so counts are given after combining: all-reduces of the
// same loop body over the same axes are levelled, an all-reduce's level being one more than the
// highest level among those it depends on, and each level is one op. That is the fewest ops any
// combining of independent all-reduces can reach (a level never depends on itself), and it is
// what XLA reached on every testdata dump (4x2 mesh: the forward and the rematerialized attention
// all-reduce of a block share an op). Bytes are unaffected by combining (ring wire bytes are
// linear in B). Other kinds are counted one op each, as XLA left them on these dumps.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/hlo.h"
#include "passes/collectives/collective_analysis.h"
#include "passes/sharding/sharding_propagation.h"

namespace spmdsim::passes {

struct PredictionOptions {
  // Combine all-reduces as XLA's all-reduce combiner does (counts only).
  bool combine_all_reduces = true;
  ShardingPropagationOptions propagation;
};

struct PredictedCollective {
  ir::CollectiveKind kind = ir::CollectiveKind::kNone;  // all-reduce, all-gather, ...
  int64_t bytes = 0;                                    // B of collective_analysis.h, one execution
  int64_t wire_bytes_per_device = 0;
  int64_t group_size = 0;   // 2 for a permute pair
  std::string mesh_axis;    // the mesh axes the group spans ("data", "data,model")
  std::string reason;       // see the header comment
  std::string rule;         // the propagation rule that raised it ("dot", "constraint", ...)
  std::string instruction;  // where the partitioner inserts it
  std::string op_name;
  std::string source;
  int64_t loop_multiplier = 1;
  bool trip_count_known = true;
  int32_t combined = -1;  // index into CollectivePrediction::combined
};

// One op after combining: the predicted collectives it merges.
struct CombinedCollective {
  ir::CollectiveKind kind = ir::CollectiveKind::kNone;
  std::string mesh_axis;
  int64_t loop_multiplier = 1;
  int64_t bytes = 0;
  int64_t wire_bytes_per_device = 0;
  std::vector<int32_t> members;  // indices into CollectivePrediction::predicted
};

struct PredictedKindTotals {
  int64_t count = 0;                  // ops after combining
  int64_t uncombined_count = 0;       // predicted collectives before combining
  int64_t executions = 0;             // ops after combining, with loop multipliers
  int64_t bytes = 0;                  // sum of B, with loop multipliers
  int64_t wire_bytes_per_device = 0;  // with loop multipliers
};

struct CollectivePrediction {
  DeviceMesh mesh;
  std::vector<PredictedCollective> predicted;  // in the order the needs arose
  std::vector<CombinedCollective> combined;
  std::map<std::string, PredictedKindTotals> by_kind;
  int64_t predicted_total_wire_bytes_per_device = 0;  // per step
  int64_t unknown_instructions = 0;
  std::vector<std::string> notes;
};

CollectivePrediction PredictCollectives(const ir::HloModule& module,
                                        const PredictionOptions& options = {});

// The same module's after_optimizations collectives, kind by kind.
struct KindComparison {
  std::string kind;
  int64_t predicted_count = 0, actual_count = 0;
  int64_t predicted_executions = 0, actual_executions = 0;
  int64_t predicted_bytes = 0, actual_bytes = 0;  // sum of B with loop multipliers
  int64_t predicted_wire_bytes = 0, actual_wire_bytes = 0;
  double wire_error_pct = 0;  // (predicted - actual) / actual; 0 when both are 0
  bool error_defined = true;  // false: actual is 0 and predicted is not
};

struct PredictionComparison {
  std::vector<KindComparison> by_kind;  // every kind either side has, by name
  int64_t predicted_total_wire_bytes = 0;
  int64_t actual_total_wire_bytes = 0;
  double total_error_pct = 0;
  bool total_error_defined = true;
};

PredictionComparison ComparePrediction(const CollectivePrediction& predicted,
                                       const CollectiveResult& actual);

}  // namespace spmdsim::passes
