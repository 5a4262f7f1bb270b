// How many ways XLA's SPMD partitioner splits replicated mode's flat hash, read off the
// partitionable counters of the same draw (RngSiteFinder::HashShards).
//
// Replicated mode (jax_threefry_partitionable=False) hashes iota(n) flattened and split in halves,
// concatenates the two hash outputs and reshapes the result to the random tensor's shape. The
// partitioner shards the flat arrays as the reshape lets the tensor's sharding through: a flat
// dimension merged from [d0, d1, ...] keeps the tiles of a minor dimension only where every more
// major dimension's shard has extent 1 (a device's elements are then one contiguous run of the
// flat index); the first dimension whose shard is longer ends the merge, the tiles of the
// dimensions minor to it are replicated. hlo_sharding_util::ReshapeSharding allows "merging
// consecutive dimensions where only the most major is sharded" (a shard of extent 1 being a
// dimension of size 1 to it), and PropagateShardingThroughReshape keeps such a partial match,
// replicating the rest; Shardy's reshape factors likewise shard a minor factor only where the
// major ones are fully sharded. Megatron sequence parallelism's [16,32,64] dropout on a 4x2 mesh
// ([4,2,1] tiles, batch shards of 4 rows) is hashed 4 ways
// (testdata/dumps/jax012_cpu8_seqpar_replicated_remat: u32[4096] hash outputs of the u32[16384]
// halves, all-gathered over {'data'} only), not 8.
//
// The tensor's global shape comes from JAX's iota_2x32_shape (jax/_src/prng.py): one u64 iota
// per dimension, offset by the device's shard and multiplied by the dimension's global row-major
// stride, broadcast into the device's shape. The strides give the global extents: g[d] =
// stride[d-1] / stride[d], g[0] = n / stride[0].
#include <charconv>
#include <map>
#include <optional>
#include <unordered_set>

#include "passes/rng/rng_site_finder.h"
#include "passes/rng/threefry_hashes.h"

namespace spmdsim::passes::rng_internal {
namespace {

bool Is64BitInteger(const ir::Shape& shape) {
  return shape.IsArray() && (shape.element_type() == ir::PrimitiveType::kU64 ||
                             shape.element_type() == ir::PrimitiveType::kS64);
}

// The global stride one dimension's counter vector ((iota + offset) * stride) is multiplied by:
// the multiply's constant, 1 where there is no multiply (the minor-most dimension).
std::optional<int64_t> StrideOf(const HloInstruction* vector) {
  if (vector->opcode != Opcode::kMultiply) return 1;
  for (const HloInstruction* operand : vector->operands) {
    const std::optional<int64_t> stride = ScalarConstant(operand);
    if (stride && *stride > 0) return stride;
  }
  return std::nullopt;
}

// The one dimension of dimensions={d}; nullopt for any other list.
std::optional<int64_t> SingleDimension(const HloInstruction& broadcast) {
  std::string_view text = broadcast.FindAttribute("dimensions");
  if (text.size() < 3 || text.front() != '{' || text.back() != '}') return std::nullopt;
  text = text.substr(1, text.size() - 2);
  int64_t dim = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), dim);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return dim;
}

struct CounterStrides {
  std::vector<int64_t> local;         // the device's shape of the counters
  std::map<int64_t, int64_t> stride;  // dimension -> global row-major stride
  bool conflict = false;
};

// The per-dimension counter vectors broadcast into a device shape of `elements` elements.
void CollectStrides(const HloComputation* computation, int64_t elements, CounterStrides& out) {
  for (const HloInstruction* instr : computation->instructions) {
    if (instr->opcode != Opcode::kBroadcast || instr->operands.size() != 1 ||
        !Is64BitInteger(instr->shape) || instr->shape.ElementCount() != elements) {
      continue;
    }
    const HloInstruction* vector = instr->operands[0];
    if (!Is64BitInteger(vector->shape) || vector->shape.rank() != 1) continue;
    const std::optional<int64_t> dim = SingleDimension(*instr);
    const std::optional<int64_t> stride = StrideOf(vector);
    if (!dim || !stride) {
      out.conflict = true;
      continue;
    }
    if (out.local.empty()) out.local = instr->shape.dims();
    if (out.local != instr->shape.dims()) {
      out.conflict = true;
      continue;
    }
    const auto [at, inserted] = out.stride.emplace(*dim, *stride);
    if (!inserted && at->second != *stride) out.conflict = true;
  }
}

}  // namespace

int64_t RngSiteFinder::HashShards(const SiteWork& work) const {
  const RngSite& site = work.site;
  if (site.mode != SiteMode::kPartitionable || site.local_elements <= 0) return 0;
  // The computations that build the counters: the counters' fusions and those of their
  // producers a few steps up, and the hash's own fusion (XLA:GPU fuses the counters into it).
  CounterStrides strides;
  std::unordered_set<const HloComputation*> seen;
  std::vector<std::pair<const HloInstruction*, int>> pending;
  for (const HloInstruction* counter : work.counters) pending.push_back({counter, 0});
  pending.push_back({work.anchor, 0});
  while (!pending.empty()) {
    const auto [instr, depth] = pending.back();
    pending.pop_back();
    if (instr->opcode == Opcode::kFusion) {
      const HloComputation* called = instr->Called("calls");
      if (called != nullptr && seen.insert(called).second) {
        CollectStrides(called, site.local_elements, strides);
      }
    }
    if (depth < 3) {
      for (const HloInstruction* operand : instr->operands) pending.push_back({operand, depth + 1});
    }
  }
  const std::vector<int64_t>& local = strides.local;
  const int64_t rank = static_cast<int64_t>(local.size());
  if (strides.conflict || rank == 0) return 0;
  strides.stride.emplace(rank - 1, 1);  // the minor-most dimension: the iota itself
  if (static_cast<int64_t>(strides.stride.size()) != rank) return 0;
  int64_t shards = 1;
  int64_t outer = site.global_elements;  // the global extent of dimensions [d, rank)
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t stride = strides.stride.at(d);
    if (outer % stride != 0 || local[d] <= 0 || (outer / stride) % local[d] != 0) return 0;
    shards *= outer / stride / local[d];  // the tiles of dimension d
    outer = stride;
    if (local[d] > 1) break;  // a longer shard ends the flat dimension's merge
  }
  return shards >= 1 && site.shards % shards == 0 ? shards : 0;
}

}  // namespace spmdsim::passes::rng_internal
