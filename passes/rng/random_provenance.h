// Which values of a module hold random bits, and which draw made them: a dataflow property of
// the values the memory analysis already has (passes/memory/buffer_dataflow_analysis.h), derived
// from what each instruction does to its operands, not from op_names.
//
// Sources (where random bits start):
//   - a rotation of an unrolled threefry2x32 (passes/rng/threefry_hashes.h: a chain of 20
//     rotations by 13,15,26,6,17,29,16,24), wherever XLA put its rounds: unfused, in fusions,
//     several draws in one multi-output fusion, first rounds in one fusion and the last ones
//     copied into each consumer (XLA:TPU);
//   - a rotation inside XLA:CPU's rolled threefry loop (a while whose state is the loop state
//     of rng_site_finder.h's ThreefryLoopCounters);
//   - the cu_/hip_threefry2x32 custom calls (jax_threefry_gpu_kernel_lowering);
//   - rng-bit-generator's bits (output {1}; its new state {0} is a key), the `rng` opcode, and
//     XLA:GPU's Philox expansion of rng-bit-generator (a multiply by a Philox round multiplier).
// Propagation, per element of every value:
//   - moving ops keep what they move: copy, bitcast, reshape, transpose, broadcast, slice,
//     dynamic-slice, dynamic-update-slice, concatenate, pad, reverse, gather, select of bits,
//     tuple and get-tuple-element, async and collective ops (all-gather, all-to-all,
//     collective-permute, their start/done forms), optimization barriers, while carries,
//     parameters and results of called and fused computations;
//   - integer arithmetic on bits (add, xor, or, and, shifts, multiply, integer converts, integer
//     all-reduce and reduce) gives bits: the rounds of a hash, the mantissa bits of a uniform;
//   - anything else computed from bits without other data (compare into a mask, convert to a
//     float, the arithmetic of a normal) is *derived* from bits;
//   - computed from bits and other data (a dropout's select or multiply with the activations)
//     is data, not random: the random part was consumed there.
// Counters: walking up from the instructions that start a draw's hash, the values computed
// from neither data nor bits, larger than a key (kCounters).
// Key derivation: the bits of a draw that reach only other draws' hashes (as their key) or the
// step's outputs as keys (at most kKeyElements elements) are keys (split, fold_in, rbg's key
// ops), never random values; a draw is random when some of its bits are derived from, mixed
// with data, or leave the step as an array larger than a key.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/hlo.h"
#include "passes/memory/buffer_dataflow_analysis.h"

namespace spmdsim::passes {

// What a value holds.
enum class RandomKind : uint8_t {
  kNone,     // not computed from random bits (or computed from them and other data)
  kBits,     // random bits, moved or mixed by integer arithmetic only
  kDerived,  // computed from random bits alone: masks, uniform and normal floats
  // The counters a draw hashes: computed from constants, iotas and the device's position alone
  // (no data, no bits), larger than a key, and read by the draw's hash (iota_2x32_shape, the
  // halves of replicated mode's flat iota, their exchanges between devices).
  kCounters,
};

enum class RandomSourceKind : uint8_t {
  kThreefryUnrolled,
  kThreefryRolled,
  kThreefryCustomCall,
  kRngBitGenerator,
  kPhilox,
  kRng,
};

// Element counts at most this are keys when they leave the step (a threefry key is u32[2], an
// rbg key u32[4], a typed key array of a few keys).
inline constexpr int64_t kKeyElements = 16;

struct RandomSource {
  RandomSourceKind kind = RandomSourceKind::kThreefryUnrolled;
  // The instruction of a non-fusion computation that makes the bits: the fusion holding the
  // draw's last rotation, the rolled loop, the custom call, the rng-bit-generator.
  const ir::HloInstruction* anchor = nullptr;
  // The instruction inside it whose op_name names the draw (the last rotation; the anchor).
  const ir::HloInstruction* named_by = nullptr;
  // Some bits of it are derived from, mixed with data, or leave the step as more than a key.
  bool random = false;
  // The source standing for the whole draw: XLA may compute a hash's rounds in several places
  // (its first rounds in one fusion, the last ones after an exchange); each part is a source,
  // and Source() answers with the draw.
  int32_t draw = -1;
};

class RandomProvenance {
 public:
  static RandomProvenance Run(const DataflowAnalysis& dataflow);

  RandomKind Kind(int32_t value_id) const { return kind_[static_cast<size_t>(value_id)]; }
  // The draw a value's bits come from (an index into sources()), -1 for none.
  int32_t Source(int32_t value_id) const { return source_[static_cast<size_t>(value_id)]; }
  // A value of a random draw (not key derivation): its bits, what is derived from them alone, or
  // its counters.
  bool IsRandom(int32_t value_id) const {
    const int32_t s = Source(value_id);
    return Kind(value_id) != RandomKind::kNone && s >= 0 && sources_[static_cast<size_t>(s)].random;
  }
  const std::vector<RandomSource>& sources() const { return sources_; }
  // The draw whose hash starts at `start` (one of its rotations, the rolled loop, the custom
  // call, the generator), or -1.
  int32_t DrawStartingAt(const ir::HloInstruction* start) const;
  // The draws whose hashes start inside `holder` (a fusion or a call of a control-flow
  // computation, or the loop, custom call or generator itself), in the order found.
  std::vector<int32_t> DrawsHeldBy(const ir::HloInstruction* holder) const;

 private:
  friend class ProvenanceBuilder;
  std::vector<RandomKind> kind_;  // by value id
  std::vector<int32_t> source_;   // by value id
  std::vector<RandomSource> sources_;
  std::unordered_map<const ir::HloInstruction*, int32_t> starts_;             // start -> draw
  std::unordered_map<const ir::HloInstruction*, std::vector<int32_t>> held_;  // holder -> draws
};

std::string_view RandomKindName(RandomKind kind);

}  // namespace spmdsim::passes
