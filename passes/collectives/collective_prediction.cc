#include "passes/collectives/collective_prediction.h"

#include <algorithm>
#include <set>

#include "ir/checked_math.h"
#include "ir/device_list.h"

namespace spmdsim::passes {

using ir::CollectiveKind;
using ir::HloInstruction;

namespace {

using Axes = std::vector<int>;

int64_t PieceBytes(const ir::Shape& shape, const ArraySharding& sharding, const DeviceMesh& mesh) {
  return ShardShape(shape, sharding, mesh).ByteSize();
}

class Predictor {
 public:
  Predictor(const ir::HloModule& module, const PredictionOptions& options,
            CollectivePrediction& out)
      : module_(module), options_(options), out_(out) {}

  void Run() {
    ShardingPropagationResult propagation = PropagateShardings(module_, options_.propagation);
    out_.mesh = propagation.mesh;
    out_.unknown_instructions = propagation.unknown_instructions;
    out_.notes = propagation.notes;
    if (module_.entry != nullptr) {
      for (const HloInstruction* param : module_.entry->parameters) {
        if (param == nullptr || !param->shape.IsArray()) continue;
        ArraySharding sharding =
            ArraySharding::Replicated(static_cast<size_t>(param->shape.rank()));
        if (param->sharding()) {
          sharding = FromHloSharding(*param->sharding(), static_cast<size_t>(param->shape.rank()),
                                     out_.mesh);
        }
        parameters_.emplace_back(param->shape.ToString(false), std::move(sharding));
      }
    }
    needs_ = &propagation.needs;
    first_of_need_.assign(propagation.needs.size(), -1);
    for (size_t i = 0; i < propagation.needs.size(); ++i) {
      first_of_need_[i] = static_cast<int32_t>(out_.predicted.size());
      Convert(propagation.needs[i]);
    }
    Combine();
    for (const PredictedCollective& p : out_.predicted) {
      PredictedKindTotals& t = out_.by_kind[std::string(ir::CollectiveKindName(p.kind))];
      ++t.uncombined_count;
      t.bytes = ir::SaturatingAdd(t.bytes, ir::SaturatingMul(p.bytes, p.loop_multiplier));
      const int64_t wire = ir::SaturatingMul(p.wire_bytes_per_device, p.loop_multiplier);
      t.wire_bytes_per_device = ir::SaturatingAdd(t.wire_bytes_per_device, wire);
      out_.predicted_total_wire_bytes_per_device =
          ir::SaturatingAdd(out_.predicted_total_wire_bytes_per_device, wire);
    }
    for (const CombinedCollective& c : out_.combined) {
      PredictedKindTotals& t = out_.by_kind[std::string(ir::CollectiveKindName(c.kind))];
      ++t.count;
      t.executions = ir::SaturatingAdd(t.executions, c.loop_multiplier);
    }
  }

 private:
  PredictedCollective Base(const CommunicationNeed& need) const {
    PredictedCollective p;
    p.rule = need.rule;
    p.instruction = need.instruction != nullptr ? std::string(need.instruction->name) : "";
    p.op_name = need.op_name;
    p.source = need.source;
    p.loop_multiplier = need.multiplier;
    p.trip_count_known = need.multiplier_known;
    return p;
  }

  void Emit(PredictedCollective p, const Axes& axes) {
    if (p.kind != CollectiveKind::kCollectivePermute) p.group_size = out_.mesh.GroupSize(axes);
    p.mesh_axis = out_.mesh.AxesName(axes);
    p.wire_bytes_per_device = WireBytesPerDevice(p.kind, p.bytes, p.group_size);
    if (p.group_size <= 1 && p.kind != CollectiveKind::kCollectivePermute)
      return;  // nothing to send
    out_.predicted.push_back(std::move(p));
  }

  void Convert(const CommunicationNeed& need) {
    const DeviceMesh& mesh = out_.mesh;
    switch (need.kind) {
      case CommunicationNeed::Kind::kPartialSum: {
        PredictedCollective p = Base(need);
        p.kind = CollectiveKind::kAllReduce;
        p.bytes = PieceBytes(need.shape, need.sharding, mesh);
        if (LooksLikeGradient(need)) {
          p.reason = "data-parallel gradient";
        } else if (need.rule == "dot") {
          p.reason = "tensor-parallel matmul";
        } else {
          p.reason = need.rule == "scatter" ? "scatter" : "reduction";
        }
        Emit(std::move(p), need.axes);
        break;
      }
      case CommunicationNeed::Kind::kReshard:
        ConvertReshard(need);
        break;
      case CommunicationNeed::Kind::kReplicatedThreefry:
        ConvertThreefry(need);
        break;
      case CommunicationNeed::Kind::kExplicit:
        ConvertExplicit(need);
        break;
    }
  }

