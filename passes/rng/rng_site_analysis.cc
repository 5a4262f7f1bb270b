#include "passes/rng/rng_site_analysis.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "ir/c_unescape.h"
#include "ir/checked_math.h"
#include "ir/device_count.h"
#include "passes/memory/buffer_alias_analysis.h"
#include "passes/memory/buffer_dataflow_analysis.h"
#include "passes/rng/philox_expansion.h"
#include "passes/rng/threefry_hashes.h"
#include "passes/sharding/partition_offsets.h"

namespace spmdsim::passes {
namespace {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;
using ir::PrimitiveType;
using ir::SaturatingAdd;

// Depth limit for the backward walks over operands (hostile input must not overflow the stack).
constexpr int kMaxWalkDepth = 256;
// Values this small are keys, key schedules and rotation vectors, not random tensors.
constexpr int64_t kKeySizedElements = 16;
// Rotations an unrolled hash performs (20 rounds).
constexpr int kUnrolledShifts = kThreefryRounds;

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

bool IsU32Array(const ir::Shape& shape) {
  return shape.IsArray() && shape.element_type() == PrimitiveType::kU32;
}

// (s32[], X0, X1, ks0, ks1, ks2, u32[4], u32[4]): the state of XLA:CPU's rolled threefry loop.
bool IsThreefryLoopState(const ir::Shape& shape) {
  if (!shape.IsTuple() || shape.tuple_shapes().size() != 8) return false;
  const auto& e = shape.tuple_shapes();
  if (!e[0].IsArray() || e[0].element_type() != PrimitiveType::kS32 || e[0].rank() != 0) {
    return false;
  }
  for (int i = 1; i <= 5; ++i) {
    if (!IsU32Array(e[i])) return false;
  }
  if (e[1].dims() != e[2].dims()) return false;
  for (int i = 6; i <= 7; ++i) {
    if (!IsU32Array(e[i]) || e[i].dims() != std::vector<int64_t>{4}) return false;
  }
  return true;
}

// The integers of a constant array payload "{0, 0, 1, 1}".
std::vector<int64_t> ArrayConstant(const HloInstruction* instr) {
  std::vector<int64_t> values;
  if (instr->opcode != Opcode::kConstant) return values;
  std::string_view text = instr->payload;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '-' || (text[i] >= '0' && text[i] <= '9')) {
      int64_t value = 0;
      const auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), value);
      if (ec != std::errc()) break;
      values.push_back(value);
      i = static_cast<size_t>(end - text.data());
    } else {
      ++i;
    }
  }
  return values;
}

// Number of shift-lefts by a threefry rotation constant inside a computation and its callees,
// and how many distinct rotation amounts they use.
std::pair<int, int> RotationShifts(const HloComputation* computation) {
  int shifts = 0;
  std::set<int64_t> amounts;
  ForEachNested(computation, [&](const HloInstruction* instr) {
    if (!IsRotationShift(instr)) return;
    ++shifts;
    amounts.insert(*ScalarConstant(instr->operands[1]));
  });
  return {shifts, static_cast<int>(amounts.size())};
}

// The shape of the hash lanes inside a fused threefry: the widest shift-left by a rotation
// constant; nullptr when there is none.
const ir::Shape* HashLaneShape(const HloComputation* computation) {
  const ir::Shape* lane = nullptr;
  ForEachNested(computation, [&](const HloInstruction* instr) {
    if (!IsRotationShift(instr)) return;
    // The widest: a fused key derivation (fold_in) hashes scalars beside the bits.
    if (lane == nullptr || instr->shape.ElementCount() > lane->ElementCount()) {
      lane = &instr->shape.get();
    }
  });
  return lane;
}

bool ContainsOpcode(const HloComputation* computation, Opcode opcode) {
  bool found = false;
  ForEachNested(computation,
                [&](const HloInstruction* instr) { found |= instr->opcode == opcode; });
  return found;
}

std::string ShapeText(const ir::Shape& shape) { return shape.ToString(/*print_layout=*/false); }

// JAX's threefry2x32 as its own computation, the form modules take before XLA inlines calls:
// (u32[] key0, u32[] key1, u32[...] x0, u32[...] x1) -> (u32[...], u32[...]). Returns the site
// kind its body implies (a cu_/hip_threefry2x32 custom call, XLA:CPU's rolled loop, or the 20
// rounds unrolled), or "" for any other computation.
std::string ThreefryFunctionKind(const HloComputation* computation) {
  if (computation == nullptr || computation->IsFusionComputation()) return "";
  std::vector<const HloInstruction*> params(4, nullptr);
  int64_t count = 0;
  for (const HloInstruction* instr : computation->instructions) {
    if (instr->opcode != Opcode::kParameter) continue;
    ++count;
    if (instr->parameter_number >= 0 && instr->parameter_number < 4) {
      params[static_cast<size_t>(instr->parameter_number)] = instr;
    }
  }
  if (count != 4 || std::find(params.begin(), params.end(), nullptr) != params.end()) return "";
  for (const HloInstruction* param : params) {
    if (!IsU32Array(param->shape)) return "";
  }
  const ir::Shape& x = params[2]->shape;
  if (params[3]->shape.dims() != x.dims()) return "";
  const HloInstruction* root = computation->root;
  if (root == nullptr || !root->shape.IsTuple() || root->shape.tuple_shapes().size() != 2) {
    return "";
  }
  for (const ir::Shape& element : root->shape.tuple_shapes()) {
    if (!IsU32Array(element) || element.dims() != x.dims()) return "";
  }
  bool custom_call = false;
  bool loop = false;
  ForEachNested(computation, [&](const HloInstruction* instr) {
    custom_call |= instr->opcode == Opcode::kCustomCall &&
                   instr->custom_call_target().find("threefry2x32") != std::string_view::npos;
    loop |= instr->opcode == Opcode::kWhile;
  });
  if (custom_call) return "threefry-custom-call";
  if (loop) return "threefry-rolled";
  const auto [shifts, amounts] = RotationShifts(computation);
  if (shifts >= kUnrolledShifts && amounts == 8) return "threefry-expanded";
  return "";
}

// What an instruction's value comes from: its operands, or for an element of a control-flow
// computation's parameter, that element of each caller's operand (loop-invariant values hoisted
// out of a loop are found this way).
std::vector<const HloInstruction*> Producers(const HloInstruction* instr) {
  std::vector<const HloInstruction*> out;
  if (instr->opcode == Opcode::kGetTupleElement && !instr->operands.empty() &&
      instr->operands[0]->opcode == Opcode::kParameter && instr->operands[0]->parent != nullptr &&
      !instr->operands[0]->parent->is_entry) {
    const HloInstruction* parameter = instr->operands[0];
    for (const HloInstruction* caller : parameter->parent->callers) {
      const size_t number =
          caller->opcode == Opcode::kWhile
              ? 0
              : static_cast<size_t>(std::max<int64_t>(parameter->parameter_number, 0));
      if (number >= caller->operands.size()) continue;
      const HloInstruction* source = caller->operands[number];
      if (source->opcode == Opcode::kTuple && instr->tuple_index >= 0 &&
          instr->tuple_index < static_cast<int64_t>(source->operands.size())) {
        source = source->operands[instr->tuple_index];
      }
      out.push_back(source);
    }
    return out;
  }
  // What a call returns is made by its callee's root (XLA:CPU's small-call wrappers hold the
  // counters' iotas and the threefry loop); an element of it by that element of the root.
  const HloInstruction* call = instr->opcode == Opcode::kCall ? instr
                               : instr->opcode == Opcode::kGetTupleElement &&
                                       !instr->operands.empty() &&
                                       instr->operands[0]->opcode == Opcode::kCall
                                   ? instr->operands[0]
                                   : nullptr;
  if (call != nullptr) {
    const HloComputation* callee = call->Called("to_apply");
    if (callee != nullptr && callee->root != nullptr) {
      const HloInstruction* root = callee->root;
      if (call != instr && root->opcode == Opcode::kTuple && instr->tuple_index >= 0 &&
          instr->tuple_index < static_cast<int64_t>(root->operands.size())) {
        root = root->operands[static_cast<size_t>(instr->tuple_index)];
      }
      out.push_back(root);
      return out;
    }
  }
  // A parameter of a called computation (XLA:CPU wraps each threefry loop in a call whose
  // parameter is the loop's whole initial tuple) comes from its callers' operands.
  if (instr->opcode == Opcode::kParameter && instr->parent != nullptr && !instr->parent->is_entry &&
      !instr->parent->IsFusionComputation()) {
    for (const HloInstruction* caller : instr->parent->callers) {
      const size_t number =
          caller->opcode == Opcode::kWhile
              ? 0
              : static_cast<size_t>(std::max<int64_t>(instr->parameter_number, 0));
      if (number < caller->operands.size()) out.push_back(caller->operands[number]);
    }
    return out;
  }
  out.assign(instr->operands.begin(), instr->operands.end());
  return out;
}

// The computation a site's results are used in: the anchor's, or, when the anchor is the root of
// a wrapper call (XLA:CPU's xla_cpu_small_call, one caller), the computation of that call.
const HloComputation* HomeComputation(const HloInstruction* anchor) {
  const HloComputation* home = anchor->parent;
  for (int hops = 0; hops < 16 && home != nullptr; ++hops) {
    if (home->is_entry || home->IsFusionComputation() || home->callers.size() != 1) break;
    const HloInstruction* caller = home->callers.front();
    if (caller->opcode != Opcode::kCall || home->root == nullptr) break;
    // Only a wrapper: its root is the site (or the loop) itself.
    if (home->root != anchor && home->root->opcode != Opcode::kWhile) break;
    anchor = caller;
    home = caller->parent;
  }
  return home;
}

// The tuple a loop starts from. XLA:CPU wraps a small loop in a call (xla_cpu_small_call) whose
// one parameter is the loop's initial tuple: that is then the call's operand.
const HloInstruction* LoopInitTuple(const HloInstruction* operand) {
  for (int hops = 0; hops < 16 && operand != nullptr; ++hops) {
    if (operand->opcode != Opcode::kParameter) return operand;
    const HloComputation* computation = operand->parent;
    if (computation == nullptr || computation->is_entry || computation->callers.size() != 1) {
      return operand;
    }
    const HloInstruction* caller = computation->callers.front();
    const auto number = static_cast<size_t>(std::max<int64_t>(operand->parameter_number, 0));
    if (caller->opcode != Opcode::kCall || number >= caller->operands.size()) return operand;
    operand = caller->operands[number];
  }
  return operand;
}

std::string_view LastComponent(std::string_view op_name) {
  const size_t slash = op_name.rfind('/');
  return slash == std::string_view::npos ? op_name : op_name.substr(slash + 1);
}

