// rng-bit-generator after XLA expanded it into Philox4x32-10 arithmetic (XLA:GPU's
// RngBitGeneratorExpander, which lowers the op with xla/hlo/builder/lib/prng.h's
// PhiloxBitGenerator): the op is gone, its rounds sit in the fusion of its consumer.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "ir/hlo.h"

namespace spmdsim::passes {

// Philox4x32's round multipliers (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
inline constexpr int64_t kPhiloxMultiplier0 = 0xD2511F53;
inline constexpr int64_t kPhiloxMultiplier1 = 0xCD9E8D57;

struct PhiloxExpansion {
  // The 32-bit words the generator computes (four per 128-bit counter), and the part the
  // computation keeps (a partitioned program slices its device's part out of the global bits
  // with the partition id); equal when nothing is sliced.
  int64_t generated_words = 0;
  int64_t kept_words = 0;
  const ir::Shape* kept_shape = nullptr;  // the u32 array kept; null: the generated one
  // The op_name of the generator's rounds (XLA's expander gives them the op's metadata), not
  // the consumer's the fusion is named after.
  std::string_view op_name;
};

// The Philox generator computed in `computation` (and what it calls), if it holds one: integer
// multiplies by both round multipliers.
std::optional<PhiloxExpansion> FindPhiloxExpansion(const ir::HloComputation* computation);

}  // namespace spmdsim::passes