  // A label only (bytes do not use it): the partial sum has the shape and sharding of an entry
  // parameter, and it sums over the leading (batch) dimension: a dot contracting dim 0 of both
  // operands, a reduce or scatter over dim 0. A Megatron matmul contracts the hidden dim instead.
  bool LooksLikeGradient(const CommunicationNeed& need) const {
    const HloInstruction& instr = *need.instruction;
    auto has_zero = [&](std::string_view attr) {
      const std::string_view text = instr.FindAttribute(attr);
      return text == "{0}" || text.rfind("{0,", 0) == 0;
    };
    bool over_batch = false;
    if (need.rule == "dot") {
      over_batch = has_zero("lhs_contracting_dims") && has_zero("rhs_contracting_dims");
    } else if (need.rule == "reduce") {
      over_batch = has_zero("dimensions");
    } else {
      over_batch = need.rule == "scatter";
    }
    if (!over_batch) return false;
    const std::string shape = need.shape.ToString(false);
    return std::any_of(parameters_.begin(), parameters_.end(), [&](const auto& param) {
      return param.first == shape && param.second == need.sharding;
    });
  }

  void ConvertReshard(const CommunicationNeed& need) {
    const DeviceMesh& mesh = out_.mesh;
    const ArraySharding& from = need.from;
    const ArraySharding& to = need.to;
    std::set<int> in_to;
    for (int a : to.Axes()) in_to.insert(a);
    Axes moved;     // leave one dimension for another: all-to-all
    Axes gathered;  // leave the array: all-gather
    ArraySharding after_moves = from;
    for (size_t d = 0; d < from.dims.size() && d < to.dims.size(); ++d) {
      size_t keep = 0;
      while (keep < from.dims[d].size() && keep < to.dims[d].size() &&
             from.dims[d][keep] == to.dims[d][keep]) {
        ++keep;
      }
      for (size_t k = keep; k < from.dims[d].size(); ++k) {
        const int a = from.dims[d][k];
        (in_to.count(a) > 0 ? moved : gathered).push_back(a);
      }
    }
    if (!moved.empty()) {
      PredictedCollective p = Base(need);
      p.kind = CollectiveKind::kAllToAll;
      p.reason = "reshard";
      p.bytes = PieceBytes(need.shape, from, mesh);
      Emit(std::move(p), moved);
      // After the exchange the moved axes sit where `to` wants them.
      for (size_t d = 0; d < after_moves.dims.size() && d < to.dims.size(); ++d) {
        Axes kept;
        for (int a : after_moves.dims[d]) {
          if (std::find(moved.begin(), moved.end(), a) == moved.end()) kept.push_back(a);
        }
        for (int a : to.dims[d]) {
          if (std::find(moved.begin(), moved.end(), a) != moved.end()) kept.push_back(a);
        }
        after_moves.dims[d] = kept;
      }
    }
    if (!gathered.empty()) {
      ArraySharding gathered_sharding = after_moves;
      for (Axes& axes : gathered_sharding.dims) {
        Axes kept;
        for (int a : axes) {
          if (std::find(gathered.begin(), gathered.end(), a) == gathered.end()) kept.push_back(a);
        }
        axes = kept;
      }
      PredictedCollective p = Base(need);
      p.kind = CollectiveKind::kAllGather;
      p.reason = "reshard";
      p.bytes = PieceBytes(need.shape, gathered_sharding, mesh);
      Emit(std::move(p), gathered);
    }
  }

