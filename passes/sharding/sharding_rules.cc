#include "passes/sharding/sharding_rules.h"

#include <algorithm>
#include <set>

namespace spmdsim::passes {

namespace {

using Axes = std::vector<int>;

bool IsPrefix(const Axes& prefix, const Axes& of) {
  return prefix.size() <= of.size() && std::equal(prefix.begin(), prefix.end(), of.begin());
}

bool Contains(const std::vector<int64_t>& values, int64_t v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

bool UsesAxis(const ArraySharding& s, int axis) {
  for (const Axes& axes : s.dims) {
    if (std::find(axes.begin(), axes.end(), axis) != axes.end()) return true;
  }
  return false;
}

// The first non-tiled operand decides the result when there is one.
bool AnyNotTiled(const std::vector<ArraySharding>& operands, ArraySharding& result) {
  for (const ArraySharding& s : operands) {
    if (s.kind == ArraySharding::Kind::kUnknown) {
      result = s;
      return true;
    }
  }
  for (const ArraySharding& s : operands) {
    if (s.kind == ArraySharding::Kind::kManual) {
      result = s;
      return true;
    }
  }
  return false;
}

// A tiled sharding must have one axis list per dimension; anything else (malformed input) makes
// the result unknown.
bool RankMismatch(const ArraySharding& s, size_t rank, RuleOutcome& out) {
  if (!s.IsTiled() || s.dims.size() == rank) return false;
  out.result = ArraySharding::Unknown();
  return true;
}

// Adds a reshard of `operand` to `to` when it is not local.
void NeedReshard(RuleOutcome& out, size_t operand, const ArraySharding& from,
                 const ArraySharding& to) {
  if (from.IsTiled() && to.IsTiled() && !ReshardIsLocal(from, to)) {
    out.reshards.push_back({operand, from, to});
  }
}

// `s` with the axes of `dim` cleared.
ArraySharding Whole(ArraySharding s, size_t dim) {
  if (dim < s.dims.size()) s.dims[dim].clear();
  return s;
}

}  // namespace

bool ReshardIsLocal(const ArraySharding& from, const ArraySharding& to) {
  if (from.kind != to.kind) return false;
  if (!from.IsTiled()) return true;
  if (from.dims.size() != to.dims.size()) return false;
  for (size_t d = 0; d < from.dims.size(); ++d) {
    if (!IsPrefix(from.dims[d], to.dims[d])) return false;
    for (size_t i = from.dims[d].size(); i < to.dims[d].size(); ++i) {
      if (UsesAxis(from, to.dims[d][i])) return false;
    }
  }
  return true;
}

RuleOutcome ElementwiseRule(const std::vector<ArraySharding>& operands, size_t rank,
                            const DeviceMesh& mesh) {
  RuleOutcome out;
  if (AnyNotTiled(operands, out.result)) return out;
  // Most-split operands first: they win conflicts.
  std::vector<size_t> order;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (operands[i].dims.size() == rank) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return operands[a].TileCount(mesh) > operands[b].TileCount(mesh);
  });
  out.result = ArraySharding::Replicated(rank);
  for (size_t i : order) {
    const ArraySharding& s = operands[i];
    for (size_t d = 0; d < rank; ++d) {
      Axes& mine = out.result.dims[d];
      if (!IsPrefix(mine, s.dims[d])) continue;  // equal, shorter, or a conflict: keep mine
      bool free = true;
      for (size_t k = mine.size(); k < s.dims[d].size(); ++k) {
        free = free && !UsesAxis(out.result, s.dims[d][k]);
      }
      if (free) mine = s.dims[d];
    }
  }
  for (size_t i : order) NeedReshard(out, i, operands[i], out.result);
  return out;
}

RuleOutcome BroadcastRule(const ArraySharding& operand, const std::vector<int64_t>& dimensions,
                          size_t rank) {
  RuleOutcome out;
  if (!operand.IsTiled()) {
    out.result = operand;
    return out;
  }
  out.result = ArraySharding::Replicated(rank);
  for (size_t i = 0; i < dimensions.size() && i < operand.dims.size(); ++i) {
    const int64_t d = dimensions[i];
    if (d >= 0 && static_cast<size_t>(d) < rank)
      out.result.dims[static_cast<size_t>(d)] = operand.dims[i];
  }
  return out;
}

RuleOutcome TransposeRule(const ArraySharding& operand, const std::vector<int64_t>& permutation) {
  RuleOutcome out;
  if (!operand.IsTiled()) {
    out.result = operand;
    return out;
  }
  out.result = ArraySharding::Replicated(permutation.size());
  for (size_t i = 0; i < permutation.size(); ++i) {
    const int64_t p = permutation[i];
    if (p >= 0 && static_cast<size_t>(p) < operand.dims.size()) {
      out.result.dims[i] = operand.dims[static_cast<size_t>(p)];
    }
  }
  return out;
}

