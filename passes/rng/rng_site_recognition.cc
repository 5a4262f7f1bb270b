// Recognising RNG sites: threefry hashes, their wrappers and calls, rng-bit-generator and its
// expansions, key derivation; the backward pass's start; RngScope and RngPhase.
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
#include "passes/rng/rng_site_finder.h"
#include "passes/rng/threefry_hashes.h"
#include "passes/sharding/partition_offsets.h"

namespace spmdsim::passes::rng_internal {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

bool IsU32Array(const ir::Shape& shape) {
  return shape.IsArray() && shape.element_type() == PrimitiveType::kU32;
}

// (s32[], X0, X1, ks0, ks1, ks2, u32[4], u32[4]): the state of XLA:CPU's rolled threefry loop.
int ThreefryLoopCounters(const ir::Shape& shape) {
  if (!shape.IsTuple()) return 0;
  const auto& e = shape.tuple_shapes();
  // The loop's own s32[] counters first: XLA:CPU's expansion carries one, JAX 0.4's fori_loop
  // lowering two (the round and its own index).
  int counters = 0;
  while (counters < static_cast<int>(e.size()) && counters < 2 && e[counters].IsArray() &&
         e[counters].element_type() == PrimitiveType::kS32 && e[counters].rank() == 0) {
    ++counters;
  }
  if (counters == 0 || e.size() != static_cast<size_t>(counters) + 7) return 0;
  for (int i = counters; i < counters + 5; ++i) {
    if (!IsU32Array(e[i])) return 0;
  }
  if (e[counters].dims() != e[counters + 1].dims()) return 0;
  for (int i = counters + 5; i < counters + 7; ++i) {
    if (!IsU32Array(e[i]) || e[i].dims() != std::vector<int64_t>{4}) return 0;
  }
  return counters;
}

bool IsThreefryLoopState(const ir::Shape& shape) { return ThreefryLoopCounters(shape) > 0; }

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
std::optional<SiteKind> ThreefryFunctionKind(const HloComputation* computation) {
  if (computation == nullptr || computation->IsFusionComputation()) return std::nullopt;
  std::vector<const HloInstruction*> params(4, nullptr);
  int64_t count = 0;
  for (const HloInstruction* instr : computation->instructions) {
    if (instr->opcode != Opcode::kParameter) continue;
    ++count;
    if (instr->parameter_number >= 0 && instr->parameter_number < 4) {
      params[static_cast<size_t>(instr->parameter_number)] = instr;
    }
  }
  if (count != 4 || std::find(params.begin(), params.end(), nullptr) != params.end())
    return std::nullopt;
  for (const HloInstruction* param : params) {
    if (!IsU32Array(param->shape)) return std::nullopt;
  }
  const ir::Shape& x = params[2]->shape;
  if (params[3]->shape.dims() != x.dims()) return std::nullopt;
  const HloInstruction* root = computation->root;
  if (root == nullptr || !root->shape.IsTuple() || root->shape.tuple_shapes().size() != 2) {
    return std::nullopt;
  }
  for (const ir::Shape& element : root->shape.tuple_shapes()) {
    if (!IsU32Array(element) || element.dims() != x.dims()) return std::nullopt;
  }
  bool custom_call = false;
  bool loop = false;
  ForEachNested(computation, [&](const HloInstruction* instr) {
    custom_call |= instr->opcode == Opcode::kCustomCall &&
                   instr->custom_call_target().find("threefry2x32") != std::string_view::npos;
    loop |= instr->opcode == Opcode::kWhile;
  });
  if (custom_call) return SiteKind::kThreefryCustomCall;
  if (loop) return SiteKind::kThreefryRolled;
  const auto [shifts, amounts] = RotationShifts(computation);
  if (shifts >= kUnrolledShifts && amounts == 8) return SiteKind::kThreefryExpanded;
  return std::nullopt;
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
      const SitePhase phase = RngPhase(instr->metadata().op_name);
      bool reads_forward = false;
      for (const HloInstruction* operand : instr->operands) {
        reads_forward |= after_forward.count(operand) != 0;
      }
      if (phase == SitePhase::kForward || reads_forward) after_forward.insert(instr);
      if (start == nullptr && phase == SitePhase::kBackward && reads_forward &&
          site_of_.count(instr) == 0 &&
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
  return RngPhase(member->metadata().op_name) == SitePhase::kForward &&
         RngPhase(user->metadata().op_name) == SitePhase::kBackward;
}

// `context` is the op_name of the calls that reach the anchor's computation from the entry
// (modules before optimizations call JAX's functions instead of inlining them); `context_call`
// the innermost of them that carries a source line.
void RngSiteFinder::AddSite(const HloInstruction* anchor, SiteKind kind, const std::string& context,
                            const HloInstruction* context_call, std::string_view own_op_name) {
  SiteWork work;
  work.anchor = anchor;
  work.home = HomeComputation(anchor);
  work.site.name = std::string(anchor->name);
  work.site.computation = anchor->parent ? std::string(anchor->parent->name) : "";
  work.site.kind = kind;
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
    if (where == nullptr || !work.site.call_stack.empty()) continue;
    work.site.call_stack = module_.stack_frames.Stack(where->metadata().stack_frame_id);
  }
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
  if (IsKeyDerivationOpName(op_name) && op_name.find("threefry_split") != std::string::npos) {
    work.site.purpose = SitePurpose::kSplit;
  } else if (IsKeyDerivationOpName(op_name)) {
    work.site.purpose = SitePurpose::kFoldIn;
  } else if (!draws.empty() ||
             (anchor->opcode != Opcode::kWhile && anchor->opcode != Opcode::kCall)) {
    work.site.purpose = SitePurpose::kBits;
  } else {
    work.site.purpose =
        SitePurpose::kKey;  // a threefry loop outside any jax.random drawing function
  }
  const HloInstruction* loop_init = anchor->opcode == Opcode::kWhile && !anchor->operands.empty()
                                        ? LoopInitTuple(anchor->operands[0])
                                        : nullptr;
  const int loop_counters = loop_init != nullptr && loop_init->opcode == Opcode::kTuple
                                ? ThreefryLoopCounters(loop_init->shape)
                                : 0;
  if (loop_counters > 0 && loop_init->operands.size() == static_cast<size_t>(loop_counters) + 7) {
    const auto& init = loop_init->operands;
    const size_t x = static_cast<size_t>(loop_counters);
    work.counters = {init[x], init[x + 1]};
    work.keys = {init[x + 2], init[x + 3], init[x + 4]};
  } else if ((anchor->opcode == Opcode::kCustomCall && anchor->operands.size() >= 4) ||
             (anchor->opcode == Opcode::kCall && anchor->operands.size() == 4 &&
              IsThreefry(work.site.kind))) {
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
    AddSite(fusion, SiteKind::kThreefryExpanded, "", nullptr,
            draws[0]->last_rotation->metadata().op_name);
    sites_.back().lanes = draws[0]->lanes;
    sites_.back().rotation = draws[0]->last_rotation;
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
    AddSite(fusion, SiteKind::kThreefryExpanded, "", nullptr,
            draws[h]->last_rotation->metadata().op_name);
    SiteWork& work = sites_.back();
    work.site.name += ":hash" + std::to_string(h + 1);
    work.shares_anchor = true;
    work.lanes = draws[h]->lanes;
    work.rotation = draws[h]->last_rotation;
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
    if (ThreefryFunctionKind(computation)) functions.insert(computation);
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
  const auto add = [&](const HloInstruction* anchor, SiteKind kind) {
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
            add(instr, SiteKind::kThreefryRolled);
          }
          break;
        }
        case Opcode::kCustomCall:
          if (instr->custom_call_target().find("threefry2x32") != std::string_view::npos) {
            add(instr, SiteKind::kThreefryCustomCall);
          }
          break;
        case Opcode::kRngBitGenerator:
          add(instr, SiteKind::kRngBitGenerator);
          break;
        case Opcode::kRng:
          add(instr, SiteKind::kRng);
          break;
        case Opcode::kCall: {
          const HloComputation* callee = instr->Called("to_apply");
          if (functions.count(callee) != 0) {
            add(instr, *ThreefryFunctionKind(callee));
            break;
          }
          if (IsExpandedRbgCall(instr)) add(instr, SiteKind::kRngBitGenerator);
          break;
        }
        case Opcode::kFusion: {
          // XLA:GPU wraps a custom call whose operands it slices in a custom fusion (a
          // dynamic-slice fusion): the fusion is the site, named after the call it runs.
          if (const HloComputation* fused = instr->Called("calls");
              fused != nullptr && fused->root != nullptr &&
              fused->root->opcode == Opcode::kCustomCall &&
              fused->root->custom_call_target().find("threefry2x32") != std::string_view::npos) {
            AddSite(instr, SiteKind::kThreefryCustomCall, "", nullptr,
                    fused->root->metadata().op_name);
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
            AddSite(instr, SiteKind::kRngBitGenerator, "", nullptr, philox->op_name);
            sites_.back().philox = philox;
            break;
          }
          const auto [shifts, amounts] = RotationShifts(instr->Called("calls"));
          if (shifts >= kUnrolledShifts && amounts == 8) add(instr, SiteKind::kThreefryExpanded);
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
      if (group.first >= kUnrolledShifts) add(group.second, SiteKind::kThreefryExpanded);
    }
    for (size_t i = first_site; i < sites_.size(); ++i) {
      SiteWork& work = sites_[i];
      if (work.site.kind == SiteKind::kRngBitGenerator) {
        work.site.mode = SiteMode::kRbg;
        work.mode_decided = true;
        work.site.algorithm =
            work.philox ? "philox, expanded by XLA into fusion %" + std::string(work.anchor->name)
            : work.anchor->opcode == Opcode::kCall
                ? "expanded: call to %" + std::string(work.anchor->Called("to_apply")->name)
                : std::string(work.anchor->FindAttribute("algorithm"));
      } else if (work.site.kind == SiteKind::kRng) {
        work.site.mode = SiteMode::kUnknown;
        work.mode_decided = true;
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

}  // namespace spmdsim::passes::rng_internal

namespace spmdsim::passes {

using rng_internal::JaxRandomFunction;
using rng_internal::LastComponent;

std::string RngScope(std::string_view op_name) {
  std::string_view scope = op_name;
  const std::string_view last = LastComponent(scope);
  // JAX 0.4 writes a primitive's parameters after its name: "while[cond_nconsts=0 ...]".
  const std::string_view primitive = last.substr(0, last.find('['));
  if (primitive == "while" || primitive == "threefry2x32" || primitive == "rng_bit_generator" ||
      primitive == "rng_uniform" || primitive == "random_bits") {
    scope = scope.substr(0, scope.size() - std::min(scope.size(), last.size() + 1));
  }
  // Key derivation keeps its own function in the scope (".../jit(_threefry_fold_in)/...").
  if (IsKeyDerivationOpName(scope)) {
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

SitePhase RngPhase(std::string_view op_name) {
  if (op_name.find("transpose(") != std::string_view::npos) return SitePhase::kBackward;
  if (op_name.find("jvp(") != std::string_view::npos) return SitePhase::kForward;
  return SitePhase::kOther;
}

}  // namespace spmdsim::passes
