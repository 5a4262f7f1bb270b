#include "passes/sharding/sharding_propagation.h"

#include <algorithm>
#include <charconv>
#include <span>
#include <unordered_map>

#include "ir/c_unescape.h"
#include "ir/checked_math.h"
#include "passes/collectives/collective_analysis.h"
#include "passes/sharding/sharding_rules.h"

namespace spmdsim::passes {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;

namespace {

// ---- Attribute text -----------------------------------------------------------------------------

// "{0,2,1}" or "{}" -> ints; nullopt when the text is not such a list.
std::optional<std::vector<int64_t>> ParseIntList(std::string_view text) {
  std::vector<int64_t> values;
  size_t i = 0;
  while (i < text.size() && (text[i] == '{' || text[i] == ' ')) ++i;
  while (i < text.size() && text[i] != '}') {
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), value);
    if (ec != std::errc()) return std::nullopt;
    values.push_back(value);
    i = static_cast<size_t>(end - text.data());
    while (i < text.size() && (text[i] == ',' || text[i] == ' ')) ++i;
  }
  return values;
}

std::vector<int64_t> IntsAttr(const HloInstruction& instr, std::string_view name) {
  return ParseIntList(instr.FindAttribute(name)).value_or(std::vector<int64_t>{});
}

int64_t IntAttr(const HloInstruction& instr, std::string_view name, int64_t fallback) {
  const std::string_view text = instr.FindAttribute(name);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() ? value : fallback;
}

// slice={[0:16384], [0:64:1]} -> (start, limit, stride) per dim.
struct SliceRange {
  int64_t start = 0, limit = 0, stride = 1;
};
std::vector<SliceRange> ParseSlice(std::string_view text) {
  std::vector<SliceRange> ranges;
  size_t i = 0;
  while ((i = text.find('[', i)) != text.npos) {
    const size_t close = text.find(']', i);
    if (close == text.npos) break;
    std::string_view body = text.substr(i + 1, close - i - 1);
    int64_t parts[3] = {0, 0, 1};
    for (int64_t& part : parts) {
      const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), part);
      if (ec != std::errc()) break;
      body.remove_prefix(static_cast<size_t>(end - body.data()));
      if (!body.empty() && body.front() == ':') body.remove_prefix(1);
    }
    ranges.push_back({parts[0], parts[1], parts[2]});
    i = close + 1;
  }
  return ranges;
}

// The value of `key` inside frontend_attributes={k="...",...} (escaped quotes inside kept).
std::string_view FrontendAttribute(const HloInstruction& instr, std::string_view key) {
  const std::string_view text = instr.FindAttribute("frontend_attributes");
  const std::string needle = std::string(key) + "=\"";
  const size_t start = text.find(needle);
  if (start == text.npos) return {};
  const size_t begin = start + needle.size();
  for (size_t i = begin; i < text.size(); ++i) {
    if (text[i] == '"' && text[i - 1] != '\\') return text.substr(begin, i - begin);
  }
  return {};
}

// ---- Dependency sets ----------------------------------------------------------------------------

using Bits = std::vector<uint64_t>;

void SetBit(Bits& bits, size_t index) {
  if (bits.size() <= index / 64) bits.resize(index / 64 + 1, 0);
  bits[index / 64] |= uint64_t{1} << (index % 64);
}

void OrInto(Bits& into, const Bits& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) into[i] |= from[i];
}

std::vector<int32_t> BitList(const Bits& bits, size_t limit) {
  std::vector<int32_t> out;
  for (size_t w = 0; w < bits.size(); ++w) {
    for (size_t b = 0; b < 64; ++b) {
      const size_t index = w * 64 + b;
      if (index < limit && (bits[w] >> b & 1) != 0) out.push_back(static_cast<int32_t>(index));
    }
  }
  return out;
}

// ---- Values -------------------------------------------------------------------------------------

struct ValueState {
  ValueSharding sharding;
  Bits deps;                       // needs the whole value depends on
  std::vector<Bits> element_deps;  // a tuple: what each element depends on besides `deps`
  std::vector<int32_t> rng;  // replicated-threefry generations it is made of (replicated only)
};