RuleOutcome ReshapeRule(const ArraySharding& operand, const std::vector<int64_t>& from_dims,
                        const std::vector<int64_t>& to_dims, const DeviceMesh& mesh) {
  RuleOutcome out;
  if (!operand.IsTiled()) {
    out.result = operand;
    return out;
  }
  if (RankMismatch(operand, from_dims.size(), out)) return out;
  out.result = ArraySharding::Replicated(to_dims.size());
  if (operand.IsReplicated()) return out;
  ArraySharding wanted = operand;  // the operand after any gathering this reshape needs
  // Groups [i0, i1) x [o0, o1) with equal element counts.
  size_t i = 0;
  size_t o = 0;
  while (i < from_dims.size() || o < to_dims.size()) {
    const size_t i0 = i;
    const size_t o0 = o;
    int64_t in_product = 1;
    int64_t out_product = 1;
    if (i < from_dims.size()) in_product = from_dims[i++];
    if (o < to_dims.size()) out_product = to_dims[o++];
    while (in_product != out_product) {
      if (in_product < out_product && i < from_dims.size()) {
        in_product *= from_dims[i++];
      } else if (out_product < in_product && o < to_dims.size()) {
        out_product *= to_dims[o++];
      } else {
        break;
      }
    }
    // Trailing size-1 dims join the group.
    while (i < from_dims.size() && from_dims[i] == 1 && in_product == out_product &&
           (o >= to_dims.size() || to_dims[o] != 1)) {
      ++i;
    }
    // The input dims of the group that are split, and whether only leading dims are.
    std::vector<size_t> split;
    for (size_t k = i0; k < i; ++k) {
      if (!operand.dims[k].empty()) split.push_back(k);
    }
    if (split.empty()) continue;
    bool ok = in_product == out_product;
    // Merge: the split input dims must lead and each but the last be split completely.
    Axes axes;
    for (size_t k = i0; ok && k < i; ++k) {
      if (operand.dims[k].empty()) {
        if (k < split.back()) ok = from_dims[k] == 1;
        continue;
      }
      if (k != split.back() && operand.TilesAlong(k, mesh) != from_dims[k]) ok = false;
      axes.insert(axes.end(), operand.dims[k].begin(), operand.dims[k].end());
    }
    // Split: the axes, major first, fill the output dims major first.
    size_t target = o0;
    while (ok && target < o && to_dims[target] == 1) ++target;
    int64_t remaining = target < o ? to_dims[target] : 0;
    std::vector<Axes> assigned(o - o0);
    for (size_t a = 0; ok && a < axes.size(); ++a) {
      const int64_t size = mesh.GroupSize({axes[a]});
      while (ok && remaining == 1 && target + 1 < o) {
        remaining = to_dims[++target];
      }
      if (target >= o || remaining % size != 0) {
        ok = false;
        break;
      }
      assigned[target - o0].push_back(axes[a]);
      remaining /= size;
    }
    if (ok) {
      for (size_t k = o0; k < o; ++k) out.result.dims[k] = assigned[k - o0];
    } else {
      for (size_t k = i0; k < i; ++k) wanted.dims[k].clear();
    }
  }
  NeedReshard(out, 0, operand, wanted);
  return out;
}

