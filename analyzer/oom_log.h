// Reads the "BufferAssignment OOM Debugging" listing XLA prints when an allocation fails, as users
// paste it (indentation, "..." elisions and surrounding log lines tolerated), and says which peak
// buffers hold random bits and what each RNG mode or a remat fix would save of them.
//
//   Buffer 10:
//       Size: 384.00MiB
//       Operator: op_name="pjit(training_step)/.../block_0/mlp_dropout/threefry2x32"
//                 source_file="/.../flax/linen/stochastic.py" source_line=76
//       XLA Label: custom-call
//       Shape: u32[128,1024,768]
//       ==========================
//
// A buffer is random when its op_name names a threefry hash (threefry2x32), its counters
// (iota_2x32_shape), rng_bit_generator or random_bits, and its shape is unsigned-integer. Its
// site is the op_name without that last component (e.g. ".../block_0/mlp_dropout"); its phase is
// forward under jvp(...) only and backward under transpose(jvp(...)).
//
// Savings are of the listed buffers only (the listing shows the peak, not every buffer):
//   fused   a lowering that fuses counters, hash and consumer (newer JAX without the GPU kernel
//           lowering, jax_threefry_gpu_kernel_lowering=False): every random buffer.
//   rbg     jax_default_prng_impl=rbg: one bits buffer per site instead of counters and two hash
//           outputs: the site's random buffers minus one buffer of the bits' size.
//   remat   recomputing the bits from the key in the backward (a checkpoint policy that saves no
//           random values): every forward random buffer held at the peak.
//   replicated  jax_threefry_partitionable=False: saves nothing; each device hashes the whole
//           global array (about 8 x devices bytes per local element) and exchanges it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spmdsim::analyzer {

struct OomBuffer {
  int64_t number = 0;  // "Buffer N"
  int64_t size_bytes = 0;
  std::string size_text;  // as written: "384.00MiB"
  std::string op_name;
  std::string source;  // "stochastic.py:76"
  std::string label;   // XLA Label
  std::string shape;
  std::string entry_parameter;  // "Entry Parameter Subshape: ..." when present
  // Classification.
  bool random = false;
  std::string role;   // "hash output (threefry2x32)", "counters (iota_2x32_shape)", ...
  std::string site;   // op_name scope
  std::string phase;  // forward | backward | other
};

struct OomSite {
  std::string site;
  std::string phase;
  int64_t buffers = 0;
  int64_t bytes = 0;
  int64_t largest = 0;
};

struct OomSaving {
  std::string fix;  // "fused", "rbg", "remat", "replicated"
  int64_t saving_bytes = 0;
  std::string explanation;
};

struct OomReport {
  std::vector<OomBuffer> buffers;  // as listed
  int64_t total_bytes = 0;         // of the listed buffers
  int64_t random_buffers = 0;
  int64_t random_bytes = 0;
  std::vector<OomSite> sites;  // random sites, in order of first appearance
  std::vector<OomSaving> savings;
  std::vector<std::string> header;  // XLA's summary lines before the listing, when pasted
};

// Parses a pasted log. nullopt with `error` set when no "Buffer N:" entry with a Size is found.
std::optional<OomReport> ParseOomLog(std::string_view text, std::string& error);

}  // namespace spmdsim::analyzer
