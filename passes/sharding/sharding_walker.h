// Internal to passes/sharding/: the walk that propagates shardings, shared by the files that
// implement it: sharding_walk_support.cc (attribute text, dependency sets, sharding meets, which
// opcodes are elementwise), sharding_propagation.cc (the walk and the per-instruction visit) and
// sharding_propagation_visits.cc (custom calls, collectives, loops, conditionals, constraints,
// replicated threefry). Nothing else includes this; the API is sharding_propagation.h.
#pragma once

#include <algorithm>
#include <charconv>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/c_unescape.h"
#include "ir/checked_math.h"
#include "passes/sharding/sharding_propagation.h"
#include "passes/sharding/sharding_rules.h"

namespace spmdsim::passes::sharding_internal {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;

// ---- Attribute text -----------------------------------------------------------------------------

// "{0,2,1}" or "{}" -> ints; nullopt when the text is not such a list.
std::optional<std::vector<int64_t>> ParseIntList(std::string_view text);

std::vector<int64_t> IntsAttr(const HloInstruction& instr, std::string_view name);

int64_t IntAttr(const HloInstruction& instr, std::string_view name, int64_t fallback);

// slice={[0:16384], [0:64:1]} -> (start, limit, stride) per dim.
struct SliceRange {
  int64_t start = 0, limit = 0, stride = 1;
};
std::vector<SliceRange> ParseSlice(std::string_view text);

// The value of `key` inside frontend_attributes={k="...",...} (escaped quotes inside kept).
std::string_view FrontendAttribute(const HloInstruction& instr, std::string_view key);

// ---- Dependency sets ----------------------------------------------------------------------------

using Bits = std::vector<uint64_t>;

void SetBit(Bits& bits, size_t index);

void OrInto(Bits& into, const Bits& from);

std::vector<int32_t> BitList(const Bits& bits, size_t limit);

// ---- Values -------------------------------------------------------------------------------------

struct ValueState {
  ValueSharding sharding;
  Bits deps;                       // needs the whole value depends on
  std::vector<Bits> element_deps;  // a tuple: what each element depends on besides `deps`
  std::vector<int32_t> rng;  // replicated-threefry generations it is made of (replicated only)
};

// Everything a value depends on.
Bits DepsOf(const ValueState& v);

// What element `index` of a tuple value depends on (opt-barriers and call arguments bundle
// unrelated values; their elements keep their own dependencies).
Bits ElementDeps(const ValueState& v, size_t index);

bool AnyLeaf(const ValueSharding& v, ArraySharding::Kind kind);

bool AllReplicated(const ValueSharding& v);

// The common part of two shardings: per dimension, the axes both lead with.
ArraySharding Meet(const ArraySharding& a, const ArraySharding& b);

ValueSharding Meet(const ValueSharding& a, const ValueSharding& b);

// The array leaves of a value with their shapes, in order.
void Leaves(const ValueSharding& v, const ir::Shape& shape,
            std::vector<std::pair<const ArraySharding*, const ir::Shape*>>& out);

void MergeRng(std::vector<int32_t>& into, const std::vector<int32_t>& from);

// Ops the threefry bits flow through unchanged in order (so a flat counter index still names
// the same element): elementwise ops, reshapes, the halves' slices and concatenation, and the
// plumbing of calls, loops and tuples.
bool CarriesRng(Opcode op);

// iota(n), 1-D, whose users slice it into the halves [0:n/2] and [n/2:n]: the counter of JAX's
// non-partitionable threefry (REFERENCE §2).
bool IsThreefryCounter(const HloInstruction& iota);

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

  void Run();

 private:
  ValueState Invoke(const HloComputation& computation, const std::vector<ValueState>& args,
                    const Frame& frame, Env* keep = nullptr);

  ValueState Unknown(const ir::Shape& shape) {
    return {ValueSharding::All(shape, ArraySharding::Kind::kUnknown), {}, {}};
  }

  // Inside a called computation JAX writes op_names relative to the call ("add", "jit(_uniform)");
  // XLA's inliner prefixes the call's. Names that start with the entry's own first component
  // ("jit(train_step)/...") are already whole.
  std::string OpName(const HloInstruction& instr, const Frame& frame) const;

  std::string Source(const HloInstruction& instr, const Frame& frame) const;

  Frame Inner(const HloInstruction& caller, const Frame& frame) const;

  // Records a need; returns its id.
  int32_t AddNeed(CommunicationNeed need, const HloInstruction& instr, const Bits& deps,
                  const Frame& frame);

  // Partial sums and reshards of a rule, on an array result.
  ArraySharding Apply(const RuleOutcome& outcome, const HloInstruction& instr,
                      std::span<HloInstruction* const> operands, const std::string& rule,
                      Bits& deps, const Frame& frame);

  ValueState Visit(const HloInstruction& instr, Env& env, const Frame& frame);

  // True for a call, loop or conditional once the walk has used its instruction budget.
  bool OverBudget(const HloInstruction& instr);

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
                 const Frame& frame, const std::string& rule);

  void VisitCustomCall(const HloInstruction& instr, const std::vector<const ValueState*>& ops,
                       ValueState& out, const Frame& frame);

  void VisitCollective(const HloInstruction& instr, const std::vector<const ValueState*>& ops,
                       ValueState& out, const Frame& frame);

  void VisitWhile(const HloInstruction& instr, const std::vector<const ValueState*>& ops,
                  ValueState& out, const Frame& frame);

  void VisitConditional(const HloInstruction& instr, const std::vector<const ValueState*>& ops,
                        ValueState& out, const Frame& inner);

  // Threefry bits stay tracked while replicated; where replicated bits of a whole generation
  // meet a split value, the generation is split along that value's sharding (a need).
  void TrackRng(const HloInstruction& instr, const std::vector<const ValueState*>& ops,
                ValueState& out);

  const ir::HloModule& module_;
  const ShardingPropagationOptions& options_;
  ShardingPropagationResult& result_;
  std::vector<Generation> generations_;
  int32_t next_loop_ = 0;
  std::string top_component_;  // "jit(train_step)/"
  bool budget_noted_ = false;
};

}  // namespace spmdsim::passes::sharding_internal
