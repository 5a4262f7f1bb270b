#include "passes/sharding/sharding_propagation.h"

#include <algorithm>
#include <charconv>
#include <span>
#include <unordered_map>

#include "ir/c_unescape.h"
#include "ir/checked_math.h"
#include "passes/sharding/sharding_rules.h"
#include "passes/sharding/sharding_walker.h"

namespace spmdsim::passes {

namespace sharding_internal {

void Walker::Run() {
  result_.mesh = ModuleMesh(module_);
  const HloComputation* entry = module_.entry;
  if (entry == nullptr) {
    result_.notes.push_back("the module has no entry computation");
    return;
  }
  std::vector<ValueState> args(entry->parameters.size());
  for (size_t i = 0; i < entry->parameters.size(); ++i) {
    const HloInstruction* param = entry->parameters[i];
    if (param == nullptr) continue;
    args[i].sharding = ValueSharding::Replicated(param->shape);
    if (param->sharding()) {
      args[i].sharding = FromHloSharding(*param->sharding(), param->shape, result_.mesh);
    }
  }
  for (const HloInstruction* instr : entry->instructions) {
    const std::string_view name = instr->metadata().op_name;
    const size_t slash = name.find('/');
    if (slash != std::string_view::npos) {
      top_component_ = std::string(name.substr(0, slash + 1));
      break;
    }
  }
  Frame frame;
  Env env;
  Invoke(*entry, args, frame, &env);
  for (const HloInstruction* instr : entry->instructions) {
    const auto it = env.find(instr);
    if (it == env.end()) continue;
    std::vector<std::pair<const ArraySharding*, const ir::Shape*>> leaves;
    Leaves(it->second.sharding, instr->shape, leaves);
    std::string text;
    for (const auto& [sharding, shape] : leaves) {
      text += (text.empty() ? "" : ", ") + sharding->ToString(result_.mesh);
    }
    result_.entry_shardings.emplace_back(std::string(instr->name), text);
  }
  if (result_.unknown_instructions > 0) {
    result_.notes.push_back(std::to_string(result_.unknown_instructions) +
                            " instruction(s) got no sharding (unsupported op or sharding); "
                            "they and their users raise no communication needs");
  }
}

ValueState Walker::Invoke(const HloComputation& computation, const std::vector<ValueState>& args,
                          const Frame& frame, Env* keep) {
  Env local;
  Env& env = keep != nullptr ? *keep : local;
  env.reserve(computation.instructions.size());
  for (const HloInstruction* instr : computation.instructions) {
    ++result_.instructions_walked;
    if (instr->opcode == Opcode::kParameter) {
      const auto number = static_cast<size_t>(std::max<int64_t>(0, instr->parameter_number));
      env[instr] = number < args.size() ? args[number] : Unknown(instr->shape);
      continue;
    }
    env[instr] = Visit(*instr, env, frame);
  }
  if (computation.root == nullptr) return {};
  const auto it = env.find(computation.root);
  return it == env.end() ? ValueState{} : it->second;
}

std::string Walker::OpName(const HloInstruction& instr, const Frame& frame) const {
  const std::string own = ir::CUnescape(instr.metadata().op_name);
  const bool whole = !top_component_.empty() && own.rfind(top_component_, 0) == 0;
  if (frame.op_name.empty() || whole) return own;
  return own.empty() ? frame.op_name : frame.op_name + "/" + own;
}

std::string Walker::Source(const HloInstruction& instr, const Frame& frame) const {
  std::string source = instr.metadata().Source();
  if (source.empty() && instr.metadata().stack_frame_id != 0) {
    std::string_view file;
    int64_t line = 0;
    if (module_.stack_frames.Resolve(instr.metadata().stack_frame_id, file, line)) {
      source = std::string(file) + ":" + std::to_string(line);
    }
  }
  return source.empty() ? frame.source : source;
}

Frame Walker::Inner(const HloInstruction& caller, const Frame& frame) const {
  Frame inner = frame;
  inner.depth = frame.depth + 1;
  inner.op_name = OpName(caller, frame);
  inner.source = Source(caller, frame);
  return inner;
}

int32_t Walker::AddNeed(CommunicationNeed need, const HloInstruction& instr, const Bits& deps,
                        const Frame& frame) {
  need.instruction = &instr;
  need.multiplier = frame.multiplier;
  need.multiplier_known = frame.multiplier_known;
  need.loop = frame.loop;
  need.depends_on = BitList(deps, result_.needs.size());
  need.op_name = OpName(instr, frame);
  need.source = Source(instr, frame);
  result_.needs.push_back(std::move(need));
  return static_cast<int32_t>(result_.needs.size() - 1);
}

ArraySharding Walker::Apply(const RuleOutcome& outcome, const HloInstruction& instr,
                            std::span<HloInstruction* const> operands, const std::string& rule,
                            Bits& deps, const Frame& frame) {
  const Bits before = deps;
  for (const Reshard& r : outcome.reshards) {
    if (r.operand >= operands.size() || !operands[r.operand]->shape.IsArray()) continue;
    CommunicationNeed need;
    need.kind = CommunicationNeed::Kind::kReshard;
    need.rule = rule;
    need.shape = operands[r.operand]->shape;
    need.from = r.from;
    need.to = r.to;
    SetBit(deps, static_cast<size_t>(AddNeed(std::move(need), instr, before, frame)));
  }
  if (!outcome.partial_axes.empty() && outcome.result.IsTiled()) {
    CommunicationNeed need;
    need.kind = CommunicationNeed::Kind::kPartialSum;
    need.rule = rule;
    need.shape = instr.shape.IsTuple() && !instr.shape.tuple_shapes().empty()
                     ? instr.shape.tuple_shapes()[0]
                     : instr.shape;
    need.sharding = outcome.result;
    need.axes = outcome.partial_axes;
    const Bits at = deps;
    SetBit(deps, static_cast<size_t>(AddNeed(std::move(need), instr, at, frame)));
  }
  return outcome.result;
}

ValueState Walker::Visit(const HloInstruction& instr, Env& env, const Frame& frame) {
  std::vector<const ValueState*> ops;
  ValueState out;
  for (const HloInstruction* operand : instr.operands) {
    const auto it = env.find(operand);
    if (it == env.end()) {
      env[operand] = Unknown(operand->shape);
      ops.push_back(&env[operand]);
    } else {
      ops.push_back(&it->second);
    }
    OrInto(out.deps, DepsOf(*ops.back()));
  }
  const size_t rank = instr.shape.IsArray() ? static_cast<size_t>(instr.shape.rank()) : 0;
  const DeviceMesh& mesh = result_.mesh;
  auto array = [&](size_t i) -> ArraySharding {
    if (i >= ops.size() || ops[i]->sharding.is_tuple) return ArraySharding::Unknown();
    return ops[i]->sharding.array;
  };
  auto single = [&](const ArraySharding& s) { out.sharding = {s, {}}; };
  const Frame inner = Inner(instr, frame);

  if (frame.depth > options_.max_call_depth || OverBudget(instr)) {
    out.sharding = ValueSharding::All(instr.shape, ArraySharding::Kind::kUnknown);
  } else if (AnyManualOperand(ops) && !PassesManual(instr.opcode) &&
             ir::CollectiveKindOf(instr.opcode) == ir::CollectiveKind::kNone) {
    // Inside shard_map: per-device values, nothing to partition.
    out.sharding = ValueSharding::All(instr.shape, ArraySharding::Kind::kManual);
  } else if (ir::IsElementwiseOpcode(instr.opcode) &&
             // A bitcast-convert between widths adds or drops a minor dimension.
             (instr.opcode != Opcode::kBitcastConvert ||
              (instr.operands.size() == 1 &&
               instr.operands[0]->shape.rank() == instr.shape.rank()))) {
    std::vector<ArraySharding> arrays;
    for (size_t i = 0; i < ops.size(); ++i) arrays.push_back(array(i));
    single(Apply(ElementwiseRule(arrays, rank, mesh), instr, instr.operands, "elementwise",
                 out.deps, frame));
  } else {
    switch (instr.opcode) {
      case Opcode::kConstant:
      case Opcode::kIota:
      case Opcode::kRng:
      case Opcode::kRngBitGenerator:
      case Opcode::kPartitionId:
      case Opcode::kReplicaId:
      case Opcode::kAfterAll:
        out.sharding = ValueSharding::Replicated(instr.shape);
        if (instr.opcode == Opcode::kIota && IsThreefryCounter(instr)) {
          generations_.push_back({&instr, instr.shape.dims()[0], frame, -1});
          out.rng.push_back(static_cast<int32_t>(generations_.size() - 1));
        }
        break;
      case Opcode::kTuple:
        out.sharding.is_tuple = true;
        out.deps.clear();
        for (const ValueState* op : ops) {
          out.sharding.elements.push_back(op->sharding);
          out.element_deps.push_back(DepsOf(*op));
        }
        break;
      case Opcode::kGetTupleElement: {
        const auto index = static_cast<size_t>(std::max<int64_t>(0, instr.tuple_index));
        if (!ops.empty() && ops[0]->sharding.is_tuple && index < ops[0]->sharding.elements.size()) {
          out.sharding = ops[0]->sharding.elements[index];
          out.deps = ElementDeps(*ops[0], index);
        } else {
          out.sharding = ValueSharding::All(instr.shape, ArraySharding::Kind::kUnknown);
        }
        break;
      }
      case Opcode::kCall:
      case Opcode::kFusion: {
        const HloComputation* callee = instr.called_computations().empty()
                                           ? nullptr
                                           : instr.called_computations()[0].computation;
        if (callee == nullptr) {
          out.sharding = ValueSharding::All(instr.shape, ArraySharding::Kind::kUnknown);
          break;
        }
        std::vector<ValueState> args;
        for (const ValueState* op : ops) args.push_back(*op);
        out = Invoke(*callee, args, inner);
        break;
      }
      case Opcode::kWhile:
        VisitWhile(instr, ops, out, frame);
        break;
      case Opcode::kConditional:
        VisitConditional(instr, ops, out, inner);
        break;
      case Opcode::kOptimizationBarrier:
      case Opcode::kCopyStart:
      case Opcode::kAddDependency:
        if (ops.empty()) {
          out.sharding = ValueSharding::Replicated(instr.shape);
        } else {
          out = *ops[0];
        }
        break;
      case Opcode::kCustomCall:
        VisitCustomCall(instr, ops, out, frame);
        break;
      case Opcode::kDot: {
        if (instr.operands.size() < 2) {
          out.sharding = ValueSharding::All(instr.shape, ArraySharding::Kind::kUnknown);
          break;
        }
        DotDims dims{IntsAttr(instr, "lhs_batch_dims"), IntsAttr(instr, "rhs_batch_dims"),
                     IntsAttr(instr, "lhs_contracting_dims"),
                     IntsAttr(instr, "rhs_contracting_dims")};
        single(Apply(DotRule(array(0), static_cast<size_t>(instr.operands[0]->shape.rank()),
                             array(1), static_cast<size_t>(instr.operands[1]->shape.rank()), dims),
                     instr, instr.operands, "dot", out.deps, frame));
        break;
      }
      case Opcode::kReduce: {
        const std::vector<int64_t> reduced = IntsAttr(instr, "dimensions");
        const size_t inputs = instr.operands.size() / 2;
        if (inputs == 0) {
          out.sharding = ValueSharding::All(instr.shape, ArraySharding::Kind::kUnknown);
          break;
        }
        const ArraySharding r =
            Apply(ReduceRule(array(0), reduced), instr, instr.operands, "reduce", out.deps, frame);
        if (instr.shape.IsTuple()) {
          out.sharding.is_tuple = true;
          out.sharding.elements.assign(instr.shape.tuple_shapes().size(), {r, {}});
        } else {
          single(r);
        }
        break;
      }
      case Opcode::kBroadcast:
        single(BroadcastRule(array(0), IntsAttr(instr, "dimensions"), rank).result);
        break;
      case Opcode::kTranspose:
        single(TransposeRule(array(0), IntsAttr(instr, "dimensions")).result);
        break;
      case Opcode::kReshape:
      case Opcode::kBitcast:
      case Opcode::kBitcastConvert:
        if (instr.operands.empty() || !instr.operands[0]->shape.IsArray() ||
            instr.operands[0]->shape.ElementCount() != instr.shape.ElementCount()) {
          single(array(0).IsReplicated() ? ArraySharding::Replicated(rank)
                                         : ArraySharding::Unknown());
          break;
        }
        single(
            Apply(ReshapeRule(array(0), instr.operands[0]->shape.dims(), instr.shape.dims(), mesh),
                  instr, instr.operands, "reshape", out.deps, frame));
        break;
      case Opcode::kSlice:
      case Opcode::kDynamicSlice:
      case Opcode::kPad:
      case Opcode::kReverse: {
        // The dimensions cut (their size changes) or, for reverse, flipped.
        std::vector<int64_t> cut;
        if (instr.opcode == Opcode::kReverse) {
          cut = IntsAttr(instr, "dimensions");
        } else if (!instr.operands.empty() &&
                   instr.operands[0]->shape.rank() == instr.shape.rank()) {
          for (size_t d = 0; d < rank; ++d) {
            if (instr.operands[0]->shape.dims()[d] != instr.shape.dims()[d]) {
              cut.push_back(static_cast<int64_t>(d));
            }
          }
        }
        single(Apply(CutRule(array(0), cut), instr, instr.operands,
                     std::string(instr.opcode_name()), out.deps, frame));
        break;
      }
      case Opcode::kDynamicUpdateSlice:
        single(array(0));
        break;
      case Opcode::kConcatenate: {
        std::vector<ArraySharding> arrays;
        for (size_t i = 0; i < ops.size(); ++i) arrays.push_back(array(i));
        const std::vector<int64_t> dim = IntsAttr(instr, "dimensions");
        single(Apply(ConcatenateRule(arrays, dim.empty() ? 0 : dim[0], rank, mesh), instr,
                     instr.operands, "concatenate", out.deps, frame));
        break;
      }
      case Opcode::kGather: {
        if (instr.operands.size() < 2) {
          out.sharding = ValueSharding::All(instr.shape, ArraySharding::Kind::kUnknown);
          break;
        }
        GatherDims dims;
        dims.offset_dims = IntsAttr(instr, "offset_dims");
        dims.collapsed_slice_dims = IntsAttr(instr, "collapsed_slice_dims");
        dims.start_index_map = IntsAttr(instr, "start_index_map");
        dims.operand_batching_dims = IntsAttr(instr, "operand_batching_dims");
        dims.start_indices_batching_dims = IntsAttr(instr, "start_indices_batching_dims");
        dims.slice_sizes = IntsAttr(instr, "slice_sizes");
        dims.index_vector_dim = IntAttr(instr, "index_vector_dim", 0);
        single(Apply(GatherRule(array(0), instr.operands[0]->shape.dims(), array(1),
                                static_cast<size_t>(instr.operands[1]->shape.rank()), rank, dims),
                     instr, instr.operands, "gather", out.deps, frame));
        break;
      }
      case Opcode::kScatter: {
        if (instr.operands.size() != 3 || instr.shape.IsTuple()) {
          out.sharding = ValueSharding::All(instr.shape, ArraySharding::Kind::kUnknown);
          break;
        }
        ScatterDims dims;
        dims.update_window_dims = IntsAttr(instr, "update_window_dims");
        dims.inserted_window_dims = IntsAttr(instr, "inserted_window_dims");
        dims.scatter_dims_to_operand_dims = IntsAttr(instr, "scatter_dims_to_operand_dims");
        dims.input_batching_dims = IntsAttr(instr, "input_batching_dims");
        dims.scatter_indices_batching_dims = IntsAttr(instr, "scatter_indices_batching_dims");
        dims.index_vector_dim = IntAttr(instr, "index_vector_dim", 0);
        single(Apply(ScatterRule(array(0), rank, array(2),
                                 static_cast<size_t>(instr.operands[2]->shape.rank()), dims),
                     instr, instr.operands, "scatter", out.deps, frame));
        break;
      }
      default:
        if (ir::CollectiveKindOf(instr.opcode) != ir::CollectiveKind::kNone) {
          VisitCollective(instr, ops, out, frame);
        } else if (std::all_of(ops.begin(), ops.end(),
                               [](const ValueState* op) { return AllReplicated(op->sharding); })) {
          out.sharding = ValueSharding::Replicated(instr.shape);
        } else {
          out.sharding = ValueSharding::All(instr.shape, ArraySharding::Kind::kUnknown);
        }
        break;
    }
  }

  // An instruction's own sharding is a constraint (the entry parameters are the sources).
  if (instr.sharding() && instr.opcode != Opcode::kParameter &&
      !AnyLeaf(out.sharding, ArraySharding::Kind::kManual)) {
    Constrain(instr, FromHloSharding(*instr.sharding(), instr.shape, mesh), out, frame,
              "constraint");
  }
  if (AnyLeaf(out.sharding, ArraySharding::Kind::kUnknown)) ++result_.unknown_instructions;
  TrackRng(instr, ops, out);
  return out;
}

bool Walker::OverBudget(const HloInstruction& instr) {
  const auto needs = static_cast<int64_t>(result_.needs.size());
  if (instr.called_computations().empty() ||
      (result_.instructions_walked <= options_.max_instructions_walked &&
       needs <= options_.max_needs)) {
    return false;
  }
  if (!budget_noted_) {
    result_.notes.push_back("walked " + std::to_string(result_.instructions_walked) +
                            " instructions and recorded " + std::to_string(needs) +
                            " communication needs; the remaining calls were not entered");
    budget_noted_ = true;
  }
  return true;
}

}  // namespace sharding_internal

using sharding_internal::Walker;

ShardingPropagationResult PropagateShardings(const ir::HloModule& module,
                                             const ShardingPropagationOptions& options) {
  ShardingPropagationResult result;
  Walker walker(module, options, result);
  walker.Run();
  return result;
}

}  // namespace spmdsim::passes
