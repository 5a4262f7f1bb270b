// JAX's threefry PRNG on the host, bit-exact with jax.random: keys from seeds, random bits of a
// shape in both counter modes, split, fold_in and f32 uniforms.
//
// The whole-array functions follow JAX's own structure (iota counters, odd-count padding, the
// halves hashed pairwise, concatenation; or per-element 64-bit counters), so that they can be
// checked against tables the pinned JAX writes (testdata/rng_tables, tools/gen_rng_tables.py).
// The per-element formulas the CUDA kernels use live in passes/rng/threefry_core.h and are checked
// against the same tables.
//
// Pure functions: no I/O. Sizes come from users, so every size is checked; a request JAX would
// serve with its multi-block path (more than 2^32 - 1 counter words in replicated mode) is refused
// with a message rather than computed differently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "passes/rng/threefry_core.h"

namespace spmdsim::passes {

using threefry::Pair32;

// jax_threefry_partitionable: True (default since JAX 0.5.0) or False ("replicated": the counters
// of a shard depend on elements outside it, so SPMD programs replicate the generation).
enum class RngMode { kPartitionable, kReplicated };

std::string_view RngModeName(RngMode mode);
std::optional<RngMode> ParseRngMode(std::string_view name);  // "partitionable" | "replicated"

// How jax.random.key / PRNGKey read an integer seed: under jax_enable_x64 the seed is an int64
// bit-cast to [seed >> 32, seed & 0xFFFFFFFF]; without it (JAX's default) the seed is first
// converted to int32, so the key is [0, seed mod 2^32]. The two agree on 0 <= seed < 2^31.
enum class SeedWidth { k64, k32 };
Pair32 KeyFromSeed(int64_t seed, SeedWidth width = SeedWidth::k64);

// jax.random.bits(key, shape, dtype=uint<bit_width>), values widened to u64, row-major.
struct BitsResult {
  std::vector<uint64_t> values;
  std::string error;  // non-empty when the request was refused (bad width, size limits)
};
BitsResult RandomBits(Pair32 key, const std::vector<int64_t>& shape, int bit_width, RngMode mode);

// jax.random.split(key, num): num new keys.
struct KeysResult {
  std::vector<Pair32> keys;
  std::string error;
};
KeysResult Split(Pair32 key, int64_t num, RngMode mode);

// jax.random.fold_in(key, data): threefry(key, (0, data)) in both modes.
Pair32 FoldIn(Pair32 key, uint32_t data);

// jax.random.uniform(key, shape, float32) with minval 0 and maxval 1.
struct UniformResult {
  std::vector<float> values;
  std::string error;
};
UniformResult UniformF32(Pair32 key, const std::vector<int64_t>& shape, RngMode mode);

// threefry_2x32(key, counts) of JAX: the flat counter array padded to even length, split into
// halves, hashed pairwise, concatenated and truncated. Output has counts.size() words.
std::vector<uint32_t> Threefry2x32Words(Pair32 key, const std::vector<uint32_t>& counts);

// Elements of a shape (product of dims), or nullopt if a dim is negative or the product overflows.
std::optional<int64_t> ElementCount(const std::vector<int64_t>& shape);

// The u32 bits of elements [begin, end) of a `total`-element 32-bit bits array, computed without
// the rest of the array (the slice one device of a batch-sharded array holds). Equal to
// RandomBits(key, {total}, 32, mode) sliced; the shape's rank does not matter for 32-bit bits.
BitsResult Bits32Range(Pair32 key, int64_t total, RngMode mode, int64_t begin, int64_t end);

// Largest counter-word count the replicated scheme handles in one block (JAX switches to split
// blocks at 2^32 - 1 words).
inline constexpr int64_t kMaxReplicatedWords = int64_t{0xFFFFFFFF} - 1;

}  // namespace spmdsim::passes