  void ConvertThreefry(const CommunicationNeed& need) {
    const DeviceMesh& mesh = out_.mesh;
    const ArraySharding& s = need.sharding;
    const std::vector<int64_t>& dims = need.shape.dims();
    // The consumer's tiles cut the row-major flat array into contiguous blocks when every split
    // dimension but the last is split completely and nothing after it is split.
    int64_t last = -1;
    for (size_t d = 0; d < s.dims.size(); ++d) {
      if (!s.dims[d].empty()) last = static_cast<int64_t>(d);
    }
    bool contiguous = true;
    for (int64_t d = 0; d < last; ++d) {
      const auto du = static_cast<size_t>(d);
      if (du < dims.size() && s.TilesAlong(du, mesh) != dims[du]) contiguous = false;
    }
    const Axes axes = s.Axes();
    const int64_t k = mesh.GroupSize(axes);
    const int64_t n = need.rng_counters;
    if (k <= 1 || n < 2) return;
    if (k > ir::kMaxDevices) {
      out_.notes.push_back(need.op_name + ": threefry split over more than " +
                           std::to_string(ir::kMaxDevices) + " devices not predicted");
      return;
    }
    const int64_t half = n / 2;
    const int64_t word = 4;  // u32 counters and bits
    if (!contiguous || half % k != 0) {
      out_.notes.push_back(need.op_name + ": the consumer's sharding " + s.ToString(mesh) +
                           " does not cut the " + std::to_string(n) +
                           " counters into equal contiguous blocks; predicted as if it did");
    }
    for (int h = 0; h < 2; ++h) {
      PredictedCollective p = Base(need);
      p.kind = CollectiveKind::kAllGather;
      p.reason = "replicated threefry";
      p.bytes = ir::SaturatingMul(half, word);
      Emit(std::move(p), axes);
    }
    const int64_t block = ir::CeilDiv(n, k);     // b: counter words per device
    const int64_t chunk = ir::CeilDiv(half, k);  // c: words of a half per device
    for (int h = 0; h < 2; ++h) {
      // Per source block, its non-local targets in order, with the offset read from.
      std::vector<std::vector<int64_t>> offsets(static_cast<size_t>(k));
      for (int64_t t = 0; t < k; ++t) {
        const int64_t start = h * half + t * chunk;
        const int64_t source = std::min(k - 1, start / block);
        if (source != t) offsets[static_cast<size_t>(source)].push_back(start - source * block);
      }
      size_t rounds = 0;
      for (const auto& o : offsets) rounds = std::max(rounds, o.size());
      for (size_t r = 0; r < rounds; ++r) {
        std::set<int64_t> distinct;
        for (const auto& o : offsets) {
          if (r < o.size()) distinct.insert(o[r]);
        }
        PredictedCollective p = Base(need);
        p.kind = CollectiveKind::kCollectivePermute;
        p.reason = "replicated threefry";
        p.group_size = 2;
        p.bytes = ir::SaturatingMul(distinct.size() == 1 ? chunk : block, word);
        Emit(std::move(p), axes);
      }
    }
  }

  void ConvertExplicit(const CommunicationNeed& need) {
    const HloInstruction& instr = *need.instruction;
    PredictedCollective p = Base(need);
    p.kind = ir::CollectiveKindOf(instr.opcode);
    p.reason = "explicit";
    if (p.kind == CollectiveKind::kAllGather) {
      p.bytes = instr.shape.LeafDataBytes();
    } else if (p.kind == CollectiveKind::kCollectivePermute || p.kind == CollectiveKind::kSend) {
      p.bytes = instr.operands.empty() ? 0 : instr.operands[0]->shape.LeafDataBytes();
    } else {
      for (const HloInstruction* operand : instr.operands) {
        p.bytes = ir::SaturatingAdd(p.bytes, operand->shape.LeafDataBytes());
      }
    }
    if (instr.source_target_pairs()) {
      p.group_size = 2;
      p.mesh_axis = "-";
      p.wire_bytes_per_device = WireBytesPerDevice(p.kind, p.bytes, 2);
    } else {
      const int64_t all = out_.mesh.DeviceCount();
      const int64_t size = instr.replica_groups() ? instr.replica_groups()->GroupSize() : 0;
      p.group_size = size > 0 ? size : all;
      p.mesh_axis = p.group_size == all ? out_.mesh.AxesName([&] {
        Axes every(out_.mesh.sizes.size());
        for (size_t i = 0; i < every.size(); ++i) every[i] = static_cast<int>(i);
        return every;
      }())
                                        : "-";
      p.wire_bytes_per_device = WireBytesPerDevice(p.kind, p.bytes, p.group_size);
    }
    out_.predicted.push_back(std::move(p));
  }

