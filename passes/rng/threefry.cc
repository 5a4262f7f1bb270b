#include "passes/rng/threefry.h"

#include "ir/checked_math.h"

namespace spmdsim::passes {
namespace {

using threefry::Threefry2x32;

// Counter words JAX hashes for `elements` values of `bit_width` bits in replicated mode:
// ceil(elements * bit_width / 32).
std::optional<int64_t> ReplicatedWordCount(int64_t elements, int bit_width) {
  const std::optional<int64_t> bits = ir::CheckedMul(elements, bit_width);
  if (!bits) return std::nullopt;
  return ir::CeilDiv(*bits, 32);
}

std::string TooManyWords(int64_t words) {
  return "replicated mode needs " + std::to_string(words) +
         " counter words; more than 2^32 - 2 take JAX's multi-block path, which is not modelled";
}

// threefry_2x32(key, iota(words)), the replicated mode's source of bits.
std::vector<uint32_t> ReplicatedWords(Pair32 key, int64_t words) {
  std::vector<uint32_t> counts(static_cast<size_t>(words));
  for (int64_t i = 0; i < words; ++i) counts[static_cast<size_t>(i)] = static_cast<uint32_t>(i);
  return Threefry2x32Words(key, counts);
}

// Partitionable mode: (y0, y1) of every element's own counter, the global row-major index split
// into (high, low) u32 words (iota_2x32_shape). The per-dimension iotas times row-major strides
// that XLA adds up equal the linear index, so the loop runs over that index directly.
void PartitionableHashes(Pair32 key, int64_t elements, std::vector<uint32_t>& y0,
                         std::vector<uint32_t>& y1) {
  y0.resize(static_cast<size_t>(elements));
  y1.resize(static_cast<size_t>(elements));
  for (int64_t i = 0; i < elements; ++i) {
    const Pair32 y = Threefry2x32(key, threefry::CounterOfIndex(static_cast<uint64_t>(i)));
    y0[static_cast<size_t>(i)] = y.w0;
    y1[static_cast<size_t>(i)] = y.w1;
  }
}

BitsResult PartitionableBits(Pair32 key, int64_t elements, int bit_width) {
  BitsResult result;
  std::vector<uint32_t> y0;
  std::vector<uint32_t> y1;
  PartitionableHashes(key, elements, y0, y1);
  result.values.resize(static_cast<size_t>(elements));
  const uint32_t mask = bit_width >= 32 ? 0xFFFFFFFFu : (1u << bit_width) - 1u;
  for (size_t i = 0; i < y0.size(); ++i) {
    result.values[i] =
        bit_width == 64 ? (static_cast<uint64_t>(y0[i]) << 32) | y1[i] : ((y0[i] ^ y1[i]) & mask);
  }
  return result;
}

BitsResult ReplicatedBits(Pair32 key, int64_t elements, int bit_width) {
  BitsResult result;
  const std::optional<int64_t> words = ReplicatedWordCount(elements, bit_width);
  if (!words || *words > kMaxReplicatedWords) {
    result.error = TooManyWords(words.value_or(INT64_MAX));
    return result;
  }
  const std::vector<uint32_t> w = ReplicatedWords(key, *words);
  const auto n = static_cast<size_t>(elements);
  result.values.resize(n);
  if (bit_width == 64) {
    // The 2n words split in halves: high words first, low words second.
    for (size_t i = 0; i < n; ++i)
      result.values[i] = (static_cast<uint64_t>(w[i]) << 32) | w[n + i];
  } else if (bit_width == 32) {
    for (size_t i = 0; i < n; ++i) result.values[i] = w[i];
  } else {
    // Each word viewed as 32 / bit_width little-endian sub-words, truncated to n values.
    const size_t per_word = 32 / static_cast<size_t>(bit_width);
    const uint32_t mask = (1u << bit_width) - 1u;
    for (size_t i = 0; i < n; ++i) {
      const uint32_t shift = static_cast<uint32_t>((i % per_word) * static_cast<size_t>(bit_width));
      result.values[i] = (w[i / per_word] >> shift) & mask;
    }
  }
  return result;
}

}  // namespace

std::string_view RngModeName(RngMode mode) {
  return mode == RngMode::kPartitionable ? "partitionable" : "replicated";
}

std::optional<RngMode> ParseRngMode(std::string_view name) {
  if (name == "partitionable") return RngMode::kPartitionable;
  if (name == "replicated") return RngMode::kReplicated;
  return std::nullopt;
}

Pair32 KeyFromSeed(int64_t seed, SeedWidth width) {
  const auto bits = static_cast<uint64_t>(seed);
  if (width == SeedWidth::k32) return Pair32{0, static_cast<uint32_t>(bits)};
  return Pair32{static_cast<uint32_t>(bits >> 32), static_cast<uint32_t>(bits)};
}

std::vector<uint32_t> Threefry2x32Words(Pair32 key, const std::vector<uint32_t>& counts) {
  // Pad an odd count with one zero counter, then hash first half against second half.
  std::vector<uint32_t> padded = counts;
  if (padded.size() % 2 == 1) padded.push_back(0);
  const size_t half = padded.size() / 2;
  std::vector<uint32_t> out(padded.size());
  for (size_t j = 0; j < half; ++j) {
    const Pair32 y = Threefry2x32(key, Pair32{padded[j], padded[half + j]});
    out[j] = y.w0;
    out[half + j] = y.w1;
  }
  out.resize(counts.size());
  return out;
}

std::optional<int64_t> ElementCount(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (const int64_t dim : shape) {
    if (dim < 0) return std::nullopt;
    const std::optional<int64_t> next = ir::CheckedMul(count, dim);
    if (!next) return std::nullopt;
    count = *next;
  }
  return count;
}

BitsResult RandomBits(Pair32 key, const std::vector<int64_t>& shape, int bit_width, RngMode mode) {
  if (bit_width != 8 && bit_width != 16 && bit_width != 32 && bit_width != 64) {
    return BitsResult{{}, "bit width must be 8, 16, 32 or 64, got " + std::to_string(bit_width)};
  }
  const std::optional<int64_t> elements = ElementCount(shape);
  if (!elements) return BitsResult{{}, "shape has a negative dimension or too many elements"};
  return mode == RngMode::kPartitionable ? PartitionableBits(key, *elements, bit_width)
                                         : ReplicatedBits(key, *elements, bit_width);
}

KeysResult Split(Pair32 key, int64_t num, RngMode mode) {
  KeysResult result;
  if (num < 0) {
    result.error = "split count must be >= 0, got " + std::to_string(num);
    return result;
  }
  if (mode == RngMode::kPartitionable) {
    // _threefry_split_foldlike: key j = threefry(key, iota_2x32(j)).
    std::vector<uint32_t> y0;
    std::vector<uint32_t> y1;
    PartitionableHashes(key, num, y0, y1);
    for (size_t j = 0; j < y0.size(); ++j) result.keys.push_back(Pair32{y0[j], y1[j]});
    return result;
  }
  // _threefry_split_original: threefry_2x32(key, iota(2 num)) reshaped to (num, 2).
  if (num > kMaxReplicatedWords / 2) {
    result.error = TooManyWords(num);
    return result;
  }
  const std::vector<uint32_t> words = ReplicatedWords(key, 2 * num);
  for (size_t j = 0; j < static_cast<size_t>(num); ++j) {
    result.keys.push_back(Pair32{words[2 * j], words[2 * j + 1]});
  }
  return result;
}

Pair32 FoldIn(Pair32 key, uint32_t data) {
  // threefry_2x32(key, threefry_seed(data)): a two-word count (0, data) hashes as one pair.
  return Threefry2x32(key, Pair32{0, data});
}

UniformResult UniformF32(Pair32 key, const std::vector<int64_t>& shape, RngMode mode) {
  BitsResult bits = RandomBits(key, shape, 32, mode);
  UniformResult result;
  result.error = std::move(bits.error);
  result.values.reserve(bits.values.size());
  for (const uint64_t b : bits.values) {
    result.values.push_back(threefry::UniformF32FromBits(static_cast<uint32_t>(b)));
  }
  return result;
}

BitsResult Bits32Range(Pair32 key, int64_t total, RngMode mode, int64_t begin, int64_t end) {
  BitsResult result;
  if (total < 0 || begin < 0 || end < begin || end > total) {
    result.error = "range [" + std::to_string(begin) + ", " + std::to_string(end) +
                   ") is not inside [0, " + std::to_string(total) + ")";
    return result;
  }
  if (mode == RngMode::kReplicated && total > kMaxReplicatedWords) {
    result.error = TooManyWords(total);
    return result;
  }
  result.values.reserve(static_cast<size_t>(end - begin));
  for (int64_t i = begin; i < end; ++i) {
    const auto index = static_cast<uint64_t>(i);
    result.values.push_back(
        mode == RngMode::kPartitionable
            ? threefry::PartitionableBits32At(key, index)
            : threefry::ReplicatedWordAt(key, static_cast<uint64_t>(total), index));
  }
  return result;
}

}  // namespace spmdsim::passes