// "jit(_uniform)" -> "uniform"; empty when the component is not a jit(_name).
// "bernoulli" for "jit(_bernoulli)", also under JAX's transformation wrappers
// ("jvp(jit(_bernoulli))", "transpose(jvp(jit(_bernoulli)))") as call sites are named before
// optimizations.
std::string_view JaxRandomFunction(std::string_view component) {
  for (const std::string_view wrapper : {"transpose(", "jvp(", "vmap("}) {
    while (StartsWith(component, wrapper) && !component.empty() && component.back() == ')') {
      component = component.substr(wrapper.size(), component.size() - wrapper.size() - 1);
    }
  }
  if (!StartsWith(component, "jit(_") || component.back() != ')') return {};
  return component.substr(5, component.size() - 6);
}

}  // namespace

std::string RngScope(std::string_view op_name) {
  std::string_view scope = op_name;
  const std::string_view last = LastComponent(scope);
  if (last == "while" || last == "threefry2x32" || last == "rng_bit_generator" ||
      last == "rng_uniform" || last == "random_bits") {
    scope = scope.substr(0, scope.size() - std::min(scope.size(), last.size() + 1));
  }
  // Key derivation keeps its own function in the scope (".../jit(_threefry_fold_in)/...").
  if (scope.find("threefry_split") != std::string_view::npos ||
      scope.find("threefry_fold_in") != std::string_view::npos) {
    return std::string(scope);
  }
  while (true) {
    const size_t slash = scope.rfind('/');
    if (slash == std::string_view::npos) break;
    const std::string_view component = scope.substr(slash + 1);
    if (JaxRandomFunction(component).empty()) break;
    const std::string_view rest = scope.substr(0, slash);
    if (rest.find('/') == std::string_view::npos) break;  // keep one below the outermost jit
    scope = rest;
  }
  return std::string(scope);
}

std::string RngPhase(std::string_view op_name) {
  if (op_name.find("transpose(") != std::string_view::npos) return "backward";
  if (op_name.find("jvp(") != std::string_view::npos) return "forward";
  return "other";
}

namespace {

// What one random site is made of while it is being analysed.
struct SiteWork {
  RngSite site;
  const HloInstruction* anchor = nullptr;
  // Where the site's bits are handed over: the anchor's computation, or the one that calls the
  // wrapper XLA:CPU put the anchor in (HomeComputation).
  const HloComputation* home = nullptr;
  std::vector<const HloInstruction*> counters;  // counter inputs of the hash
  std::vector<const HloInstruction*> keys;      // key inputs
  std::unordered_set<const HloInstruction*> members;
  // Reached through calls from the entry (a module before optimizations): the callee's buffers
  // are shared by every call, so its bytes come from the what-if of its mode instead.
  bool via_calls = false;
  // Members computed before the backward pass starts and read after (key residuals).
  std::set<const HloInstruction*> crossing;
  // A fusion hashing several draws (passes/rng/threefry_hashes.h) is the anchor of a site per hash;
  // each site owns the fusion's outputs computed from its hash.
  bool shares_anchor = false;
  const ir::Shape* lanes = nullptr;  // the hash's lanes, when known
  std::vector<int64_t> outputs;      // shares_anchor: the fusion outputs it owns
  // shares_anchor: per owned output, the fusion parameters it reads.
  std::vector<std::vector<int64_t>> output_parameters;
  // Other fusions holding rounds of the hash (its first rounds; copies of its last rounds).
  std::vector<const HloInstruction*> holders;
  // rng-bit-generator expanded by XLA into Philox arithmetic inside the anchor fusion.
  std::optional<PhiloxExpansion> philox;
};

class RngSiteFinder {
 public:
  RngSiteFinder(ModuleAnalyses& analyses, const RngSiteOptions& options)
      : module_(analyses.module()), analyses_(analyses), options_(options) {}

  RngSiteResult Run();

 private:
  void FindAnchors();
  // `own_op_name`: the hash's op_name when it differs from the anchor's (a fused hash).
  void AddSite(const HloInstruction* anchor, std::string kind, const std::string& context = "",
               const HloInstruction* context_call = nullptr, std::string_view own_op_name = {});
  // A site per draw hashed in a fusion (one draw: the fusion's site, named after its hash).
  void AddDrawSites(const std::vector<const ThreefryDraw*>& draws);
  // Whether `user` reads what the site hands over from `member` (a site sharing its anchor reads
  // only its own outputs of it).
  bool ReadsSiteValue(const SiteWork& work, const HloInstruction* member,
                      const HloInstruction* user) const;
  void KeepConnectedMembers();
  std::vector<std::vector<const HloInstruction*>> CallChains(const HloComputation* computation);
  bool RandomOnly(const HloInstruction* instr, int depth = 0);
  bool RandomOnlyElement(const HloInstruction* tuple, int64_t index, int depth);
  std::string CounterMode(const SiteWork& work);
  int64_t PartitionShards(const SiteWork& work);
  int64_t EvaluatedShards(const SiteWork& work);
  int64_t TableShards(const SiteWork& work);
  // The partition-id or replica-id the values of `key` are computed from, if any: by dataflow,
  // element by element through tuples, calls and loops (a loop carrying the key beside
  // per-device state does not make the key per-device).
  const HloInstruction* PartitionDependency(const DataflowAnalysis& dataflow,
                                            const HloInstruction* key);
  void CollectMembers();
  void DescribeShapes(SiteWork& work);
  void DescribeConsumers(SiteWork& work);
  void MeasureBuffers(const DataflowAnalysis& dataflow, const AliasAnalysis& alias);
  // A collective among a site's instructions is the site's; one elsewhere (XLA combines the
  // collectives of several sites into one variadic op) is shared among the sites whose values its
  // operands hold, in proportion to those operands' bytes.
  void AttachCollectives(const DataflowAnalysis& dataflow);
  void Findings(RngSiteResult& result);
  // False for a fused hash whose fusion also holds the consumer (its output is not random).
  bool BitsLeave(const SiteWork& work) {
    if (work.anchor->opcode != Opcode::kFusion) return true;
    if (!work.shares_anchor) return RandomOnly(work.anchor);
    for (const int64_t output : work.outputs) {
      if (OutputIsRandom(work, output)) return true;
    }
    return false;
  }
  // A site sharing its anchor: whether the fusion output it owns is computed from random-only
  // operands.
  bool OutputIsRandom(const SiteWork& work, int64_t output) {
    for (size_t i = 0; i < work.outputs.size() && i < work.output_parameters.size(); ++i) {
      if (work.outputs[i] != output) continue;
      for (const int64_t p : work.output_parameters[i]) {
        if (p >= 0 && p < static_cast<int64_t>(work.anchor->operands.size()) &&
            !RandomOnly(work.anchor->operands[p])) {
          return false;
        }
      }
      return true;
    }
    return false;
  }
  // Whether the site's values reach nothing but other sites (as their keys) and the module's
  // outputs (the next step's key): a hash that derives keys, whatever its op_name says (JAX's
  // rbg splits its keys with threefry under a bare vmap()).
  bool FeedsOnlyKeys(const SiteWork& work, int self);
  void FindBackwardStarts();
  bool CrossesIntoBackward(const HloInstruction* member, const HloInstruction* user) const;

