// Per-op rules of the simplified sharding propagation (passes/sharding/sharding_propagation.h):
// given the shardings of an op's operands, the sharding of its result, whether the result is a
// partial sum that needs an all-reduce, and which operands must first change sharding (a reshard,
// which the partitioner does with collectives). Pure functions of shapes, attributes and shardings.
//
// The rules, in the order the partitioner's cost model would prefer them for the common cases:
// - Elementwise: operands merge dimension by dimension (an axis list that extends another wins,
//   if its extra axes are free); the most-split operand wins a conflict and the others reshard.
//   A replicated operand becomes any sharding by slicing locally: no communication.
// - Dot: a batch dimension keeps its axes; a contracting dimension split over the same axes in
//   both operands (or in one, the other sliced locally) makes the result a partial sum over those
//   axes (data-parallel weight gradients, Megatron row-parallel matmuls); free dimensions keep
//   their operand's axes. An axis used twice in the result is dropped from the later dimension,
//   whose operand then gathers it.
// - Reduce: a reduced dimension's axes make the result a partial sum.
// - Reshape: dimensions that split or merge keep a sharding when the split axes divide the major
//   output dimension (split) or only the major input dimension is split (merge); otherwise the
//   operand gathers that dimension first.
// - Broadcast, transpose: the axes move with the dimensions. Slice, pad, dynamic-slice,
//   concatenate: a dimension cut along a split axis is gathered first.
// - Gather: batch dims follow the indices, offset dims the operand (full slices only). Scatter:
//   the result follows the operand; updates split along scatter dims the operand does not split
//   make a partial sum (the embedding gradient).
#pragma once

#include <cstdint>
#include <vector>

#include "passes/sharding/mesh_sharding.h"

namespace spmdsim::passes {

struct Reshard {
  size_t operand = 0;  // which operand of the op
  ArraySharding from;
  ArraySharding to;
};

struct RuleOutcome {
  ArraySharding result;
  std::vector<int> partial_axes;  // the result is a partial sum over these axes
  std::vector<Reshard> reshards;
};

// True when an array sharded `from` can be resharded to `to` without communication: every dim's
// axes in `from` are a prefix of that dim's axes in `to`, and the extra axes are not used in
// `from` (each device slices what it already holds).
bool ReshardIsLocal(const ArraySharding& from, const ArraySharding& to);

// Operands of the result's rank take part; others (scalars of clamp/select) are ignored.
RuleOutcome ElementwiseRule(const std::vector<ArraySharding>& operands, size_t rank,
                            const DeviceMesh& mesh);

RuleOutcome BroadcastRule(const ArraySharding& operand, const std::vector<int64_t>& dimensions,
                          size_t rank);

RuleOutcome TransposeRule(const ArraySharding& operand, const std::vector<int64_t>& permutation);

RuleOutcome ReshapeRule(const ArraySharding& operand, const std::vector<int64_t>& from_dims,
                        const std::vector<int64_t>& to_dims, const DeviceMesh& mesh);

struct DotDims {
  std::vector<int64_t> lhs_batch, rhs_batch, lhs_contracting, rhs_contracting;
};
RuleOutcome DotRule(const ArraySharding& lhs, size_t lhs_rank, const ArraySharding& rhs,
                    size_t rhs_rank, const DotDims& dims);

RuleOutcome ReduceRule(const ArraySharding& operand, const std::vector<int64_t>& reduced_dims);

// Dimensions in `cut` (sliced, padded, or concatenated along) must be whole.
RuleOutcome CutRule(const ArraySharding& operand, const std::vector<int64_t>& cut);

RuleOutcome ConcatenateRule(const std::vector<ArraySharding>& operands, int64_t dimension,
                            size_t rank, const DeviceMesh& mesh);

struct GatherDims {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map, operand_batching_dims,
      start_indices_batching_dims, slice_sizes;
  int64_t index_vector_dim = 0;
};
RuleOutcome GatherRule(const ArraySharding& operand, const std::vector<int64_t>& operand_dims,
                       const ArraySharding& indices, size_t indices_rank, size_t result_rank,
                       const GatherDims& dims);

struct ScatterDims {
  std::vector<int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims,
      input_batching_dims, scatter_indices_batching_dims;
  int64_t index_vector_dim = 0;
};
RuleOutcome ScatterRule(const ArraySharding& operand, size_t operand_rank,
                        const ArraySharding& updates, size_t updates_rank, const ScatterDims& dims);

}  // namespace spmdsim::passes
