// Where random bits start (random_provenance.h): threefry's rotation chains, XLA:CPU's rolled
// loop, the threefry custom calls, rng-bit-generator and XLA's Philox expansion of it.
#include <set>
#include <string_view>

#include "passes/rng/philox_expansion.h"
#include "passes/rng/random_provenance_internal.h"
#include "passes/rng/rng_site_finder.h"
#include "passes/rng/threefry_hashes.h"

namespace spmdsim::passes {
namespace {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;

// A round group of threefry: four rotations by four distinct amounts.
constexpr size_t kRoundGroup = 4;

bool IsPhiloxRound(const HloInstruction* instr) {
  if (instr->opcode != Opcode::kMultiply) return false;
  for (const HloInstruction* operand : instr->operands) {
    const std::optional<int64_t> c = ScalarConstant(operand);
    if (c && (*c == kPhiloxMultiplier0 || *c == kPhiloxMultiplier1)) return true;
  }
  return false;
}

bool IsThreefryCall(const HloInstruction& instr) {
  return instr.custom_call_target().find("threefry2x32") != std::string_view::npos;
}

class SourceFinder {
 public:
  explicit SourceFinder(const DataflowAnalysis& dataflow)
      : dataflow_(dataflow), module_(dataflow.module()) {}

  FoundSources Run() {
    // One look at every instruction first: most modules without random numbers hold nothing
    // any source is made of, and are left at that.
    bool any = false;
    for (const HloComputation* c : module_.computations) {
      for (const HloInstruction* i : c->instructions) {
        any = any || i->opcode == Opcode::kRngBitGenerator || i->opcode == Opcode::kRng ||
              i->opcode == Opcode::kWhile || IsRotationShift(i) || IsPhiloxRound(i) ||
              (i->opcode == Opcode::kCustomCall && IsThreefryCall(*i));
      }
      if (any) break;
    }
    if (!any) return std::move(out_);
    // Hash rounds wherever their chains are cut (XLA:TPU computes a draw's first rounds in one
    // fusion and its last ones after exchanging them between devices): every chain of at least
    // one round group (4 rotations, 4 distinct amounts). The parts of one draw are united where
    // a part's rounds read another's lanes (Start).
    for (const ThreefryDraw& draw : FindThreefryDraws(module_, kRoundGroup)) {
      std::set<int64_t> amounts;
      for (const HloInstruction* rotation : draw.rotations) {
        if (const std::optional<int64_t> amount = ScalarConstant(rotation->operands[1])) {
          amounts.insert(*amount);
        }
      }
      if (amounts.size() < kRoundGroup) continue;
      const int32_t s =
          AddSource(RandomSourceKind::kThreefryUnrolled, draw.anchor, draw.last_rotation);
      out_.lanes[static_cast<size_t>(s)] = draw.lanes->ElementCount();
      for (const HloInstruction* rotation : draw.rotations) out_.starts[rotation] = s;
    }
    for (const HloComputation* c : dataflow_.ControlFlowComputations()) {
      for (const HloInstruction* instr : c->instructions) {
        switch (instr->opcode) {
          case Opcode::kWhile: {
            // The rolled loop's rotation amounts are loop state (the u32[4] vectors), not
            // constants: its two lanes are the hash's output.
            if (!rng_internal::IsThreefryLoopState(instr->shape)) break;
            int shifts = 0;
            ForEachNested(instr->Called("body"), [&](const HloInstruction* i) {
              shifts += i->opcode == Opcode::kShiftLeft ? 1 : 0;
            });
            if (shifts < 4) break;
            out_.starts[instr] = AddSource(RandomSourceKind::kThreefryRolled, instr, instr);
            break;
          }
          case Opcode::kCustomCall:
            if (IsThreefryCall(*instr)) {
              out_.starts[instr] = AddSource(RandomSourceKind::kThreefryCustomCall, instr, instr);
            }
            break;
          case Opcode::kFusion:
            // XLA:GPU wraps the kernel in a fusion of its own (a dynamic-slice fusion slicing
            // its counters).
            ForEachNested(instr->Called("calls"), [&](const HloInstruction* i) {
              if (i->opcode == Opcode::kCustomCall && IsThreefryCall(*i)) {
                out_.starts[i] = AddSource(RandomSourceKind::kThreefryCustomCall, instr, i);
              }
            });
            break;
          case Opcode::kRngBitGenerator:
            out_.starts[instr] = AddSource(RandomSourceKind::kRngBitGenerator, instr, instr);
            break;
          case Opcode::kRng:
            out_.starts[instr] = AddSource(RandomSourceKind::kRng, instr, instr);
            break;
          default:
            break;
        }
      }
    }
    // XLA's expansion of rng-bit-generator into Philox rounds: in the consumer's fusion
    // (XLA:GPU), or in a called computation (XLA:CPU's %rng.N). Callers first, so that a call
    // claims the rounds of the fusions inside it; the generator's computations take the state
    // (a key) in, however they compute with it (out_.generators).
    const auto& flow = dataflow_.ControlFlowComputations();
    for (auto c = flow.rbegin(); c != flow.rend(); ++c) {
      for (const HloInstruction* instr : (*c)->instructions) {
        if (instr->opcode != Opcode::kFusion && instr->opcode != Opcode::kCall) continue;
        const HloComputation* callee =
            instr->Called(instr->opcode == Opcode::kFusion ? "calls" : "to_apply");
        std::vector<const HloInstruction*> rounds;
        ForEachNested(callee, [&](const HloInstruction* i) {
          if (IsPhiloxRound(i) && out_.starts.count(i) == 0) rounds.push_back(i);
        });
        if (rounds.empty()) continue;
        const int32_t s = AddSource(RandomSourceKind::kPhilox, instr, instr);
        for (const HloInstruction* round : rounds) out_.starts.try_emplace(round, s);
        ForEachNested(callee, [&](const HloInstruction* i) {
          for (const ir::CalledComputation& called : i->called_computations()) {
            out_.generators.try_emplace(called.computation, s);
          }
        });
        out_.generators.try_emplace(callee, s);
      }
    }
    return std::move(out_);
  }

 private:
  int32_t AddSource(RandomSourceKind kind, const HloInstruction* anchor,
                    const HloInstruction* named_by) {
    const auto [at, inserted] =
        named_by_.try_emplace(named_by, static_cast<int32_t>(out_.sources.size()));
    if (inserted) {
      out_.sources.push_back({kind, anchor, named_by, false, -1});
      out_.lanes.push_back(-1);
    }
    return at->second;
  }

  const DataflowAnalysis& dataflow_;
  const ir::HloModule& module_;
  std::unordered_map<const HloInstruction*, int32_t> named_by_;
  FoundSources out_;
};

}  // namespace

FoundSources FindRandomSources(const DataflowAnalysis& dataflow) {
  return SourceFinder(dataflow).Run();
}

}  // namespace spmdsim::passes
