// The closed vocabularies of an RNG site: how its counters are laid out (mode), what its bits
// are for (purpose) and which pass of the step draws them (phase). Each is an enum in the passes
// and the views, and its name only where JSON or text spells it (docs/JSON_SCHEMA.md).
#pragma once

#include <string_view>

namespace spmdsim::passes {

// What makes the site's bits, as the module writes it.
enum class SiteKind {
  kThreefryRolled,      // XLA:CPU's while loop of 5 x 4 rounds
  kThreefryExpanded,    // the rounds unrolled into elementwise ops (XLA:GPU/TPU, fusions)
  kThreefryCustomCall,  // cu_threefry2x32 (jax_threefry_gpu_kernel_lowering)
  kRngBitGenerator,     // rng-bit-generator, or XLA's expansion of it
  kRng,                 // the old `rng` instruction
};

bool IsThreefry(SiteKind kind);

enum class SiteMode {
  kUnknown,        // the counters are neither of JAX's layouts, or not a threefry site
  kReplicated,     // jax_threefry_partitionable=False: a flat iota split in halves
  kPartitionable,  // =True: a global row-major index per element
  kRbg,            // rng-bit-generator (jax.random's rbg / unsafe_rbg)
};

enum class SitePurpose {
  kBits,    // random values a program reads (jax.random.bits and what is drawn from it)
  kSplit,   // key derivation: jax.random.split
  kFoldIn,  // key derivation: jax.random.fold_in
  kKey,     // a threefry hash outside any jax.random drawing function
};

enum class SitePhase {
  kOther,
  kForward,   // jvp(...)
  kBackward,  // transpose(jvp(...)), remat
};

// What a buffer a site materializes holds, from the instruction that defines it.
enum class SiteBufferRole {
  kCounters,                // the iotas the hash reads
  kLoopStateCounters,       // the rolled loop's state tuple: counters, then hash outputs
  kLoopTemporaries,         // the rolled loop body's copies of the hash state
  kExchangedCounters,       // replicated mode's collective-permuted counter pieces
  kAllGatheredHashOutputs,  // replicated mode's all-gathered hash outputs
  kConcatenatedBits,        // the two hash outputs concatenated into the bits
  kHashOutputsOrBits,       // a custom call's or a call's result
  kMask,                    // the pred the bits are compared into (dropout's keep mask)
  kDerived,                 // anything else computed from the bits
};

// Whether the buffer holds counters or hash state rather than random bits.
bool IsCounterRole(SiteBufferRole role);

// Whether an op_name lies inside JAX's key derivation (jax.random.split or fold_in of threefry
// keys: "_threefry_split", "_threefry_fold_in" in the name stack).
bool IsKeyDerivationOpName(std::string_view op_name);

// "threefry-rolled" | "threefry-expanded" | "threefry-custom-call" | "rng-bit-generator" | "rng"
std::string_view SiteKindName(SiteKind kind);
// "replicated" | "partitionable" | "rbg" | "unknown"
std::string_view SiteModeName(SiteMode mode);
// "bits" | "split" | "fold_in" | "key"
std::string_view SitePurposeName(SitePurpose purpose);
// "forward" | "backward" | "other"
std::string_view SitePhaseName(SitePhase phase);
// "counters", "counters (loop state: then hash outputs)", ..., "mask", "derived"
std::string_view SiteBufferRoleName(SiteBufferRole role);

}  // namespace spmdsim::passes
