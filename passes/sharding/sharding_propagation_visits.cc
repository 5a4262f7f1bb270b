// The sharding walk's visits of custom calls (constraints, shard_map), collectives, while loops,
// conditionals, and the tracking of replicated-threefry generations.
#include <algorithm>
#include <charconv>
#include <span>
#include <unordered_map>

#include "passes/loop_trip_count.h"
#include "passes/sharding/sharding_walker.h"

namespace spmdsim::passes::sharding_internal {

void Walker::Constrain(const HloInstruction& instr, const ValueSharding& want, ValueState& out,
                       const Frame& frame, const std::string& rule) {
  std::vector<std::pair<const ArraySharding*, const ir::Shape*>> have_leaves;
  std::vector<std::pair<const ArraySharding*, const ir::Shape*>> want_leaves;
  Leaves(out.sharding, instr.shape, have_leaves);
  Leaves(want, instr.shape, want_leaves);
  const Bits before = DepsOf(out);
  for (size_t i = 0; i < have_leaves.size() && i < want_leaves.size(); ++i) {
    const ArraySharding& have = *have_leaves[i].first;
    const ArraySharding& to = *want_leaves[i].first;
    if (!have.IsTiled() || !to.IsTiled() || ReshardIsLocal(have, to)) continue;
    CommunicationNeed need;
    need.kind = CommunicationNeed::Kind::kReshard;
    need.rule = rule;
    need.shape = *have_leaves[i].second;
    need.from = have;
    need.to = to;
    SetBit(out.deps, static_cast<size_t>(AddNeed(std::move(need), instr, before, frame)));
  }
  if (!AnyLeaf(want, ArraySharding::Kind::kUnknown)) out.sharding = want;
}

void Walker::VisitCustomCall(const HloInstruction& instr, const std::vector<const ValueState*>& ops,
                             ValueState& out, const Frame& frame) {
  const std::string_view target = instr.custom_call_target();
  if (target == "xla.sdy.GlobalToLocalShape") {
    // The operands must have the shard_map's in_shardings; inside, values are manual.
    const auto in =
        ParseSdyShardings(FrontendAttribute(instr, "xla.sdy.in_shardings"), result_.mesh);
    for (size_t i = 0; in && i < ops.size() && i < in->size(); ++i) {
      if (ops[i]->sharding.is_tuple) continue;
      ValueState value = *ops[i];
      Constrain(*instr.operands[i], {(*in)[i], {}}, value, frame, "shard_map input");
      OrInto(out.deps, DepsOf(value));
    }
    out.sharding = ValueSharding::All(instr.shape, ArraySharding::Kind::kManual);
    return;
  }
  if (target == "xla.sdy.LocalToGlobalShape") {
    const auto outs =
        ParseSdyShardings(FrontendAttribute(instr, "xla.sdy.out_shardings"), result_.mesh);
    if (!outs) {
      out.sharding = ValueSharding::All(instr.shape, ArraySharding::Kind::kUnknown);
      return;
    }
    if (!instr.shape.IsTuple()) {
      out.sharding = {outs->empty() ? ArraySharding::Unknown() : (*outs)[0], {}};
      return;
    }
    out.sharding.is_tuple = true;
    for (size_t i = 0; i < instr.shape.tuple_shapes().size(); ++i) {
      out.sharding.elements.push_back(
          {i < outs->size() ? (*outs)[i] : ArraySharding::Unknown(), {}});
    }
    return;
  }
  if (target == "xla.sdy.FuncResultSharding" || target == "Sharding" ||
      target == "xla.sdy.ShardingConstraint" || target == "SPMDFullToShardShape" ||
      target == "SPMDShardToFullShape") {
    // Pass-through annotations; a `sharding=` on them is applied as a constraint by the caller.
    if (ops.empty()) {
      out.sharding = ValueSharding::Replicated(instr.shape);
    } else {
      out.deps = ops[0]->deps;
      out.element_deps = ops[0]->element_deps;
      out.sharding = ops[0]->sharding;
    }
    if (target == "SPMDFullToShardShape") {
      out.sharding = ValueSharding::All(instr.shape, ArraySharding::Kind::kManual);
    }
    return;
  }
  const bool replicated = std::all_of(
      ops.begin(), ops.end(), [](const ValueState* op) { return AllReplicated(op->sharding); });
  out.sharding = replicated ? ValueSharding::Replicated(instr.shape)
                            : ValueSharding::All(instr.shape, ArraySharding::Kind::kUnknown);
}

void Walker::VisitCollective(const HloInstruction& instr, const std::vector<const ValueState*>& ops,
                             ValueState& out, const Frame& frame) {
  CommunicationNeed need;
  need.kind = CommunicationNeed::Kind::kExplicit;
  need.rule = std::string(ir::CollectiveKindName(ir::CollectiveKindOf(instr.opcode)));
  need.shape = instr.operands.empty() ? instr.shape : instr.operands[0]->shape;
  SetBit(out.deps, static_cast<size_t>(AddNeed(std::move(need), instr, out.deps, frame)));
  out.sharding = ops.empty() || ops[0]->sharding.is_tuple != instr.shape.IsTuple()
                     ? ValueSharding::All(instr.shape, ArraySharding::Kind::kManual)
                     : ops[0]->sharding;
}

void Walker::VisitWhile(const HloInstruction& instr, const std::vector<const ValueState*>& ops,
                        ValueState& out, const Frame& frame) {
  const HloComputation* body = instr.Called("body");
  if (body == nullptr || ops.empty()) {
    out.sharding = ValueSharding::All(instr.shape, ArraySharding::Kind::kUnknown);
    return;
  }
  Frame inner = Inner(instr, frame);
  const int64_t trip = WhileTripCount(instr);
  inner.multiplier = ir::SaturatingMul(frame.multiplier, std::max<int64_t>(1, trip));
  inner.multiplier_known = frame.multiplier_known && trip >= 0;
  inner.loop = next_loop_++;
  if (trip < 0) {
    result_.notes.push_back(std::string(instr.name) +
                            ": trip count unknown; its body's needs count once per step");
  }
  const size_t need_mark = result_.needs.size();
  const size_t generation_mark = generations_.size();
  ValueState state = *ops[0];
  ValueState root;
  for (int pass = 0; pass < 2; ++pass) {
    root = Invoke(*body, {state}, inner);
    if (root.sharding == state.sharding || pass == 1) break;
    // The loop state changes sharding: walk again with what both agree on.
    result_.needs.resize(need_mark);
    generations_.resize(generation_mark);
    for (Generation& g : generations_) {
      if (g.consumed_by >= static_cast<int32_t>(need_mark)) g.consumed_by = -1;
    }
    state.sharding = Meet(state.sharding, root.sharding);
  }
  // What still differs is resharded at the end of every iteration.
  if (body->root != nullptr && !(root.sharding == state.sharding)) {
    Constrain(*body->root, state.sharding, root, inner, "loop state");
  }
  out.sharding = state.sharding;
  out.deps = state.deps;
  OrInto(out.deps, root.deps);
  out.element_deps = state.element_deps;
  for (size_t i = 0; i < root.element_deps.size(); ++i) {
    if (i >= out.element_deps.size()) out.element_deps.resize(i + 1);
    OrInto(out.element_deps[i], root.element_deps[i]);
  }
  out.rng = state.rng;
  MergeRng(out.rng, root.rng);
}

void Walker::VisitConditional(const HloInstruction& instr,
                              const std::vector<const ValueState*>& ops, ValueState& out,
                              const Frame& inner) {
  bool first = true;
  for (size_t b = 0; b < instr.called_computations().size(); ++b) {
    const HloComputation* branch = instr.called_computations()[b].computation;
    if (branch == nullptr) continue;
    std::vector<ValueState> args;
    if (b + 1 < ops.size()) args.push_back(*ops[b + 1]);
    ValueState r = Invoke(*branch, args, inner);
    out.sharding = first ? r.sharding : Meet(out.sharding, r.sharding);
    OrInto(out.deps, DepsOf(r));
    MergeRng(out.rng, r.rng);
    first = false;
  }
  if (first) out.sharding = ValueSharding::All(instr.shape, ArraySharding::Kind::kUnknown);
}

void Walker::TrackRng(const HloInstruction& instr, const std::vector<const ValueState*>& ops,
                      ValueState& out) {
  if (!CarriesRng(instr.opcode)) return;
  const bool out_replicated = AllReplicated(out.sharding);
  if (out_replicated && instr.opcode != Opcode::kCall && instr.opcode != Opcode::kWhile) {
    for (const ValueState* op : ops) MergeRng(out.rng, op->rng);
  }
  if (out_replicated || out.sharding.is_tuple || !instr.shape.IsArray()) {
    if (!out_replicated) out.rng.clear();
    return;
  }
  const int64_t m = instr.shape.ElementCount();
  for (const ValueState* op : ops) {
    if (!AllReplicated(op->sharding)) continue;
    for (int32_t g : op->rng) {
      Generation& gen = generations_[static_cast<size_t>(g)];
      if (gen.consumed_by >= 0 || (gen.counters != m && gen.counters != m + 1)) continue;
      CommunicationNeed need;
      need.kind = CommunicationNeed::Kind::kReplicatedThreefry;
      need.rule = "replicated threefry";
      need.shape = instr.shape;
      need.sharding = out.sharding.array;
      need.rng_counters = gen.counters;
      need.rng_iota = gen.iota;
      // Counted where the generation runs, named after its counter.
      gen.consumed_by = AddNeed(std::move(need), *gen.iota, {}, gen.frame);
    }
  }
  out.rng.clear();
}

}  // namespace spmdsim::passes::sharding_internal
