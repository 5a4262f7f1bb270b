// Overflow-checked int64 arithmetic for sizes computed from untrusted input
// (shape dims x element width x device counts can exceed int64 on hostile dumps).
#pragma once

#include <cstdint>
#include <optional>

namespace spmdsim::ir {

inline std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) return std::nullopt;
  return result;
}

inline std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) return std::nullopt;
  return result;
}

inline std::optional<int64_t> CheckedSub(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_sub_overflow(a, b, &result)) return std::nullopt;
  return result;
}

// Adds b to a, saturating at INT64_MAX instead of wrapping; for totals that are reported, never
// used to allocate.
inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) return b > 0 ? INT64_MAX : INT64_MIN;
  return result;
}

// a - b, saturating at INT64_MIN / INT64_MAX instead of wrapping.
inline int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_sub_overflow(a, b, &result)) return b < 0 ? INT64_MAX : INT64_MIN;
  return result;
}

inline int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) return ((a < 0) != (b < 0)) ? INT64_MIN : INT64_MAX;
  return result;
}

// A running total of sizes that goes up and down (bytes live over a schedule), kept in 128 bits
// and read saturated at INT64_MAX: a hostile module's sum neither wraps nor, once over the cap,
// comes back down wrong. Figures at INT64_MAX are printed as saturated (analyzer/emit/human_units).
class WideTotal {
 public:
  void Add(int64_t v) { total_ += v; }
  void Subtract(int64_t v) { total_ -= v; }
  int64_t Value() const {
    if (total_ > INT64_MAX) return INT64_MAX;
    if (total_ < INT64_MIN) return INT64_MIN;
    return static_cast<int64_t>(total_);
  }

 private:
  __extension__ using Wide = __int128;
  Wide total_ = 0;
};

// a * b / c (c > 0) with the product in 128 bits, saturating at INT64_MAX / INT64_MIN: a share
// of a size (bytes x numerator / denominator) exact wherever the result fits.
inline int64_t SaturatingMulDiv(int64_t a, int64_t b, int64_t c) {
  if (c <= 0) return 0;
  __extension__ using Wide = __int128;
  const Wide q = static_cast<Wide>(a) * b / c;
  if (q > INT64_MAX) return INT64_MAX;
  if (q < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(q);
}

// value rounded up to a multiple of alignment (> 1), saturating at INT64_MAX.
inline int64_t SaturatingAlignUp(int64_t value, int64_t alignment) {
  if (alignment <= 1) return value;
  const int64_t up = SaturatingAdd(value, alignment - 1);
  if (up == INT64_MAX) return INT64_MAX;
  return up / alignment * alignment;
}

// ceil(a / b) for b > 0 (0 when b <= 0). Written without a + b - 1, which overflows near INT64_MAX.
inline int64_t CeilDiv(int64_t a, int64_t b) {
  if (b <= 0) return 0;
  return a / b + (a % b > 0 ? 1 : 0);
}

}  // namespace spmdsim::ir