RuleOutcome DotRule(const ArraySharding& lhs, size_t lhs_rank, const ArraySharding& rhs,
                    size_t rhs_rank, const DotDims& dims) {
  RuleOutcome out;
  if (AnyNotTiled({lhs, rhs}, out.result)) return out;
  if (RankMismatch(lhs, lhs_rank, out) || RankMismatch(rhs, rhs_rank, out)) return out;
  ArraySharding want_lhs = lhs;
  ArraySharding want_rhs = rhs;
  auto dim_of = [](const ArraySharding& s, int64_t d) -> const Axes& {
    static const Axes kNone;
    return d >= 0 && static_cast<size_t>(d) < s.dims.size() ? s.dims[static_cast<size_t>(d)]
                                                            : kNone;
  };
  auto set_dim = [](ArraySharding& s, int64_t d, const Axes& axes) {
    if (d >= 0 && static_cast<size_t>(d) < s.dims.size()) s.dims[static_cast<size_t>(d)] = axes;
  };
  std::set<int> used;
  // Takes the axes of `axes` not used yet; the operands drop the rest.
  auto claim = [&used](const Axes& axes) {
    Axes kept;
    for (int a : axes) {
      if (used.insert(a).second) kept.push_back(a);
    }
    return kept;
  };
  // A paired dimension (batch or contracting): the lhs axes win, an empty side adopts the other.
  auto pair = [&](int64_t l, int64_t r) {
    const Axes& a = dim_of(lhs, l);
    const Axes& b = dim_of(rhs, r);
    const Axes axes = claim(a.empty() ? b : a);
    set_dim(want_lhs, l, axes);
    set_dim(want_rhs, r, axes);
    return axes;
  };
  std::vector<Axes> result_dims;
  for (size_t k = 0; k < dims.lhs_batch.size() && k < dims.rhs_batch.size(); ++k) {
    result_dims.push_back(pair(dims.lhs_batch[k], dims.rhs_batch[k]));
  }
  for (size_t k = 0; k < dims.lhs_contracting.size() && k < dims.rhs_contracting.size(); ++k) {
    const Axes axes = pair(dims.lhs_contracting[k], dims.rhs_contracting[k]);
    out.partial_axes.insert(out.partial_axes.end(), axes.begin(), axes.end());
  }
  for (size_t d = 0; d < lhs_rank; ++d) {
    const auto di = static_cast<int64_t>(d);
    if (Contains(dims.lhs_batch, di) || Contains(dims.lhs_contracting, di)) continue;
    const Axes axes = claim(dim_of(lhs, di));
    set_dim(want_lhs, di, axes);
    result_dims.push_back(axes);
  }
  for (size_t d = 0; d < rhs_rank; ++d) {
    const auto di = static_cast<int64_t>(d);
    if (Contains(dims.rhs_batch, di) || Contains(dims.rhs_contracting, di)) continue;
    const Axes axes = claim(dim_of(rhs, di));
    set_dim(want_rhs, di, axes);
    result_dims.push_back(axes);
  }
  out.result.dims = std::move(result_dims);
  NeedReshard(out, 0, lhs, want_lhs);
  NeedReshard(out, 1, rhs, want_rhs);
  return out;
}

RuleOutcome ReduceRule(const ArraySharding& operand, const std::vector<int64_t>& reduced_dims) {
  RuleOutcome out;
  if (!operand.IsTiled()) {
    out.result = operand;
    return out;
  }
  out.result = ArraySharding::Replicated(0);
  for (size_t d = 0; d < operand.dims.size(); ++d) {
    if (Contains(reduced_dims, static_cast<int64_t>(d))) {
      out.partial_axes.insert(out.partial_axes.end(), operand.dims[d].begin(),
                              operand.dims[d].end());
    } else {
      out.result.dims.push_back(operand.dims[d]);
    }
  }
  return out;
}

RuleOutcome CutRule(const ArraySharding& operand, const std::vector<int64_t>& cut) {
  RuleOutcome out;
  out.result = operand;
  if (!operand.IsTiled()) return out;
  for (int64_t d : cut) {
    if (d >= 0) out.result = Whole(out.result, static_cast<size_t>(d));
  }
  NeedReshard(out, 0, operand, out.result);
  return out;
}

RuleOutcome ConcatenateRule(const std::vector<ArraySharding>& operands, int64_t dimension,
                            size_t rank, const DeviceMesh& mesh) {
  std::vector<ArraySharding> whole = operands;
  for (ArraySharding& s : whole) {
    if (s.IsTiled() && dimension >= 0) s = Whole(s, static_cast<size_t>(dimension));
  }
  RuleOutcome out = ElementwiseRule(whole, rank, mesh);
  out.reshards.clear();
  for (size_t i = 0; i < operands.size(); ++i) NeedReshard(out, i, operands[i], out.result);
  return out;
}