  // All-reduces of one loop body and axes merge by level (header comment).
  void Combine() {
    // The need each prediction came from.
    std::vector<int32_t> need_of(out_.predicted.size(), -1);
    for (size_t i = 0; i < first_of_need_.size(); ++i) {
      const size_t end = i + 1 < first_of_need_.size() ? static_cast<size_t>(first_of_need_[i + 1])
                                                       : out_.predicted.size();
      for (size_t p = static_cast<size_t>(first_of_need_[i]); p < end; ++p) {
        need_of[p] = static_cast<int32_t>(i);
      }
    }
    using Key = std::pair<int32_t, std::string>;               // loop body, axes
    std::map<int32_t, std::pair<Key, int64_t>> level_of_need;  // combinable needs
    std::map<std::pair<Key, int64_t>, int32_t> group_of;
    for (size_t i = 0; i < out_.predicted.size(); ++i) {
      PredictedCollective& p = out_.predicted[i];
      const int32_t need = need_of[i];
      if (!options_.combine_all_reduces || p.kind != CollectiveKind::kAllReduce || need < 0) {
        AddMember(NewCombined(p), i);
        continue;
      }
      const CommunicationNeed& n = (*needs_)[static_cast<size_t>(need)];
      const Key key{n.loop, p.mesh_axis};
      // One more than the highest level among the same-key all-reduces it depends on
      // (depends_on is transitive).
      int64_t level = 0;
      for (int32_t d : n.depends_on) {
        const auto it = level_of_need.find(d);
        if (it != level_of_need.end() && it->second.first == key) {
          level = std::max(level, it->second.second + 1);
        }
      }
      level_of_need[need] = {key, level};
      const auto [it, inserted] = group_of.try_emplace({key, level}, -1);
      if (inserted) it->second = NewCombined(p);
      AddMember(it->second, i);
    }
  }

  int32_t NewCombined(const PredictedCollective& p) {
    CombinedCollective c;
    c.kind = p.kind;
    c.mesh_axis = p.mesh_axis;
    c.loop_multiplier = p.loop_multiplier;
    out_.combined.push_back(std::move(c));
    return static_cast<int32_t>(out_.combined.size() - 1);
  }

  void AddMember(int32_t combined, size_t predicted) {
    CombinedCollective& c = out_.combined[static_cast<size_t>(combined)];
    PredictedCollective& p = out_.predicted[predicted];
    p.combined = combined;
    c.members.push_back(static_cast<int32_t>(predicted));
    c.bytes = ir::SaturatingAdd(c.bytes, p.bytes);
    c.wire_bytes_per_device = ir::SaturatingAdd(c.wire_bytes_per_device, p.wire_bytes_per_device);
  }

  const ir::HloModule& module_;
  const PredictionOptions& options_;
  CollectivePrediction& out_;
  std::vector<std::pair<std::string, ArraySharding>> parameters_;  // entry: shape, sharding
  const std::vector<CommunicationNeed>* needs_ = nullptr;
  std::vector<int32_t> first_of_need_;  // first prediction of each need
};

double ErrorPct(int64_t predicted, int64_t actual, bool& defined) {
  defined = actual != 0 || predicted == 0;
  if (actual == 0) return 0;
  return 100.0 * static_cast<double>(predicted - actual) / static_cast<double>(actual);
}

}  // namespace

CollectivePrediction PredictCollectives(const ir::HloModule& module,
                                        const PredictionOptions& options) {
  CollectivePrediction out;
  Predictor predictor(module, options, out);
  predictor.Run();
  return out;
}

PredictionComparison ComparePrediction(const CollectivePrediction& predicted,
                                       const CollectiveResult& actual) {
  PredictionComparison out;
  std::map<std::string, KindComparison> rows;
  for (const auto& [kind, t] : predicted.by_kind) {
    KindComparison& row = rows[kind];
    row.predicted_count = t.count;
    row.predicted_executions = t.executions;
    row.predicted_bytes = t.bytes;
    row.predicted_wire_bytes = t.wire_bytes_per_device;
  }
  for (const auto& [kind, t] : actual.by_kind) {
    KindComparison& row = rows[kind];
    row.actual_count = t.count;
    row.actual_executions = t.executions;
    row.actual_wire_bytes = t.wire_bytes_per_device;
  }
  for (const CollectiveOp& op : actual.ops) {
    KindComparison& row = rows[std::string(ir::CollectiveKindName(op.kind))];
    row.actual_bytes =
        ir::SaturatingAdd(row.actual_bytes, ir::SaturatingMul(op.bytes, op.loop_multiplier));
  }
  for (auto& [kind, row] : rows) {
    row.kind = kind;
    row.wire_error_pct =
        ErrorPct(row.predicted_wire_bytes, row.actual_wire_bytes, row.error_defined);
    out.by_kind.push_back(row);
  }
  out.predicted_total_wire_bytes = predicted.predicted_total_wire_bytes_per_device;
  out.actual_total_wire_bytes = actual.total_wire_bytes_per_device;
  out.total_error_pct = ErrorPct(out.predicted_total_wire_bytes, out.actual_total_wire_bytes,
                                 out.total_error_defined);
  return out;
}

}  // namespace spmdsim::passes
