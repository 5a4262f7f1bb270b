// The threefry2x32 hashes inside one computation, told apart by dataflow.
//
// An unrolled threefry2x32 (JAX's lowering for GPU and TPU, REFERENCE §1) performs 20 rounds, and
// each round rotates the second lane once: x1 = (x1 << r) | (x1 >> (32 - r)) with r one of the
// rotation constants 13,15,26,6,17,29,16,24. Round i's rotation reads round i-1's result, so the
// rotations of one hash form a chain 20 long, and hashes of different draws (different keys) form
// chains of their own. XLA:GPU's multi-output loop fusions put several draws' hashes in one
// fusion (all forward hashes of a model in replicated mode), and key derivation (split, fold_in)
// may be fused beside the bits it keys; counting chains counts the draws.
//
// A chain is cut where its lanes change size (a key hashed as u32[2], then broadcast into the
// counters of a u32[2048] bits hash, is two hashes), so a chain's end is a rotation no later
// rotation of the same lane size reads. Chains are followed through fusion operands and outputs,
// not through loops or calls (a hash inside a loop body is the body's).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/hlo.h"

namespace spmdsim::passes {

// The rotation amounts of threefry's two round groups (REFERENCE §1).
inline constexpr int64_t kThreefryRotations[] = {13, 15, 26, 6, 17, 29, 16, 24};
// The rounds of threefry2x32, one rotation each.
inline constexpr int kThreefryRounds = 20;

// The scalar integer a constant (or a broadcast of one) holds, if it is one.
std::optional<int64_t> ScalarConstant(const ir::HloInstruction* instr);

// A shift-left of a u32 lane by one of the rotation constants.
bool IsRotationShift(const ir::HloInstruction* instr);

// ForEachNested's walk, `visits` counting against kMaxNestedVisits.
inline constexpr int64_t kMaxNestedVisits = int64_t{1} << 20;
template <typename Visit>
void ForEachNestedWithin(const ir::HloComputation* computation, Visit& visit, int64_t& visits) {
  if (computation == nullptr) return;
  for (const ir::HloInstruction* instr : computation->instructions) {
    if (++visits > kMaxNestedVisits) return;
    visit(static_cast<const ir::HloInstruction*>(instr));
    for (const ir::CalledComputation& called : instr->called_computations()) {
      ForEachNestedWithin(called.computation, visit, visits);
    }
  }
}

// Calls `visit` on every instruction of `computation` and of the computations it calls (fusion
// bodies included), each instruction before its callees', once per call: a helper called from
// 20 places is seen 20 times. A budget of visits bounds call DAGs, which have exponentially many
// paths. (A template: the RNG passes walk every fusion body with it, and a std::function per
// instruction and per computation cost them more than the walk.)
template <typename Visit>
void ForEachNested(const ir::HloComputation* computation, Visit&& visit) {
  int64_t visits = 0;
  ForEachNestedWithin(computation, visit, visits);
}

// One random draw hashed with unrolled rounds: the rotations of its chain, wherever XLA put them.
// XLA:TPU computes a hash's first rounds in one fusion and copies its last rounds into every
// consumer fusion; XLA:GPU puts several draws in one multi-output fusion. A draw is a connected
// set of same-size rotation chains holding at least one chain of `min_rounds` rotations: copies
// of the last rounds share the first rounds' rotations, distinct draws (distinct keys) share none.
struct ThreefryDraw {
  const ir::HloInstruction* last_rotation = nullptr;  // the first chain end; names the draw
  const ir::Shape* lanes = nullptr;                   // the shape of its lanes
  int rounds = 0;                                     // the longest chain's rotations
  // The instruction of a non-fusion computation whose fused body holds last_rotation (the
  // rotation itself when it is not fused).
  const ir::HloInstruction* anchor = nullptr;
  // Elements of the anchor's fused root tuple ({0} for an array root) computed from the draw.
  std::vector<int64_t> outputs;
  // The other instructions of non-fusion computations whose fused bodies hold rotations of the
  // draw: fusions computing its first rounds, and consumers recomputing its last rounds.
  std::vector<const ir::HloInstruction*> other_holders;
  // How many fusions compute the whole hash (XLA copies a hash into each consumer fusion).
  int copies = 1;
  // Equal for copies of the same hash: the same computation of the same values.
  uint64_t value_number = 0;
  // Every rotation of the draw, its copies' included (passes/rng/random_provenance.h starts
  // the draw's random bits at each).
  std::vector<const ir::HloInstruction*> rotations;
};

// The draws of the module, in the text order of their anchors, then of their last rotations.
std::vector<ThreefryDraw> FindThreefryDraws(const ir::HloModule& module,
                                            int min_rounds = kThreefryRounds);

// Per element of `computation`'s root tuple ({0} for an array root), the parameter numbers it
// reads, directly or not.
std::vector<std::vector<int64_t>> RootParameters(const ir::HloComputation* computation);

}  // namespace spmdsim::passes

namespace spmdsim::passes {

// threefry2x32's key schedule: ks2 = k0 ^ k1 ^ 0x1BD11BDA (REFERENCE §1).
inline constexpr int64_t kThreefryParity = 0x1BD11BDA;

// The operands of `fusion` its hashes take their key from: those the key schedule's parity word
// (an xor with 0x1BD11BDA) is computed from inside the fusion, and operands that are that word
// computed outside. Empty when the fusion holds no key schedule.
std::vector<const ir::HloInstruction*> ThreefryKeyOperands(const ir::HloInstruction* fusion);

}  // namespace spmdsim::passes