RuleOutcome GatherRule(const ArraySharding& operand, const std::vector<int64_t>& operand_dims,
                       const ArraySharding& indices, size_t indices_rank, size_t result_rank,
                       const GatherDims& dims) {
  RuleOutcome out;
  if (AnyNotTiled({operand, indices}, out.result)) return out;
  if (RankMismatch(operand, operand_dims.size(), out) || RankMismatch(indices, indices_rank, out)) {
    return out;
  }
  out.result = ArraySharding::Replicated(result_rank);
  ArraySharding want = operand;
  // Indexed and collapsed dims must be whole (a batching dim may follow the indices).
  for (size_t d = 0; d < operand.dims.size(); ++d) {
    const auto di = static_cast<int64_t>(d);
    const auto batch =
        std::find(dims.operand_batching_dims.begin(), dims.operand_batching_dims.end(), di);
    if (batch != dims.operand_batching_dims.end()) {
      const size_t k = static_cast<size_t>(batch - dims.operand_batching_dims.begin());
      const int64_t id =
          k < dims.start_indices_batching_dims.size() ? dims.start_indices_batching_dims[k] : -1;
      want.dims[d] = id >= 0 && static_cast<size_t>(id) < indices.dims.size()
                         ? indices.dims[static_cast<size_t>(id)]
                         : Axes{};
      continue;
    }
    const bool full = d < dims.slice_sizes.size() && d < operand_dims.size() &&
                      dims.slice_sizes[d] == operand_dims[d];
    if (Contains(dims.start_index_map, di) || Contains(dims.collapsed_slice_dims, di) || !full) {
      want.dims[d].clear();
    }
  }
  // Result: batch dims from the indices, offset dims from the operand.
  std::vector<size_t> index_dims;
  for (size_t d = 0; d < indices_rank; ++d) {
    if (static_cast<int64_t>(d) != dims.index_vector_dim) index_dims.push_back(d);
  }
  std::vector<size_t> window_dims;
  for (size_t d = 0; d < operand.dims.size(); ++d) {
    const auto di = static_cast<int64_t>(d);
    if (!Contains(dims.collapsed_slice_dims, di) && !Contains(dims.operand_batching_dims, di)) {
      window_dims.push_back(d);
    }
  }
  size_t next_batch = 0;
  size_t next_offset = 0;
  for (size_t r = 0; r < result_rank; ++r) {
    if (Contains(dims.offset_dims, static_cast<int64_t>(r))) {
      if (next_offset < window_dims.size())
        out.result.dims[r] = want.dims[window_dims[next_offset]];
      ++next_offset;
    } else {
      if (next_batch < index_dims.size()) out.result.dims[r] = indices.dims[index_dims[next_batch]];
      ++next_batch;
    }
  }
  NeedReshard(out, 0, operand, want);
  return out;
}

RuleOutcome ScatterRule(const ArraySharding& operand, size_t operand_rank,
                        const ArraySharding& updates, size_t updates_rank,
                        const ScatterDims& dims) {
  RuleOutcome out;
  if (AnyNotTiled({operand, updates}, out.result)) return out;
  if (RankMismatch(operand, operand_rank, out) || RankMismatch(updates, updates_rank, out)) {
    return out;
  }
  out.result = operand;
  // Scattered-into dims must be whole.
  for (int64_t d : dims.scatter_dims_to_operand_dims) {
    if (d >= 0 && static_cast<size_t>(d) < operand_rank)
      out.result.dims[static_cast<size_t>(d)].clear();
  }
  std::vector<size_t> operand_window;  // operand dims the update window dims map to, in order
  for (size_t d = 0; d < operand_rank; ++d) {
    const auto di = static_cast<int64_t>(d);
    if (!Contains(dims.inserted_window_dims, di) && !Contains(dims.input_batching_dims, di)) {
      operand_window.push_back(d);
    }
  }
  ArraySharding want_updates = updates;
  size_t next_window = 0;
  size_t next_scatter = 0;  // k-th scatter dim of the updates = k-th indices dim (no vector dim)
  for (size_t u = 0; u < updates_rank; ++u) {
    const Axes& axes = updates.dims[u];
    int64_t operand_dim = -1;
    if (Contains(dims.update_window_dims, static_cast<int64_t>(u))) {
      if (next_window < operand_window.size()) {
        operand_dim = static_cast<int64_t>(operand_window[next_window]);
      }
      ++next_window;
    } else {
      int64_t index_dim = static_cast<int64_t>(next_scatter++);
      if (index_dim >= dims.index_vector_dim) ++index_dim;
      const auto batch = std::find(dims.scatter_indices_batching_dims.begin(),
                                   dims.scatter_indices_batching_dims.end(), index_dim);
      const size_t k = static_cast<size_t>(batch - dims.scatter_indices_batching_dims.begin());
      if (batch != dims.scatter_indices_batching_dims.end() &&
          k < dims.input_batching_dims.size()) {
        operand_dim = dims.input_batching_dims[k];
      } else {
        // A true scatter dim: each device scatters its own updates, then the pieces are summed.
        for (int a : axes) {
          if (!UsesAxis(out.result, a)) out.partial_axes.push_back(a);
        }
        continue;
      }
    }
    if (operand_dim < 0 || static_cast<size_t>(operand_dim) >= operand_rank) continue;
    Axes& target = out.result.dims[static_cast<size_t>(operand_dim)];
    if (target.empty() && !axes.empty()) {
      bool free = true;
      for (int a : axes) free = free && !UsesAxis(out.result, a);
      if (free) target = axes;
    }
    want_updates.dims[u] = target;
  }
  NeedReshard(out, 0, operand, out.result);
  NeedReshard(out, 2, updates, want_updates);
  return out;
}

}  // namespace spmdsim::passes