// Everything a value depends on.
Bits DepsOf(const ValueState& v) {
  Bits bits = v.deps;
  for (const Bits& element : v.element_deps) OrInto(bits, element);
  return bits;
}

// What element `index` of a tuple value depends on (opt-barriers and call arguments bundle
// unrelated values; their elements keep their own dependencies).
Bits ElementDeps(const ValueState& v, size_t index) {
  if (index >= v.element_deps.size()) return DepsOf(v);
  Bits bits = v.deps;
  OrInto(bits, v.element_deps[index]);
  return bits;
}

bool AnyLeaf(const ValueSharding& v, ArraySharding::Kind kind) {
  if (!v.is_tuple) return v.array.kind == kind;
  return std::any_of(v.elements.begin(), v.elements.end(),
                     [kind](const ValueSharding& e) { return AnyLeaf(e, kind); });
}

bool AllReplicated(const ValueSharding& v) {
  if (!v.is_tuple) return v.array.IsReplicated();
  return std::all_of(v.elements.begin(), v.elements.end(), AllReplicated);
}

// The common part of two shardings: per dimension, the axes both lead with.
ArraySharding Meet(const ArraySharding& a, const ArraySharding& b) {
  if (a == b) return a;
  if (!a.IsTiled() || !b.IsTiled() || a.dims.size() != b.dims.size()) {
    return a.kind == ArraySharding::Kind::kManual && b.kind == ArraySharding::Kind::kManual
               ? a
               : ArraySharding::Unknown();
  }
  ArraySharding out = a;
  for (size_t d = 0; d < a.dims.size(); ++d) {
    size_t k = 0;
    while (k < a.dims[d].size() && k < b.dims[d].size() && a.dims[d][k] == b.dims[d][k]) ++k;
    out.dims[d].resize(k);
  }
  return out;
}

ValueSharding Meet(const ValueSharding& a, const ValueSharding& b) {
  if (!a.is_tuple && !b.is_tuple) return {Meet(a.array, b.array), {}};
  if (a.is_tuple != b.is_tuple || a.elements.size() != b.elements.size()) {
    return a == b ? a : ValueSharding{ArraySharding::Unknown(), {}};  // shapes differ: invalid HLO
  }
  ValueSharding out = a;
  for (size_t i = 0; i < a.elements.size(); ++i) {
    out.elements[i] = Meet(a.elements[i], b.elements[i]);
  }
  return out;
}

// The array leaves of a value with their shapes, in order.
void Leaves(const ValueSharding& v, const ir::Shape& shape,
            std::vector<std::pair<const ArraySharding*, const ir::Shape*>>& out) {
  if (!v.is_tuple || !shape.IsTuple()) {
    if (shape.IsArray()) out.emplace_back(&v.array, &shape);
    return;
  }
  for (size_t i = 0; i < v.elements.size() && i < shape.tuple_shapes().size(); ++i) {
    Leaves(v.elements[i], shape.tuple_shapes()[i], out);
  }
}

void MergeRng(std::vector<int32_t>& into, const std::vector<int32_t>& from) {
  for (int32_t g : from) {
    if (std::find(into.begin(), into.end(), g) == into.end()) into.push_back(g);
  }
}

bool IsElementwise(Opcode op) {
  switch (op) {
    case Opcode::kAbs:
    case Opcode::kAdd:
    case Opcode::kAnd:
    case Opcode::kAtan2:
    case Opcode::kCbrt:
    case Opcode::kCeil:
    case Opcode::kClamp:
    case Opcode::kClz:
    case Opcode::kCompare:
    case Opcode::kComplex:
    case Opcode::kConvert:
    case Opcode::kCopy:
    case Opcode::kCos:
    case Opcode::kDivide:
    case Opcode::kErf:
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kFloor:
    case Opcode::kImag:
    case Opcode::kIsFinite:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kLogistic:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kMultiply:
    case Opcode::kNegate:
    case Opcode::kNot:
    case Opcode::kOr:
    case Opcode::kPopulationCount:
    case Opcode::kPower:
    case Opcode::kReal:
    case Opcode::kReducePrecision:
    case Opcode::kRemainder:
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
    case Opcode::kRsqrt:
    case Opcode::kSelect:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical:
    case Opcode::kSign:
    case Opcode::kSin:
    case Opcode::kSqrt:
    case Opcode::kStochasticConvert:
    case Opcode::kSubtract:
    case Opcode::kTan:
    case Opcode::kTanh:
    case Opcode::kXor:
      return true;
    default:
      return false;
  }
}