  const ir::HloModule& module_;
  ModuleAnalyses& analyses_;  // the dataflow and buffers, shared with the other analyses
  const RngSiteOptions& options_;
  std::vector<SiteWork> sites_;
  std::unordered_map<const HloInstruction*, bool> random_only_;
  std::unordered_map<const HloInstruction*, int> site_of_;  // member -> site index
  // The wrapper calls XLA:CPU put sites in (xla_cpu_small_call), to the site each wraps.
  std::unordered_map<const HloInstruction*, int> wrapper_of_;
  std::unordered_map<const HloComputation*, std::vector<const HloInstruction*>> callers_;
  // Fusions that anchor several sites: per output, the owning site (-1: none).
  std::unordered_map<const HloInstruction*, std::vector<int>> shared_anchors_;
  // Scheduled modules: the position (in its computation) of each instruction, and per
  // computation the instruction where its backward pass starts.
  std::unordered_map<const HloInstruction*, int64_t> position_;
  std::unordered_map<const HloComputation*, const HloInstruction*> backward_start_;
  // Dataflow values a site computes (its members' outputs), by value id.
  std::unordered_map<int32_t, int> value_site_;
};

// The backward pass starts at the first instruction of the backward (transpose(jvp(...))) that
// reads, directly or not, a forward-pass result and is not a recomputation of the forward
// (jax.checkpoint's "rematted_computation"): backward work that needs only parameters or keys
// (weight transposes, rematerialized random bits) and remat's recomputed forward may be
// scheduled anywhere before it.
void RngSiteFinder::FindBackwardStarts() {
  if (!module_.is_scheduled) return;
  for (const HloComputation* computation : module_.computations) {
    if (computation->IsFusionComputation()) continue;
    std::unordered_set<const HloInstruction*> after_forward;
    int64_t position = 0;
    const HloInstruction* start = nullptr;
    for (const HloInstruction* instr : computation->instructions) {
      position_[instr] = position++;
      const std::string phase = RngPhase(instr->metadata().op_name);
      bool reads_forward = false;
      for (const HloInstruction* operand : instr->operands) {
        reads_forward |= after_forward.count(operand) != 0;
      }
      if (phase == "forward" || reads_forward) after_forward.insert(instr);
      if (start == nullptr && phase == "backward" && reads_forward && site_of_.count(instr) == 0 &&
          instr->metadata().op_name.find("rematted_computation") == std::string_view::npos) {
        start = instr;
      }
    }
    if (start != nullptr) backward_start_[computation] = start;
  }
}

// Scheduled: the member is computed before its computation's backward pass starts and the user
// reads it after. Otherwise by op_name: a forward member read by a backward user.
bool RngSiteFinder::CrossesIntoBackward(const HloInstruction* member,
                                        const HloInstruction* user) const {
  if (!member->shape.IsArray() || member->shape.ElementCount() <= kKeySizedElements) return false;
  if (module_.is_scheduled) {
    const auto start = backward_start_.find(member->parent);
    if (start == backward_start_.end() || user->parent != member->parent) return false;
    const int64_t boundary = position_.at(start->second);
    return position_.at(member) < boundary && position_.at(user) >= boundary;
  }
  return RngPhase(member->metadata().op_name) == "forward" &&
         RngPhase(user->metadata().op_name) == "backward";
}

// `context` is the op_name of the calls that reach the anchor's computation from the entry
// (modules before optimizations call JAX's functions instead of inlining them); `context_call`
// the innermost of them that carries a source line.
void RngSiteFinder::AddSite(const HloInstruction* anchor, std::string kind,
                            const std::string& context, const HloInstruction* context_call,
                            std::string_view own_op_name) {
  SiteWork work;
  work.anchor = anchor;
  work.home = HomeComputation(anchor);
  work.site.name = std::string(anchor->name);
  work.site.computation = anchor->parent ? std::string(anchor->parent->name) : "";
  work.site.kind = std::move(kind);
  std::string op_name = context;
  const std::string_view anchor_op_name =
      own_op_name.empty() ? anchor->metadata().op_name : own_op_name;
  if (!anchor_op_name.empty()) {
    op_name += (op_name.empty() ? "" : "/") + std::string(anchor_op_name);
  }
  work.site.op_name = ir::CUnescape(op_name);  // the scope below matches the text as written
  // A fused hash is named after the fusion's root (".../jit(_uniform)/add", or the consumer it
  // was fused into): the scope starts above it.
  work.site.scope =
      anchor->opcode == Opcode::kFusion
          ? RngScope(op_name.substr(
                0, op_name.rfind('/') == std::string::npos ? op_name.size() : op_name.rfind('/')))
          : RngScope(op_name);
  work.site.phase = RngPhase(op_name);
  for (const HloInstruction* where : {anchor, context_call}) {
    if (where == nullptr || !work.site.source.empty()) continue;
    std::string_view file;
    int64_t line = 0;
    if (!where->metadata().source_file.empty()) {
      work.site.source = where->metadata().Source();
    } else if (where->metadata().stack_frame_id > 0 &&
               module_.stack_frames.Resolve(where->metadata().stack_frame_id, file, line)) {
      const size_t slash = file.rfind('/');
      work.site.source =
          std::string(slash == std::string_view::npos ? file : file.substr(slash + 1)) + ":" +
          std::to_string(line);
    }
  }
  // The JAX functions that drew the bits, outermost first.
  std::string draws;
  std::string_view rest = op_name;
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    const std::string_view component = rest.substr(0, slash);
    const std::string_view function = JaxRandomFunction(component);
    if (!function.empty()) {
      if (!draws.empty()) draws += "/";
      draws += function;
    }
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  work.site.draws = draws;
  if (op_name.find("threefry_split") != std::string::npos) {
    work.site.purpose = "split";
  } else if (op_name.find("threefry_fold_in") != std::string::npos) {
    work.site.purpose = "fold_in";
  } else if (!draws.empty() ||
             (anchor->opcode != Opcode::kWhile && anchor->opcode != Opcode::kCall)) {
    work.site.purpose = "bits";
  } else {
    work.site.purpose = "key";  // a threefry loop outside any jax.random drawing function
  }
  const HloInstruction* loop_init = anchor->opcode == Opcode::kWhile && !anchor->operands.empty()
                                        ? LoopInitTuple(anchor->operands[0])
                                        : nullptr;
  if (loop_init != nullptr && loop_init->opcode == Opcode::kTuple &&
      loop_init->operands.size() == 8) {
    const auto& init = loop_init->operands;
    work.counters = {init[1], init[2]};
    work.keys = {init[3], init[4], init[5]};
  } else if ((anchor->opcode == Opcode::kCustomCall && anchor->operands.size() >= 4) ||
             (anchor->opcode == Opcode::kCall && anchor->operands.size() == 4 &&
              work.site.kind.rfind("threefry", 0) == 0)) {
    work.keys = {anchor->operands[0], anchor->operands[1]};
    work.counters = {anchor->operands[2], anchor->operands[3]};
  } else if (anchor->opcode == Opcode::kFusion) {
    // Counters are built inside the fusion (or arrive as its operands); the key is the operand of
    // a key's size. partition-id operands offset the counters of this device's slice.
    work.counters = {anchor};
    // The key is what the key schedule's parity word is computed from; without one, the
    // operands of a key's size.
    work.keys = ThreefryKeyOperands(anchor);
    for (const HloInstruction* operand : anchor->operands) {
      if (!work.keys.empty()) break;
      if (IsU32Array(operand->shape) && operand->shape.ElementCount() <= 4 &&
          operand->shape.rank() > 0) {
        work.keys.push_back(operand);
      }
    }
  } else {
    for (const HloInstruction* operand : anchor->operands) work.keys.push_back(operand);
  }
  work.site.dtype = "u32";
  sites_.push_back(std::move(work));
}

void RngSiteFinder::AddDrawSites(const std::vector<const ThreefryDraw*>& draws) {
  const HloInstruction* fusion = draws.front()->anchor;
  if (draws.size() == 1) {
    // The hash's own op_name names the draw; the fusion is named after its root, which may be
    // the consumer fused in.
    AddSite(fusion, "threefry-expanded", "", nullptr, draws[0]->last_rotation->metadata().op_name);
    sites_.back().lanes = draws[0]->lanes;
    sites_.back().holders = draws[0]->other_holders;
    return;
  }
  const HloComputation* fused = fusion->Called("calls");
  const std::vector<std::vector<int64_t>> parameters = RootParameters(fused);
  const int64_t elements =
      fusion->shape.IsTuple() ? static_cast<int64_t>(fusion->shape.tuple_shapes().size()) : 1;
  // An output computed from several draws (bits keyed by a hash fused beside them, or a
  // consumer of two draws fused in) goes to the draw of the widest lanes, then the first.
  std::vector<int> owner(static_cast<size_t>(elements), -1);
  for (size_t h = 0; h < draws.size(); ++h) {
    for (const int64_t output : draws[h]->outputs) {
      if (output < 0 || output >= elements) continue;
      int& best = owner[output];
      if (best < 0 || draws[h]->lanes->ElementCount() > draws[best]->lanes->ElementCount()) {
        best = static_cast<int>(h);
      }
    }
  }
  for (size_t h = 0; h < draws.size(); ++h) {
    AddSite(fusion, "threefry-expanded", "", nullptr, draws[h]->last_rotation->metadata().op_name);
    SiteWork& work = sites_.back();
    work.site.name += ":hash" + std::to_string(h + 1);
    work.shares_anchor = true;
    work.lanes = draws[h]->lanes;
    work.holders = draws[h]->other_holders;
    for (const int64_t output : draws[h]->outputs) {
      if (output < 0 || output >= elements || owner[output] != static_cast<int>(h)) continue;
      work.outputs.push_back(output);
      if (output < static_cast<int64_t>(parameters.size())) {
        work.output_parameters.push_back(parameters[output]);
      }
    }
  }
}

// Key words are unsigned integers; random values used as numbers or masks are not.
bool HoldsOnlyWords(const ir::Shape& shape) {
  if (shape.IsTuple()) {
    for (const ir::Shape& element : shape.tuple_shapes()) {
      if (!HoldsOnlyWords(element)) return false;
    }
    return true;
  }
  return shape.IsArray() && (shape.element_type() == PrimitiveType::kU32 ||
                             shape.element_type() == PrimitiveType::kU64);
}

// Where a site takes its key in: its anchor (a generator's state operand, a fused hash), the
// fusions holding its first rounds, its key inputs, or its loop's initial state.
bool TakesKeysAt(const SiteWork& work, const HloInstruction* instr) {
  if (instr == work.anchor) return true;
  if (std::find(work.holders.begin(), work.holders.end(), instr) != work.holders.end()) {
    return true;
  }
  if (std::find(work.keys.begin(), work.keys.end(), instr) != work.keys.end()) return true;
  return work.anchor->opcode == Opcode::kWhile && !work.anchor->operands.empty() &&
         LoopInitTuple(work.anchor->operands[0]) == instr;
}

bool RngSiteFinder::FeedsOnlyKeys(const SiteWork& work, int self) {
  constexpr size_t kMaxVisits = 4096;
  std::vector<const HloInstruction*> stack;
  std::unordered_set<const HloInstruction*> seen;
  for (const HloInstruction* member : work.members) {
    for (const HloInstruction* user : member->users) {
      if (work.members.count(user) == 0 && ReadsSiteValue(work, member, user)) {
        stack.push_back(user);
      }
    }
  }
  bool keys = false;
  while (!stack.empty()) {
    const HloInstruction* instr = stack.back();
    stack.pop_back();
    if (!seen.insert(instr).second) continue;
    if (seen.size() > kMaxVisits) return false;
    const auto other = site_of_.find(instr);
    if ((other != site_of_.end() && other->second != self &&
         TakesKeysAt(sites_[other->second], instr)) ||
        shared_anchors_.count(instr) != 0) {
      keys = true;
      continue;
    }
    if (work.members.count(instr) != 0) continue;
    // Key schedules are computed from keys alone and stay words (XLA:TPU fuses their adds and
    // regroupings apart from the hash); what also reads data, or turns the words into numbers
    // or masks, uses them as random bits.
    // The entry's result: the words are returned (the next step's key).
    if (instr->is_root && instr->parent == module_.entry && instr->opcode == Opcode::kTuple) {
      continue;
    }
    if (!HoldsOnlyWords(instr->shape) || !RandomOnly(instr)) return false;
    if (instr->is_root && instr->parent == module_.entry) continue;
    if (instr->users.empty()) return false;
    for (const HloInstruction* user : instr->users) stack.push_back(user);
  }
  return keys;
}

bool RngSiteFinder::ReadsSiteValue(const SiteWork& work, const HloInstruction* member,
                                   const HloInstruction* user) const {
  if (!work.shares_anchor || member != work.anchor) return true;
  return user->opcode == Opcode::kGetTupleElement &&
         std::find(work.outputs.begin(), work.outputs.end(), user->tuple_index) !=
             work.outputs.end();
}

// The chains of `call` instructions that reach a computation from the entry, outermost first
// (none for the entry itself, or for a computation reached otherwise). Capped: a module that
// calls one function from thousands of places gets the first kMaxCallChains.
std::vector<std::vector<const HloInstruction*>> RngSiteFinder::CallChains(
    const HloComputation* computation) {
  constexpr size_t kMaxCallChains = 4096;
  // Paths up a call DAG are exponentially many even where few reach the entry: bounded too.
  constexpr int64_t kMaxSteps = int64_t{1} << 20;
  int64_t steps = 0;
  std::vector<std::vector<const HloInstruction*>> chains;
  std::vector<const HloInstruction*> path;
  std::function<void(const HloComputation*)> up = [&](const HloComputation* c) {
    if (chains.size() >= kMaxCallChains || ++steps > kMaxSteps) return;
    if (c == module_.entry) {
      if (!path.empty()) chains.emplace_back(path.rbegin(), path.rend());
      return;
    }
    const auto callers = callers_.find(c);
    if (callers == callers_.end()) return;
    for (const HloInstruction* call : callers->second) {
      path.push_back(call);
      up(call->parent);
      path.pop_back();
    }
  };
  up(computation);
  return chains;
}

// XLA:CPU expands rng-bit-generator into a call to %rng.N returning (state, bits).
bool IsExpandedRbgCall(const HloInstruction* instr) {
  if (instr->opcode != Opcode::kCall) return false;
  const HloComputation* callee = instr->Called("to_apply");
  return callee != nullptr && StartsWith(callee->name, "rng") && instr->shape.IsTuple() &&
         instr->shape.tuple_shapes().size() == 2 &&
         LastComponent(instr->metadata().op_name) == "rng_bit_generator";
}

void RngSiteFinder::FindAnchors() {
  std::set<const HloComputation*> functions;  // JAX's threefry2x32 as a computation
  // XLA:CPU's expansions of rng-bit-generator: their Philox fusions are the call's site.
  std::set<const HloComputation*> rbg_callees;
  for (const HloComputation* computation : module_.computations) {
    if (!ThreefryFunctionKind(computation).empty()) functions.insert(computation);
    for (const HloInstruction* instr : computation->instructions) {
      if (IsExpandedRbgCall(instr)) rbg_callees.insert(instr->Called("to_apply"));
      if (instr->opcode != Opcode::kCall && instr->opcode != Opcode::kWhile &&
          instr->opcode != Opcode::kConditional) {
        continue;
      }
      for (const ir::CalledComputation& called : instr->called_computations()) {
        if (called.computation != nullptr && called.role != "condition") {
          callers_[called.computation].push_back(instr);
        }
      }
    }
  }
  // A site per anchor, and per call chain when the anchor's computation is called (a function
  // JAX did not inline draws bits once per call; a loop body is reached through its while).
  // Scheduled (optimized) modules have their calls inlined and absolute op_names.
  const auto add = [&](const HloInstruction* anchor, const std::string& kind) {
    const std::vector<std::vector<const HloInstruction*>> chains =
        module_.is_scheduled ? std::vector<std::vector<const HloInstruction*>>{}
                             : CallChains(anchor->parent);
    if (chains.empty()) {
      AddSite(anchor, kind);
      return;
    }
    for (const auto& chain : chains) {
      std::string context;
      const HloInstruction* with_source = nullptr;
      for (const HloInstruction* call : chain) {
        if (!call->metadata().op_name.empty()) {
          context += (context.empty() ? "" : "/") + std::string(call->metadata().op_name);
        }
        if (!call->metadata().source_file.empty() || call->metadata().stack_frame_id > 0) {
          with_source = call;
        }
      }
      AddSite(anchor, kind, context, with_source);
      sites_.back().via_calls = true;
    }
  };
  // Unrolled hashes in fusions, by dataflow (passes/rng/threefry_hashes.h).
  const std::vector<ThreefryDraw> draws = FindThreefryDraws(module_);
  std::map<const HloInstruction*, std::vector<const ThreefryDraw*>> draws_by_anchor;
  std::set<const HloInstruction*> holders;
  for (const ThreefryDraw& draw : draws) {
    if (draw.anchor->opcode != Opcode::kFusion) continue;
    draws_by_anchor[draw.anchor].push_back(&draw);
    holders.insert(draw.other_holders.begin(), draw.other_holders.end());
  }
  for (const HloComputation* computation : module_.computations) {
    if (computation->IsFusionComputation() || functions.count(computation) != 0) continue;
    const size_t first_site = sites_.size();
    // Unfused unrolled hashes: elementwise ops whose op_name contains "threefry2x32", grouped by
    // the op_name up to it.
    std::map<std::string, std::pair<int, const HloInstruction*>> unrolled;
    for (const HloInstruction* instr : computation->instructions) {
      switch (instr->opcode) {
        case Opcode::kWhile: {
          const int64_t trips = WhileTripCount(*instr);
          if (trips == options_.rolled_trip_count && IsThreefryLoopState(instr->shape) &&
              ContainsOpcode(instr->Called("body"), Opcode::kShiftLeft)) {
            add(instr, "threefry-rolled");
          }
          break;
        }
        case Opcode::kCustomCall:
          if (instr->custom_call_target().find("threefry2x32") != std::string_view::npos) {
            add(instr, "threefry-custom-call");
          }
          break;
        case Opcode::kRngBitGenerator:
          add(instr, "rng-bit-generator");
          break;
        case Opcode::kRng:
          add(instr, "rng");
          break;
        case Opcode::kCall: {
          const HloComputation* callee = instr->Called("to_apply");
          if (functions.count(callee) != 0) {
            add(instr, ThreefryFunctionKind(callee));
            break;
          }
          if (IsExpandedRbgCall(instr)) add(instr, "rng-bit-generator");
          break;
        }
        case Opcode::kFusion: {
          // XLA:GPU wraps a custom call whose operands it slices in a custom fusion (a
          // dynamic-slice fusion): the fusion is the site, named after the call it runs.
          if (const HloComputation* fused = instr->Called("calls");
              fused != nullptr && fused->root != nullptr &&
              fused->root->opcode == Opcode::kCustomCall &&
              fused->root->custom_call_target().find("threefry2x32") != std::string_view::npos) {
            AddSite(instr, "threefry-custom-call", "", nullptr, fused->root->metadata().op_name);
            break;
          }
          const auto anchored = draws_by_anchor.find(instr);
          const bool chains = !module_.is_scheduled && !CallChains(instr->parent).empty();
          if (anchored != draws_by_anchor.end() && !chains) {
            AddDrawSites(anchored->second);
            break;
          }
          if (holders.count(instr) != 0 && !chains) break;  // rounds of a draw anchored elsewhere
          if (std::optional<PhiloxExpansion> philox = FindPhiloxExpansion(instr->Called("calls"));
              philox && !chains && rbg_callees.count(computation) == 0) {
            AddSite(instr, "rng-bit-generator", "", nullptr, philox->op_name);
            sites_.back().philox = philox;
            break;
          }
          const auto [shifts, amounts] = RotationShifts(instr->Called("calls"));
          if (shifts >= kUnrolledShifts && amounts == 8) add(instr, "threefry-expanded");
          break;
        }
        default: {
          const std::string_view op_name = instr->metadata().op_name;
          const size_t at = op_name.find("threefry2x32");
          if (at != std::string_view::npos && instr->opcode != Opcode::kWhile) {
            auto& group = unrolled[std::string(op_name.substr(0, at + 12))];
            if (instr->opcode == Opcode::kShiftLeft) ++group.first;
            group.second = instr;  // the last one: the hash's final output
          }
          break;
        }
      }
    }
    for (const auto& [prefix, group] : unrolled) {
      if (group.first >= kUnrolledShifts) add(group.second, "threefry-expanded");
    }
    for (size_t i = first_site; i < sites_.size(); ++i) {
      SiteWork& work = sites_[i];
      if (work.site.kind == "rng-bit-generator") {
        work.site.mode = "rbg";
        work.site.algorithm =
            work.philox ? "philox, expanded by XLA into fusion %" + std::string(work.anchor->name)
            : work.anchor->opcode == Opcode::kCall
                ? "expanded: call to %" + std::string(work.anchor->Called("to_apply")->name)
                : std::string(work.anchor->FindAttribute("algorithm"));
      } else if (work.site.kind == "rng") {
        work.site.mode = "unknown";
        work.site.algorithm = std::string(work.anchor->FindAttribute("distribution"));
      }
    }
  }
  std::stable_sort(sites_.begin(), sites_.end(), [](const SiteWork& a, const SiteWork& b) {
    return a.anchor->id < b.anchor->id;
  });
  for (size_t s = 0; s < sites_.size(); ++s) {
    const SiteWork& work = sites_[s];
    if (!work.shares_anchor) continue;
    std::vector<int>& owners = shared_anchors_[work.anchor];
    const size_t elements =
        work.anchor->shape.IsTuple() ? work.anchor->shape.tuple_shapes().size() : size_t{1};
    owners.resize(elements, -1);
    for (const int64_t output : work.outputs) owners[output] = static_cast<int>(s);
  }
}

bool RngSiteFinder::RandomOnlyElement(const HloInstruction* tuple, int64_t index, int depth) {
  if (tuple->opcode == Opcode::kTuple && index >= 0 &&
      index < static_cast<int64_t>(tuple->operands.size())) {
    return RandomOnly(tuple->operands[index], depth + 1);
  }
  return RandomOnly(tuple, depth + 1);
}

// Derived only from keys, counters and constants.
bool RngSiteFinder::RandomOnly(const HloInstruction* instr, int depth) {
  if (depth > kMaxWalkDepth) return false;
  const auto found = random_only_.find(instr);
  if (found != random_only_.end()) return found->second;
  random_only_[instr] = true;  // optimistic on cycles (loop-carried keys)
  bool result = false;
  switch (instr->opcode) {
    case Opcode::kConstant:
    case Opcode::kIota:
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
    case Opcode::kRngGetAndUpdateState:
      result = true;
      break;
    case Opcode::kParameter: {
      const HloComputation* computation = instr->parent;
      if (computation != nullptr && computation->is_entry) {
        // A key: u32 words, at most 4 of them (threefry u32[2], rbg u32[4]).
        result = IsU32Array(instr->shape) && instr->shape.ElementCount() <= 4;
      } else if (computation != nullptr && !computation->callers.empty()) {
        result = true;
        for (const HloInstruction* caller : computation->callers) {
          if (caller->opcode == Opcode::kWhile || caller->opcode == Opcode::kCall) {
            const size_t number =
                static_cast<size_t>(std::max<int64_t>(instr->parameter_number, 0));
            if (number < caller->operands.size()) {
              result &= RandomOnly(caller->operands[number], depth + 1);
            }
          } else {
            result = false;
          }
        }
      }
      break;
    }
    case Opcode::kGetTupleElement: {
      const HloInstruction* operand = instr->operands.empty() ? nullptr : instr->operands[0];
      if (operand == nullptr) break;
      if (operand->opcode == Opcode::kParameter && operand->parent != nullptr &&
          !operand->parent->is_entry && !operand->parent->callers.empty()) {
        result = true;
        for (const HloInstruction* caller : operand->parent->callers) {
          if ((caller->opcode == Opcode::kWhile || caller->opcode == Opcode::kCall) &&
              !caller->operands.empty()) {
            const size_t number =
                caller->opcode == Opcode::kWhile
                    ? 0
                    : static_cast<size_t>(std::max<int64_t>(operand->parameter_number, 0));
            if (number < caller->operands.size()) {
              result &= RandomOnlyElement(caller->operands[number], instr->tuple_index, depth);
            }
          } else {
            result = false;
          }
        }
      } else if (operand->opcode == Opcode::kWhile && !operand->operands.empty()) {
        result = RandomOnlyElement(operand->operands[0], instr->tuple_index, depth);
      } else {
        result = RandomOnlyElement(operand, instr->tuple_index, depth);
      }
      break;
    }
    default:
      if (instr->opcode == Opcode::kCustomCall &&
          instr->custom_call_target().find("threefry") == std::string_view::npos) {
        result = false;
        break;
      }
      result = !instr->operands.empty();
      for (const HloInstruction* operand : instr->operands) {
        if (!result) break;
        result = RandomOnly(operand, depth + 1);
      }
      if (instr->operands.empty() && instr->opcode == Opcode::kFusion) result = true;
      break;
  }
  random_only_[instr] = result;
  return result;
}

// Partitionable counters come from u64 iotas (iota_2x32_shape); replicated ones from a flat
// 32-bit iota split in halves.
std::string RngSiteFinder::CounterMode(const SiteWork& work) {
  bool u64_iota = false;
  bool flat_iota = false;
  bool exchanged = false;
  std::unordered_set<const HloInstruction*> seen;
  std::function<void(const HloInstruction*, int)> walk = [&](const HloInstruction* instr,
                                                             int depth) {
    if (depth > 12 || !seen.insert(instr).second) return;
    if (instr->opcode == Opcode::kCollectivePermute || instr->opcode == Opcode::kAllGather) {
      exchanged = true;
    }
    if (instr->metadata().op_name.find("iota_2x32_shape") != std::string_view::npos)
      u64_iota = true;
    const auto look = [&](const HloInstruction* inner) {
      if (inner->opcode != Opcode::kIota) return;
      if (inner->shape.element_type() == PrimitiveType::kU64) {
        u64_iota = true;
      } else if (inner->shape.rank() == 1) {
        flat_iota = true;
      }
    };
    look(instr);
    if (instr->opcode == Opcode::kFusion) ForEachNested(instr->Called("calls"), look);
    for (const HloInstruction* operand : Producers(instr)) walk(operand, depth + 1);
  };
  for (const HloInstruction* counter : work.counters) walk(counter, 0);
  if (u64_iota) return "partitionable";
  if (flat_iota || exchanged) return "replicated";
  return "unknown";
}

// Shards of a partitionable site: the partition-id offset of its counters, read from a constant
// table indexed by partition-id (distinct values) or partition-id itself (every device).
int64_t RngSiteFinder::PartitionShards(const SiteWork& work) {
  if (const int64_t slices = EvaluatedShards(work); slices > 0) return slices;
  return TableShards(work);
}

// The device-position arithmetic that offsets the counters, evaluated on every device
// (passes/sharding/partition_offsets.h); 0 when there is none or it cannot be evaluated. A key
// derived from the device's position (shard_map) would be counted too, so such sites get 0.
int64_t RngSiteFinder::EvaluatedShards(const SiteWork& work) {
  if (!work.site.key_depends_on_partition) {
    // A fusion builds its counters inside: its operands other than the key carry the offsets.
    std::vector<const HloInstruction*> roots;
    for (const HloInstruction* counter : work.counters) {
      if (counter != work.anchor || counter->opcode != Opcode::kFusion) {
        roots.push_back(counter);
        continue;
      }
      for (const HloInstruction* operand : counter->operands) {
        if (std::find(work.keys.begin(), work.keys.end(), operand) == work.keys.end()) {
          roots.push_back(operand);
        }
      }
    }
    return DistinctDeviceSlices(DeviceOffsets(roots), module_.num_partitions,
                                module_.replica_count);
  }
  return 0;
}

int64_t RngSiteFinder::TableShards(const SiteWork& work) {
  int64_t shards = 1;
  std::unordered_set<const HloInstruction*> seen;
  std::function<void(const HloInstruction*, int)> walk = [&](const HloInstruction* counter,
                                                             int depth) {
    if (depth > 8 || !seen.insert(counter).second) return;
    // Only the instruction that builds the counters from iotas carries the shard offset.
    const bool builds_counters = counter->opcode == Opcode::kIota ||
                                 (counter->opcode == Opcode::kFusion &&
                                  ContainsOpcode(counter->Called("calls"), Opcode::kIota));
    for (const HloInstruction* operand : counter->operands) {
      if (!builds_counters) break;
      if (operand->opcode != Opcode::kPartitionId && operand->opcode != Opcode::kReplicaId) {
        continue;
      }
      bool via_table = false;
      for (const HloInstruction* other : counter->operands) {
        const std::vector<int64_t> table = ArrayConstant(other);
        if (table.size() > 1 && static_cast<int64_t>(table.size()) == module_.num_partitions) {
          via_table = true;
          shards = std::max<int64_t>(
              shards, static_cast<int64_t>(std::set<int64_t>(table.begin(), table.end()).size()));
        }
      }
      if (!via_table) shards = std::max<int64_t>(shards, module_.num_partitions);
    }
    for (const HloInstruction* producer : Producers(counter)) walk(producer, depth + 1);
  };
  for (const HloInstruction* counter : work.counters) walk(counter, 0);
  return shards;
}

const HloInstruction* RngSiteFinder::PartitionDependency(const DataflowAnalysis& dataflow,
                                                         const HloInstruction* key) {
  constexpr size_t kMaxValues = 1 << 16;
  std::vector<int32_t> pending;
  std::unordered_set<int32_t> seen;
  const auto push_slot = [&](int32_t slot) {
    if (slot < 0) return;
    for (int32_t s = slot; s < slot + dataflow.SlotSpan(slot); ++s) {
      for (const int32_t id : dataflow.ValueSet(s)) pending.push_back(id);
    }
  };
  const auto push_element = [&](const HloInstruction* instr, const ShapeIndex& index) {
    push_slot(index.empty() ? dataflow.FirstSlot(instr) : dataflow.SlotAt(instr, index));
  };
  push_slot(dataflow.FirstSlot(key));
  while (!pending.empty()) {
    const int32_t id = pending.back();
    pending.pop_back();
    if (!seen.insert(id).second) continue;
    if (seen.size() > kMaxValues) return nullptr;
    const HloValue& value = dataflow.value(id);
    const HloInstruction* defining = value.instruction;
    if (defining->opcode == Opcode::kPartitionId || defining->opcode == Opcode::kReplicaId) {
      return defining;
    }
    const ShapeIndex index = dataflow.SlotIndex(value.slot);
    if (value.is_phi) {
      // A loop-carried element: what the loop starts with and what its body hands back there.
      const HloInstruction* loop = defining;
      if (loop->opcode == Opcode::kParameter && loop->parent != nullptr) {
        loop = nullptr;
        for (const HloInstruction* caller : defining->parent->callers) {
          if (caller->opcode == Opcode::kWhile) loop = caller;
        }
      }
      if (loop != nullptr && loop->opcode == Opcode::kWhile && !loop->operands.empty()) {
        push_element(loop->operands[0], index);
        const HloComputation* body = loop->Called("body");
        if (body != nullptr && body->root != nullptr) push_element(body->root, index);
      } else {
        for (const HloInstruction* operand : defining->operands) push_element(operand, {});
      }
      continue;
    }
    if (defining->opcode == Opcode::kFusion) {
      const HloInstruction* inner = nullptr;
      ForEachNested(defining->Called("calls"), [&](const HloInstruction* i) {
        if (inner == nullptr &&
            (i->opcode == Opcode::kPartitionId || i->opcode == Opcode::kReplicaId)) {
          inner = i;
        }
      });
      if (inner != nullptr) return inner;
    }
    if (defining->opcode == Opcode::kParameter) continue;  // the entry's: an input
    if (!index.empty() && defining->opcode == Opcode::kCopy && !defining->operands.empty()) {
      push_element(defining->operands[0], index);  // a copied element holds that element
      continue;
    }
    for (const HloInstruction* operand : defining->operands) push_element(operand, {});
  }
  return nullptr;
}

// A site whose scope is the whole program (a key split at the top level,
// `jit(train_step)/rng_bit_generator`) keeps only the members the dataflow joins to its anchor
// through other members (its counters, the generator state, the bits): its scope alone would
// take every random-only instruction of the module.
void RngSiteFinder::KeepConnectedMembers() {
  std::vector<std::vector<const HloInstruction*>> by_site(sites_.size());
  for (const auto& [instr, s] : site_of_) by_site[static_cast<size_t>(s)].push_back(instr);
  for (size_t s = 0; s < sites_.size(); ++s) {
    // A scope below the program's root already narrows the members to one JAX call site.
    if (sites_[s].site.scope.find('/') != std::string::npos) continue;
    std::unordered_set<const HloInstruction*> reached;
    std::vector<const HloInstruction*> stack = {sites_[s].anchor};
    for (const HloInstruction* holder : sites_[s].holders) stack.push_back(holder);
    const auto in_site = [&](const HloInstruction* instr) {
      const auto it = site_of_.find(instr);
      return it != site_of_.end() && it->second == static_cast<int>(s);
    };
    while (!stack.empty()) {
      const HloInstruction* at = stack.back();
      stack.pop_back();
      if (!reached.insert(at).second) continue;
      for (const HloInstruction* next : at->operands) {
        if (in_site(next)) stack.push_back(next);
      }
      for (const HloInstruction* next : at->users) {
        if (in_site(next)) stack.push_back(next);
      }
    }
    for (const HloInstruction* instr : by_site[s]) {
      if (reached.count(instr) == 0) site_of_.erase(instr);
    }
  }
}

void RngSiteFinder::CollectMembers() {
  // Members: random-only instructions of the anchor's computation inside its scope; each goes to
  // the site with the longest scope. The anchor's loop body and condition belong to it whole.
  std::unordered_map<const HloComputation*, std::vector<int>> by_computation;
  for (size_t s = 0; s < sites_.size(); ++s) {
    by_computation[sites_[s].home].push_back(static_cast<int>(s));
    if (!sites_[s].shares_anchor) site_of_[sites_[s].anchor] = static_cast<int>(s);
  }
  // The elements taken out of a fusion that hashes several draws belong to the hash they come
  // from.
  for (const auto& [fusion, owners] : shared_anchors_) {
    for (const HloInstruction* user : fusion->users) {
      if (user->opcode != Opcode::kGetTupleElement || user->tuple_index < 0 ||
          user->tuple_index >= static_cast<int64_t>(owners.size()) ||
          owners[user->tuple_index] < 0) {
        continue;
      }
      site_of_.emplace(user, owners[user->tuple_index]);
    }
  }
  for (const auto& [computation, indices] : by_computation) {
    // Scope -> the first site with it; an instruction goes to the site of its longest op_name
    // prefix (at a '/') that is a scope.
    std::unordered_map<std::string_view, int> site_of_scope;
    for (const int s : indices) {
      const std::string& scope = sites_[s].site.scope;
      if (!scope.empty()) site_of_scope.emplace(scope, s);
    }
    if (site_of_scope.empty()) continue;
    for (const HloInstruction* instr : computation->instructions) {
      if (site_of_.count(instr) != 0 || shared_anchors_.count(instr) != 0) continue;
      const std::string_view op_name = instr->metadata().op_name;
      int best = -1;
      for (size_t length = op_name.size(); length > 0 && best < 0;) {
        const auto found = site_of_scope.find(op_name.substr(0, length));
        if (found != site_of_scope.end()) best = found->second;
        const size_t slash = op_name.rfind('/', length - 1);
        length = slash == std::string_view::npos ? 0 : slash;
      }
      if (best < 0 || !RandomOnly(instr)) continue;
      site_of_[instr] = best;
    }
  }
  KeepConnectedMembers();
  for (size_t s = 0; s < sites_.size(); ++s) {
    const HloInstruction* anchor = sites_[s].anchor;
    if (anchor->opcode == Opcode::kWhile && !anchor->operands.empty()) {
      const HloInstruction* init = LoopInitTuple(anchor->operands[0]);
      if (init != nullptr && init->opcode == Opcode::kTuple) {
        site_of_.emplace(init, static_cast<int>(s));
      }
    }
    // Fusions computing the hash's first rounds belong to it; copies of its last rounds fused
    // into consumers are consumers.
    for (const HloInstruction* holder : sites_[s].holders) {
      if (shared_anchors_.count(holder) == 0 && RandomOnly(holder)) {
        site_of_.emplace(holder, static_cast<int>(s));
      }
    }
    // The wrapper calls around the anchor, and what they compute, belong to the site.
    for (const HloComputation* c = anchor->parent; c != nullptr && c != sites_[s].home;) {
      if (c->callers.size() != 1) break;
      const HloInstruction* caller = c->callers.front();
      site_of_.emplace(caller, static_cast<int>(s));
      wrapper_of_.emplace(caller, static_cast<int>(s));
      ForEachNested(c, [&](const HloInstruction* instr) {
        if (instr->parent != nullptr && !instr->parent->IsFusionComputation()) {
          site_of_.emplace(instr, static_cast<int>(s));
        }
      });
      c = caller->parent;
    }
    for (const ir::CalledComputation& called : anchor->called_computations()) {
      if (called.computation == nullptr || called.computation->IsFusionComputation()) continue;
      ForEachNested(called.computation, [&](const HloInstruction* instr) {
        if (instr->parent != nullptr && !instr->parent->IsFusionComputation()) {
          site_of_.emplace(instr, static_cast<int>(s));
        }
      });
    }
  }
  // An element taken out of a wrapper call's result (a compact get-tuple-element, without
  // metadata of its own) belongs to the wrapped site.
  for (const auto& [computation, indices] : by_computation) {
    for (const HloInstruction* instr : computation->instructions) {
      if (instr->opcode != Opcode::kGetTupleElement || instr->operands.empty() ||
          site_of_.count(instr) != 0) {
        continue;
      }
      const auto owner = wrapper_of_.find(instr->operands[0]);
      if (owner != wrapper_of_.end()) site_of_.emplace(instr, owner->second);
    }
  }
  for (const auto& [instr, s] : site_of_) sites_[s].members.insert(instr);
  for (SiteWork& work : sites_) {
    if (work.shares_anchor) work.members.insert(work.anchor);
  }
  for (SiteWork& work : sites_) {
    work.site.instruction_count = static_cast<int64_t>(work.members.size());
  }
}

void RngSiteFinder::DescribeShapes(SiteWork& work) {
  RngSite& site = work.site;
  const HloInstruction* anchor = work.anchor;
  // The random tensor: the hash outputs handed to consumers; when the site hands over more
  // elements than the consumer produces (the global bits of replicated mode or rbg, sliced by
  // the consumer), the consumer's shape.
  const ir::Shape* tensor = nullptr;
  int64_t largest = 0;
  int64_t gathered = 0;  // elements all-gathered (both halves of replicated mode's hash outputs)
  for (const HloInstruction* member : work.members) {
    if (member->parent != work.home) continue;
    if (IsU32Array(member->shape)) largest = std::max(largest, member->shape.ElementCount());
    if (member->opcode == Opcode::kAllGather && IsU32Array(member->shape)) {
      gathered = SaturatingAdd(gathered, member->shape.ElementCount());
    }
    for (const HloInstruction* user : member->users) {
      if (work.members.count(user) != 0 || !user->shape.IsArray()) continue;
      if (!ReadsSiteValue(work, member, user)) continue;
      if (!member->shape.IsArray() || member->shape.ElementCount() < 2) continue;
      const ir::Shape* candidate = member->shape.ElementCount() > user->shape.ElementCount()
                                       ? &user->shape.get()
                                       : &member->shape.get();
      if (tensor == nullptr || candidate->ElementCount() > tensor->ElementCount()) {
        tensor = candidate;
      }
    }
  }
  // A hash fused with its consumer: the bits never leave the fusion; their shape is the lanes'.
  if (anchor->opcode == Opcode::kFusion && !BitsLeave(work)) {
    tensor = work.lanes != nullptr ? work.lanes : HashLaneShape(anchor->Called("calls"));
  }
  if (tensor == nullptr && anchor->shape.IsTuple() && anchor->shape.tuple_shapes().size() >= 2) {
    tensor = &anchor->shape.tuple_shapes()[1];
  }
  if (tensor == nullptr && anchor->shape.IsArray()) tensor = &anchor->shape.get();
  if (tensor != nullptr) {
    site.shape = tensor->dims();
    site.local_elements = tensor->ElementCount();
    if (anchor->opcode == Opcode::kRng || anchor->opcode == Opcode::kCustomCall) {
      site.dtype = std::string(ir::PrimitiveTypeName(tensor->element_type()));
    }
  }
  if (site.mode.empty()) site.mode = CounterMode(work);
  if (site.purpose != "bits" && site.mode == "replicated" && work.counters.size() == 2 &&
      work.counters[0]->opcode == Opcode::kConstant) {
    site.mode = "unknown";
  }
  site.global_elements = site.local_elements;
  if (site.mode == "partitionable") {
    site.shards = PartitionShards(work);
    site.global_elements = ir::SaturatingMul(site.local_elements, site.shards);
  } else if (site.mode == "replicated" || site.mode == "rbg") {
    // Replicated mode hashes the flat counters split in halves: each pair of lanes makes two
    // values, so a device's bits are twice its lanes. Unrolled (GPU/TPU), XLA partitions the
    // lanes like any elementwise op and offsets each device's counters.
    const int64_t slices = site.kind == "threefry-expanded" ? EvaluatedShards(work) : 0;
    if (site.mode == "replicated" && work.lanes != nullptr &&
        site.local_elements == work.lanes->ElementCount()) {
      site.local_elements = ir::SaturatingMul(site.local_elements, 2);
      site.shape = {site.local_elements};
    }
    if (slices > 1) {
      site.shards = slices;
      site.global_elements = ir::SaturatingMul(site.local_elements, slices);
    } else {
      site.global_elements = std::max({site.local_elements, largest, gathered});
      site.shards = site.local_elements > 0 ? site.global_elements / site.local_elements : 1;
    }
  }
  // Expanded Philox: every device computes the global words and keeps its slice.
  if (work.philox) {
    site.dtype = "u32";
    site.local_elements = work.philox->kept_words;
    site.global_elements = work.philox->generated_words;
    site.shape = work.philox->kept_shape != nullptr ? work.philox->kept_shape->dims()
                                                    : std::vector<int64_t>{site.global_elements};
    site.shards = site.local_elements > 0 ? site.global_elements / site.local_elements : 1;
  }
}

namespace {

bool IsMovingCollective(Opcode opcode) {
  return opcode == Opcode::kAllGather || opcode == Opcode::kCollectivePermute ||
         opcode == Opcode::kAllToAll;
}

bool IsCollectiveStart(const HloInstruction& instr) {
  if (instr.opcode == Opcode::kAllGatherStart || instr.opcode == Opcode::kCollectivePermuteStart) {
    return true;
  }
  // An async pair wrapping an all-gather, collective-permute or all-to-all.
  const HloComputation* wrapped =
      instr.opcode == Opcode::kAsyncStart ? instr.Called("calls") : nullptr;
  return wrapped != nullptr && wrapped->root != nullptr &&
         IsMovingCollective(wrapped->root->opcode);
}

const HloInstruction* DoneOf(const HloInstruction& start) {
  for (const HloInstruction* user : start.users) {
    if (user->opcode == Opcode::kAllGatherDone || user->opcode == Opcode::kCollectivePermuteDone ||
        user->opcode == Opcode::kAsyncDone) {
      return user;
    }
  }
  return nullptr;
}

// A fusion that only moves data (slices, bitcasts, concatenations of its parameters).
bool MovesDataOnly(const HloInstruction& instr) {
  if (instr.opcode != Opcode::kFusion) return false;
  const HloComputation* fused = instr.Called("calls");
  if (fused == nullptr) return false;
  for (const HloInstruction* i : fused->instructions) {
    switch (i->opcode) {
      case Opcode::kParameter:
      case Opcode::kSlice:
      case Opcode::kDynamicSlice:
      case Opcode::kBitcast:
      case Opcode::kReshape:
      case Opcode::kCopy:
      case Opcode::kConcatenate:
      case Opcode::kConstant:
        break;
      default:
        return false;
    }
  }
  return true;
}

// Where the random values a collective moves are read: the users of the part of its result
// that holds operand `operand` (a combined collective gathers several sites' values, one tuple
// element each), through its done, get-tuple-elements, bitcasts, copies and data-moving fusions.
void ReadersPastCollective(const HloInstruction& collective, int64_t operand,
                           std::vector<const HloInstruction*>& out) {
  const HloInstruction* result = &collective;
  if (!IsMovingCollective(collective.opcode)) result = DoneOf(collective);
  if (result == nullptr) return;
  const bool per_operand = collective.operands.size() > 1 && result->shape.IsTuple();
  std::vector<const HloInstruction*> frontier;
  for (const HloInstruction* user : result->users) {
    if (!per_operand) {
      frontier.push_back(user);
    } else if (user->opcode == Opcode::kGetTupleElement && user->tuple_index == operand) {
      frontier.push_back(user);
    }
  }
  std::set<const HloInstruction*> visited;
  while (!frontier.empty()) {
    const HloInstruction* at = frontier.back();
    frontier.pop_back();
    if (!visited.insert(at).second || visited.size() > 4096) continue;
    const bool pass = at->opcode == Opcode::kGetTupleElement || at->opcode == Opcode::kBitcast ||
                      at->opcode == Opcode::kCopy || at->opcode == Opcode::kReshape ||
                      MovesDataOnly(*at);
    if (!pass) {
      out.push_back(at);
      continue;
    }
    for (const HloInstruction* user : at->users) frontier.push_back(user);
  }
}

// A consumer that computes the dropout mask (a pred array) for a later instruction to select
// with: the dropout ends there.
bool SelectsWithMask(const HloInstruction& mask) {
  if (!mask.shape.IsArray() || mask.shape.element_type() != PrimitiveType::kPred) return false;
  for (const HloInstruction* user : mask.users) {
    bool select = user->opcode == Opcode::kSelect;
    if (user->opcode == Opcode::kFusion) {
      ForEachNested(user->Called("calls"),
                    [&](const HloInstruction* i) { select |= i->opcode == Opcode::kSelect; });
    }
    if (select) return true;
  }
  return false;
}

}  // namespace

void RngSiteFinder::DescribeConsumers(SiteWork& work) {
  std::set<std::string> seen;
  std::set<const HloInstruction*> consumer_set;
  std::set<const HloInstruction*>& crossing = work.crossing;
  for (const HloInstruction* member : work.members) {
    // The readers of the member's values, with the collective they came through (replicated
    // threefry gathers or exchanges hash outputs before the dropout reads them).
    std::vector<std::pair<const HloInstruction*, const HloInstruction*>> readers;
    for (const HloInstruction* user : member->users) {
      if (work.members.count(user) != 0 || !ReadsSiteValue(work, member, user)) continue;
      if (!IsMovingCollective(user->opcode) && !IsCollectiveStart(*user)) {
        readers.emplace_back(user, nullptr);
        continue;
      }
      std::vector<const HloInstruction*> past;
      for (size_t k = 0; k < user->operands.size(); ++k) {
        if (user->operands[k] == member) {
          ReadersPastCollective(*user, static_cast<int64_t>(k), past);
        }
      }
      if (past.empty()) readers.emplace_back(user, nullptr);
      for (const HloInstruction* reader : past) readers.emplace_back(reader, user);
    }
    for (const auto& [user, via] : readers) {
      bool select = false;
      bool compare = false;
      bool log = false;
      const auto look = [&](const HloInstruction* i) {
        select |= i->opcode == Opcode::kSelect;
        compare |= i->opcode == Opcode::kCompare;
        log |= i->opcode == Opcode::kLog || i->opcode == Opcode::kErf || i->opcode == Opcode::kSqrt;
      };
      look(user);
      if (user->opcode == Opcode::kFusion) ForEachNested(user->Called("calls"), look);
      // XLA may fuse the bernoulli's compare into the hash: the member hands over the mask, and
      // a consumer selecting with it completes the dropout.
      bool mask_in_member = false;
      if (member->opcode == Opcode::kFusion && member->shape.IsArray() &&
          member->shape.element_type() == PrimitiveType::kPred) {
        ForEachNested(member->Called("calls"), [&](const HloInstruction* i) {
          mask_in_member |= i->opcode == Opcode::kCompare;
        });
      }
      if (user->opcode != Opcode::kTuple && user->opcode != Opcode::kWhile) {
        consumer_set.insert(user);
        // The member's own buffer is held until its direct reader (a collective's copy is a
        // buffer of its own).
        const HloInstruction* direct = via != nullptr ? via : user;
        if ((member != work.anchor || BitsLeave(work)) && CrossesIntoBackward(member, direct)) {
          crossing.insert(member);
        }
      }
      std::string what;
      const auto other = site_of_.find(user);
      if (other != site_of_.end()) {
        what = "key of " + sites_[other->second].site.name;
      } else if (shared_anchors_.count(user) != 0) {
        what = "key of " + std::string(user->name);
      } else if ((select && (compare || mask_in_member)) || (compare && SelectsWithMask(*user))) {
        what = "dropout (mask and select)";
      } else if (compare || mask_in_member) {
        what = "mask (compare)";
      } else if (log) {
        what = "normal";
      } else if (user->opcode == Opcode::kTuple || user->opcode == Opcode::kWhile) {
        what = "loop state";
      } else {
        what = work.site.draws.empty() ? "bits" : work.site.draws;
      }
      what +=
          " in " + std::string(user->name) + " (" + RngPhase(user->metadata().op_name) +
          (via != nullptr ? ", through " + std::string(via->name) : "") +
          (mask_in_member && what.rfind("key of", 0) != 0 ? ", mask computed with the hash)" : ")");
      if (seen.insert(what).second) work.site.consumers.push_back(what);
    }
  }
  // A hash fused with its consumer: the consumer is the fusion itself.
  if (work.anchor->opcode == Opcode::kFusion && !BitsLeave(work)) {
    bool select = false;
    bool compare = false;
    ForEachNested(work.anchor->Called("calls"), [&](const HloInstruction* i) {
      select |= i->opcode == Opcode::kSelect;
      compare |= i->opcode == Opcode::kCompare;
    });
    const std::string what = select && compare ? "dropout (mask and select)"
                             : compare         ? "mask (compare)"
                                       : (work.site.draws.empty() ? "bits" : work.site.draws);
    const std::string consumer = what + " in " + std::string(work.anchor->name) + " (" +
                                 work.site.phase + ", fused with the hash)";
    if (seen.insert(consumer).second) work.site.consumers.push_back(consumer);
    consumer_set.insert(work.anchor);
  }
  std::sort(work.site.consumers.begin(), work.site.consumers.end());
  work.site.consumer_count = static_cast<int64_t>(consumer_set.size());
}

std::string BufferRole(const HloInstruction* instr, const HloInstruction* anchor,
                       const HloComputation* home) {
  if (instr->parent != home) return "loop temporaries (hash state copies)";
  switch (instr->opcode) {
    case Opcode::kAllGather:
      return "all-gathered hash outputs";
    case Opcode::kCollectivePermute:
      return "exchanged counters";
    case Opcode::kConcatenate:
      return "bits (concatenated hash outputs)";
    case Opcode::kCustomCall:
    case Opcode::kCall:
      return "hash outputs / bits";
    default:
      break;
  }
  if (instr->shape.IsArray() && instr->shape.element_type() == PrimitiveType::kPred) return "mask";
  const HloInstruction* init = anchor->opcode == Opcode::kWhile && !anchor->operands.empty()
                                   ? LoopInitTuple(anchor->operands[0])
                                   : nullptr;
  for (const HloInstruction* user : instr->users) {
    if (user->opcode != Opcode::kTuple) continue;
    if (user == init) return "counters (loop state: then hash outputs)";
    for (const HloInstruction* tuple_user : user->users) {
      if (tuple_user == anchor) return "counters (loop state: then hash outputs)";
    }
  }
  if (instr->metadata().op_name.find("iota") != std::string_view::npos ||
      instr->metadata().op_name.find("split") != std::string_view::npos) {
    return "counters";
  }
  return "derived";
}

void RngSiteFinder::MeasureBuffers(const DataflowAnalysis& dataflow, const AliasAnalysis& alias) {
  // buffer id -> (site, first member value)
  std::map<int32_t, std::pair<int, int32_t>> owner;
  std::set<int32_t> foreign;  // buffers that also hold values defined outside any site
  for (const HloValue& value : dataflow.values()) {
    const int32_t buffer = alias.BufferIdOf(value.id);
    int site = -1;
    const auto shared = shared_anchors_.find(value.instruction);
    if (shared != shared_anchors_.end()) {
      // An output of a fusion hashing several draws: the site of the hash it comes from, when
      // that output is random (not a consumer fused in).
      const ShapeIndex index = dataflow.SlotIndex(value.slot);
      if (index.empty()) continue;  // the tuple of outputs
      if (index[0] >= 0 && index[0] < static_cast<int64_t>(shared->second.size())) {
        site = shared->second[index[0]];
      }
      if (site >= 0 && !OutputIsRandom(sites_[site], index[0])) site = -1;
    } else {
      const auto member = site_of_.find(value.instruction);
      if (member != site_of_.end()) site = member->second;
    }
    if (site < 0) {
      foreign.insert(buffer);
      continue;
    }
    if (value.instruction->opcode == Opcode::kConstant) continue;  // not a temp buffer in XLA
    // The device's position offsets the counters but is no value of the random-number site.
    if (value.instruction->opcode == Opcode::kPartitionId ||
        value.instruction->opcode == Opcode::kReplicaId) {
      continue;
    }
    // The output of a hash fused with its consumer is the consumer's, not random bits.
    if (value.instruction == sites_[site].anchor && !sites_[site].shares_anchor &&
        !BitsLeave(sites_[site])) {
      continue;
    }
    value_site_[value.id] = site;
    // Name the buffer after a value in the anchor's computation when it has one (the counters
    // a loop starts from), else after its first value.
    const auto known = owner.find(buffer);
    if (known == owner.end()) {
      owner[buffer] = {site, value.id};
    } else if (value.instruction->parent == sites_[site].home &&
               dataflow.value(known->second.second).instruction->parent != sites_[site].home &&
               !value.is_phi) {
      known->second.second = value.id;
    }
  }
  // Buffers holding what a crossing member reads out (a loop's result is its state buffer).
  std::set<int32_t> held;
  for (const SiteWork& work : sites_) {
    for (const HloInstruction* member : work.crossing) {
      const int32_t slot = dataflow.FirstSlot(member);
      if (slot < 0) continue;
      for (int32_t id : dataflow.ValueSet(slot)) held.insert(alias.BufferIdOf(id));
    }
  }
  for (const auto& [buffer, who] : owner) {
    if (foreign.count(buffer) != 0) continue;
    const HloValue& value = dataflow.value(who.second);
    const ir::Shape& shape = dataflow.SlotShape(value.slot);
    if (!shape.IsArray()) continue;
    if (alias.buffers()[buffer].live_out) continue;
    SiteWork& work = sites_[who.first];
    RngSiteBuffer out;
    out.value = dataflow.ValueName(value);
    out.opcode = std::string(value.instruction->opcode_name());
    out.shape = ShapeText(shape);
    out.op_name = ir::CUnescape(value.instruction->metadata().op_name);
    if (out.op_name.empty()) out.op_name = work.site.op_name;  // loop-body copies carry none
    out.bytes = shape.ByteSize();
    out.role = BufferRole(value.instruction, work.anchor, work.home);
    for (int32_t id : alias.buffers()[buffer].values) {
      out.values.push_back(dataflow.ValueName(dataflow.value(id)));
    }
    out.held_across = held.count(buffer) != 0;
    work.site.materialized_bytes = SaturatingAdd(work.site.materialized_bytes, out.bytes);
    if (out.role.rfind("counters", 0) == 0 || out.role.rfind("loop", 0) == 0 ||
        out.role.rfind("exchanged", 0) == 0) {
      work.site.counter_bytes = SaturatingAdd(work.site.counter_bytes, out.bytes);
    } else {
      work.site.bits_bytes = SaturatingAdd(work.site.bits_bytes, out.bytes);
    }
    work.site.buffers.push_back(std::move(out));
  }
  for (SiteWork& work : sites_) {
    std::stable_sort(
        work.site.buffers.begin(), work.site.buffers.end(),
        [](const RngSiteBuffer& a, const RngSiteBuffer& b) { return a.bytes > b.bytes; });
  }
}

void RngSiteFinder::AttachCollectives(const DataflowAnalysis& dataflow) {
  CollectiveResult owned;
  const CollectiveResult* collectives = options_.collectives;
  if (collectives == nullptr) {
    owned = AnalyzeCollectives(module_);
    collectives = &owned;
  }
  std::map<std::pair<std::string_view, std::string_view>, const HloInstruction*> by_name;
  for (const HloComputation* computation : module_.computations) {
    for (const HloInstruction* instr : computation->instructions) {
      by_name[{computation->name, instr->name}] = instr;
    }
  }
  const auto add = [&](int s, const CollectiveOp& op, int64_t operands, int64_t bytes,
                       int64_t wire) {
    RngSite& site = sites_[s].site;
    RngSiteCollective out;
    out.instruction = op.instruction;
    out.kind = op.kind;
    out.operands = operands;
    out.operand_count = std::max<int64_t>(op.operand_count, 1);
    out.bytes = bytes;
    out.wire_bytes_per_device = wire;
    site.wire_bytes_per_device = SaturatingAdd(site.wire_bytes_per_device, wire);
    site.collectives.push_back(std::move(out));
  };
  for (const CollectiveOp& op : collectives->ops) {
    const auto found = by_name.find({op.computation, op.instruction});
    if (found == by_name.end()) continue;
    const HloInstruction* instr = found->second;
    const int64_t wire = ir::SaturatingMul(op.wire_bytes_per_device, op.loop_multiplier);
    const auto member = site_of_.find(instr);
    if (member != site_of_.end()) {
      add(member->second, op, std::max<int64_t>(op.operand_count, 1), op.bytes, wire);
      continue;
    }
    // Per site: the operands holding its values and their bytes (an operand holding the values
    // of several sites counts for each, split evenly).
    std::map<int, std::pair<int64_t, long double>> share;
    long double total = 0;
    for (const HloInstruction* operand : instr->operands) {
      const int64_t bytes = operand->shape.IsArray() ? operand->shape.ByteSize() : 0;
      total += static_cast<long double>(bytes);
      const int32_t first = dataflow.FirstSlot(operand);
      if (first < 0) continue;
      std::set<int> holders;
      for (int32_t slot = first; slot < first + dataflow.SlotSpan(first); ++slot) {
        for (const int32_t id : dataflow.ValueSet(slot)) {
          const auto held = value_site_.find(id);
          if (held != value_site_.end()) holders.insert(held->second);
        }
      }
      for (const int s : holders) {
        share[s].first += 1;
        share[s].second += static_cast<long double>(bytes) / holders.size();
      }
    }
    if (share.empty() || total <= 0) continue;
    for (const auto& [s, part] : share) {
      const long double fraction = std::min<long double>(part.second / total, 1);
      add(s, op, part.first, static_cast<int64_t>(fraction * op.bytes + 0.5L),
          static_cast<int64_t>(fraction * wire + 0.5L));
    }
  }
}

void RngSiteFinder::Findings(RngSiteResult& result) {
  for (const SiteWork& work : sites_) {
    const RngSite& site = work.site;
    if (site.key_depends_on_partition && site.purpose == "bits") {
      RngFinding f;
      f.kind = FindingKind::kRngDependsOnPartition;
      f.severity = "warning";
      f.site = site.name;
      f.op_name = site.op_name;
      f.source = site.source;
      f.message = "the key of " + site.name + " is derived from " + site.key_dependency +
                  " (the device's position in the mesh, e.g. fold_in(key, axis_index) inside "
                  "shard_map): each device draws its own independent noise, so the bits change "
                  "with the number of devices and the batch split; a key shared by all devices "
                  "(partitionable or replicated threefry) gives the same bits on any mesh";
      result.findings.push_back(std::move(f));
    }
    std::string held_values;
    RngFinding residual;
    for (const RngSiteBuffer& buffer : site.buffers) {
      if (!buffer.held_across) continue;
      residual.bytes = SaturatingAdd(residual.bytes, buffer.bytes);
      residual.values.push_back(buffer.value);
      held_values += (held_values.empty() ? "" : ", ") + buffer.value + " " + buffer.shape;
    }
    if (!residual.values.empty()) {
      RngFinding& f = residual;
      f.kind = FindingKind::kRngKeyResidual;
      f.severity = "warning";
      // Until the memory what-if (rng_remat_saving.h) says how much of it is live at the peak.
      f.saving_bytes = f.bytes;
      f.site = site.name;
      f.op_name = site.op_name;
      f.source = site.source;
      f.message = "random values computed from the key alone before the backward pass starts (" +
                  held_values +
                  ") stay live until the backward pass reads them; recomputing them from the key "
                  "where the backward reads them (remat of the dropout that XLA does not hoist, "
                  "or a checkpoint policy that saves no random values) frees them across the "
                  "forward/backward boundary";
      result.findings.push_back(std::move(f));
    }
    if (site.mode == "replicated" && site.wire_bytes_per_device > 0) {
      RngFinding f;
      f.kind = FindingKind::kRngReplicatedCollectives;
      f.severity = "warning";
      f.bytes = site.wire_bytes_per_device;
      f.saving_bytes =
          ir::SaturatingAdd(site.materialized_bytes, -site.whatif.partitionable.memory_bytes);
      f.site = site.name;
      f.op_name = site.op_name;
      f.source = site.source;
      f.message = "replicated threefry (jax_threefry_partitionable=False): " +
                  std::to_string(site.collectives.size()) + " collectives send " +
                  std::to_string(site.wire_bytes_per_device) +
                  " bytes per device per step for these bits; partitionable mode sends none";
      result.findings.push_back(std::move(f));
    }
  }
}

RngSiteResult RngSiteFinder::Run() {
  RngSiteResult result;
  result.num_partitions = ir::DeviceCount(module_);  // devices: replicas x partitions
  result.partitioned = !IsUnpartitioned(module_, options_.stage);
  if (!result.partitioned) {
    result.notes.push_back(
        "module not partitioned yet (before optimizations): shapes and bytes are global, not per "
        "device");
  }
  FindAnchors();
  CollectMembers();
  FindBackwardStarts();
  const DataflowAnalysis& dataflow = analyses_.Dataflow();
  for (SiteWork& work : sites_) {
    for (const HloInstruction* key : work.keys) {
      if (const HloInstruction* hit = PartitionDependency(dataflow, key)) {
        work.site.key_depends_on_partition = true;
        work.site.key_dependency = std::string(hit->name);
        break;
      }
    }
    DescribeShapes(work);
    DescribeConsumers(work);
  }
  for (size_t s = 0; s < sites_.size(); ++s) {
    SiteWork& work = sites_[s];
    // unsafe_rbg splits its keys with rng-bit-generator itself.
    if (work.site.purpose == "bits" &&
        (work.site.kind.rfind("threefry", 0) == 0 || work.site.kind == "rng-bit-generator") &&
        FeedsOnlyKeys(work, static_cast<int>(s))) {
      work.site.purpose = "split";
    }
  }
  MeasureBuffers(dataflow, analyses_.Alias());
  AttachCollectives(dataflow);
  bool fused_sites = false;
  for (SiteWork& work : sites_) {
    RngSite& site = work.site;
    if (site.purpose == "bits") {
      RngGeometry geometry;
      geometry.local_elements = site.local_elements;
      geometry.global_elements = site.global_elements;
      geometry.devices = site.shards;
      geometry.consumers = site.consumer_count;
      site.whatif = PredictRngCosts(geometry);
      // With the rounds unrolled (JAX's GPU/TPU lowering) XLA fuses a partitionable hash into
      // its consumers: partitionable mode materializes nothing (testdata/gpu_lowered, compiled
      // by XLA:CPU). The rolled loop of XLA:CPU keeps the formula of rng_whatif.h.
      if (site.kind == "threefry-expanded" &&
          (site.mode == "replicated" || (site.mode == "partitionable" && !BitsLeave(work)))) {
        site.whatif.partitionable = site.whatif.fused;
        fused_sites |= !BitsLeave(work);
      }
      // XLA:GPU expands rng-bit-generator into Philox and fuses it into the consumer, which
      // computes the global words and keeps its slice: nothing is materialized.
      if (work.philox && !BitsLeave(work)) {
        site.whatif.rbg = site.whatif.fused;
        fused_sites = true;
      }
    }
  }
  if (fused_sites) {
    result.notes.push_back(
        "hashes fused into their consumers: XLA recomputes such a hash in every fusion that "
        "reads the bits (forward and backward), so several sites may draw the same bits; the "
        "replicated and rbg what-ifs count each site");
  }
  bool estimated = false;
  for (SiteWork& work : sites_) {
    RngSite& site = work.site;
    if (!work.via_calls) continue;
    const RngCost* cost = CostOf(site.whatif, site.mode.c_str());
    site.buffers.clear();
    site.counter_bytes = 0;
    site.bits_bytes = 0;
    site.materialized_bytes = cost != nullptr ? cost->memory_bytes : 0;
    estimated = true;
  }
  if (estimated) {
    result.notes.push_back(
        "sites reached through calls (JAX functions not inlined yet): materialized_bytes is the "
        "what-if of the site's mode, buffers are not listed");
  }
  Findings(result);
  for (const auto& [computation, instr] : backward_start_) {
    result.backward_start[std::string(computation->name)] = std::string(instr->name);
  }
  std::set<std::pair<int64_t, int64_t>> shared_geometries;
  for (SiteWork& work : sites_) {
    if (work.site.purpose == "bits" &&
        shared_geometries.insert({work.site.global_elements, work.site.local_elements}).second) {
      RngGeometry geometry;
      geometry.local_elements = work.site.local_elements;
      geometry.global_elements = work.site.global_elements;
      geometry.devices = work.site.shards;
      result.totals.whatif.replicated.memory_bytes = SaturatingAdd(
          result.totals.whatif.replicated.memory_bytes, SharedReplicatedCounterBytes(geometry));
    }
  }
  for (SiteWork& work : sites_) {
    RngSite& site = work.site;
    RngSiteTotals& t = result.totals;
    ++t.sites;
    if (site.purpose == "bits") ++t.bits_sites;
    t.materialized_bytes = SaturatingAdd(t.materialized_bytes, site.materialized_bytes);
    t.wire_bytes_per_device = SaturatingAdd(t.wire_bytes_per_device, site.wire_bytes_per_device);
    for (const char* mode : {"replicated", "partitionable", "rbg", "fused"}) {
      RngCost* total = const_cast<RngCost*>(CostOf(t.whatif, mode));
      const RngCost* cost = CostOf(site.whatif, mode);
      total->memory_bytes = SaturatingAdd(total->memory_bytes, cost->memory_bytes);
      total->wire_bytes_per_device =
          SaturatingAdd(total->wire_bytes_per_device, cost->wire_bytes_per_device);
    }
    result.sites.push_back(std::move(site));
  }
  return result;
}

}  // namespace

RngSiteResult AnalyzeRngSites(ModuleAnalyses& analyses, const RngSiteOptions& options) {
  return RngSiteFinder(analyses, options).Run();
}

RngSiteResult AnalyzeRngSites(const ir::HloModule& module, const RngSiteOptions& options) {
  ModuleAnalyses analyses(module);
  return AnalyzeRngSites(analyses, options);
}

}  // namespace spmdsim::passes
