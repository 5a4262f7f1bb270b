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

// Adds b to a, saturating at INT64_MAX instead of wrapping; for totals that are reported, never
// used to allocate.
inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) return b > 0 ? INT64_MAX : INT64_MIN;
  return result;
}

inline int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) return ((a < 0) != (b < 0)) ? INT64_MIN : INT64_MAX;
  return result;
}

// ceil(a / b) for b > 0 (0 when b <= 0). Written without a + b - 1, which overflows near INT64_MAX.
inline int64_t CeilDiv(int64_t a, int64_t b) {
  if (b <= 0) return 0;
  return a / b + (a % b > 0 ? 1 : 0);
}

}  // namespace spmdsim::ir