// Ops the threefry bits flow through unchanged in order (so a flat counter index still names
// the same element): elementwise ops, reshapes, the halves' slices and concatenation, and the
// plumbing of calls, loops and tuples.
bool CarriesRng(Opcode op) {
  switch (op) {
    case Opcode::kReshape:
    case Opcode::kBitcast:
    case Opcode::kBitcastConvert:
    case Opcode::kSlice:
    case Opcode::kConcatenate:
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kCall:
    case Opcode::kWhile:
    case Opcode::kOptimizationBarrier:
    case Opcode::kCustomCall:
    case Opcode::kParameter:
      return true;
    default:
      return IsElementwise(op);
  }
}

// iota(n), 1-D, whose users slice it into the halves [0:n/2] and [n/2:n]: the counter of JAX's
// non-partitionable threefry (REFERENCE §2).
bool IsThreefryCounter(const HloInstruction& iota) {
  if (iota.shape.rank() != 1) return false;
  const int64_t n = iota.shape.dims()[0];
  if (n < 2 || n % 2 != 0) return false;
  bool low = false;
  bool high = false;
  for (const HloInstruction* user : iota.users) {
    if (user->opcode != Opcode::kSlice) continue;
    const std::vector<SliceRange> r = ParseSlice(user->FindAttribute("slice"));
    if (r.size() != 1 || r[0].stride != 1) continue;
    low = low || (r[0].start == 0 && r[0].limit == n / 2);
    high = high || (r[0].start == n / 2 && r[0].limit == n);
  }
  return low && high;
}

// ---- The walk -----------------------------------------------------------------------------------

struct Frame {
  int64_t multiplier = 1;
  bool multiplier_known = true;
  int32_t loop = -1;
  int depth = 0;
  std::string op_name;  // the calling instruction's full op_name
  std::string source;   // the innermost call site's source
};

struct Generation {
  const HloInstruction* iota = nullptr;
  int64_t counters = 0;
  Frame frame;               // where the counter is made
  int32_t consumed_by = -1;  // the need that consumed it
};

using Env = std::unordered_map<const HloInstruction*, ValueState>;

class Walker {
 public:
  Walker(const ir::HloModule& module, const ShardingPropagationOptions& options,
         ShardingPropagationResult& result)
      : module_(module), options_(options), result_(result) {}

  void Run() {
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

 private:
  ValueState Invoke(const HloComputation& computation, const std::vector<ValueState>& args,
                    const Frame& frame, Env* keep = nullptr) {
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

  ValueState Unknown(const ir::Shape& shape) {
    return {ValueSharding::All(shape, ArraySharding::Kind::kUnknown), {}, {}};
  }

  // Inside a called computation JAX writes op_names relative to the call ("add", "jit(_uniform)");
  // XLA's inliner prefixes the call's. Names that start with the entry's own first component
  // ("jit(train_step)/...") are already whole.
  std::string OpName(const HloInstruction& instr, const Frame& frame) const {
    const std::string own = ir::CUnescape(instr.metadata().op_name);
    const bool whole = !top_component_.empty() && own.rfind(top_component_, 0) == 0;
    if (frame.op_name.empty() || whole) return own;
    return own.empty() ? frame.op_name : frame.op_name + "/" + own;
  }

  std::string Source(const HloInstruction& instr, const Frame& frame) const {
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

  Frame Inner(const HloInstruction& caller, const Frame& frame) const {
    Frame inner = frame;
    inner.depth = frame.depth + 1;
    inner.op_name = OpName(caller, frame);
    inner.source = Source(caller, frame);
    return inner;
  }

  // Records a need; returns its id.
  int32_t AddNeed(CommunicationNeed need, const HloInstruction& instr, const Bits& deps,
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

  // Partial sums and reshards of a rule, on an array result.
  ArraySharding Apply(const RuleOutcome& outcome, const HloInstruction& instr,
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

  ValueState Visit(const HloInstruction& instr, Env& env, const Frame& frame) {
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
               ir::CollectiveKind(instr.opcode).empty()) {
      // Inside shard_map: per-device values, nothing to partition.
      out.sharding = ValueSharding::All(instr.shape, ArraySharding::Kind::kManual);
    } else if (IsElementwise(instr.opcode) ||
               (instr.opcode == Opcode::kBitcastConvert && instr.operands.size() == 1 &&
                instr.operands[0]->shape.rank() == instr.shape.rank())) {
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
          if (!ops.empty() && ops[0]->sharding.is_tuple &&
              index < ops[0]->sharding.elements.size()) {
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
          single(
              Apply(DotRule(array(0), static_cast<size_t>(instr.operands[0]->shape.rank()),
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
          const ArraySharding r = Apply(ReduceRule(array(0), reduced), instr, instr.operands,
                                        "reduce", out.deps, frame);
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
          single(Apply(
              ReshapeRule(array(0), instr.operands[0]->shape.dims(), instr.shape.dims(), mesh),
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
          if (!ir::CollectiveKind(instr.opcode).empty()) {
            VisitCollective(instr, ops, out, frame);
          } else if (std::all_of(ops.begin(), ops.end(), [](const ValueState* op) {
                       return AllReplicated(op->sharding);
                     })) {
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

  // True for a call, loop or conditional once the walk has used its instruction budget.
  bool OverBudget(const HloInstruction& instr) {
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

  // Ops that carry manual values through to a region they call or to tuple elements.
  static bool PassesManual(Opcode op) {
    return op == Opcode::kCustomCall || op == Opcode::kCall || op == Opcode::kWhile ||
           op == Opcode::kConditional || op == Opcode::kTuple || op == Opcode::kGetTupleElement ||
           op == Opcode::kOptimizationBarrier;
  }

  static bool AnyManualOperand(const std::vector<const ValueState*>& ops) {
    return std::any_of(ops.begin(), ops.end(), [](const ValueState* op) {
      return AnyLeaf(op->sharding, ArraySharding::Kind::kManual);
    });
  }

  // Reshards the value `out` of `instr` to `want` where they differ; `out` takes `want`.
  void Constrain(const HloInstruction& instr, const ValueSharding& want, ValueState& out,
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

  void VisitCustomCall(const HloInstruction& instr, const std::vector<const ValueState*>& ops,
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

  void VisitCollective(const HloInstruction& instr, const std::vector<const ValueState*>& ops,
                       ValueState& out, const Frame& frame) {
    CommunicationNeed need;
    need.kind = CommunicationNeed::Kind::kExplicit;
    need.rule = std::string(ir::CollectiveKind(instr.opcode));
    need.shape = instr.operands.empty() ? instr.shape : instr.operands[0]->shape;
    SetBit(out.deps, static_cast<size_t>(AddNeed(std::move(need), instr, out.deps, frame)));
    out.sharding = ops.empty() || ops[0]->sharding.is_tuple != instr.shape.IsTuple()
                       ? ValueSharding::All(instr.shape, ArraySharding::Kind::kManual)
                       : ops[0]->sharding;
  }

  void VisitWhile(const HloInstruction& instr, const std::vector<const ValueState*>& ops,
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

  void VisitConditional(const HloInstruction& instr, const std::vector<const ValueState*>& ops,
                        ValueState& out, const Frame& inner) {
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

  // Threefry bits stay tracked while replicated; where replicated bits of a whole generation
  // meet a split value, the generation is split along that value's sharding (a need).
  void TrackRng(const HloInstruction& instr, const std::vector<const ValueState*>& ops,
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

  const ir::HloModule& module_;
  const ShardingPropagationOptions& options_;
  ShardingPropagationResult& result_;
  std::vector<Generation> generations_;
  int32_t next_loop_ = 0;
  std::string top_component_;  // "jit(train_step)/"
  bool budget_noted_ = false;
};

}  // namespace

ShardingPropagationResult PropagateShardings(const ir::HloModule& module,
                                             const ShardingPropagationOptions& options) {
  ShardingPropagationResult result;
  Walker walker(module, options, result);
  walker.Run();
  return result;
}

}  // namespace spmdsim::passes
