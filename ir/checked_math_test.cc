#include "ir/checked_math.h"

#include <catch2/catch.hpp>
#include <limits>

namespace spmdsim::ir {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST_CASE("checked arithmetic says when a result does not fit 64 bits") {
  CHECK(CheckedMul(1 << 20, 1 << 20) == int64_t{1} << 40);
  CHECK_FALSE(CheckedMul(kMax, 2).has_value());
  CHECK_FALSE(CheckedMul(kMin, -1).has_value());
  CHECK(CheckedAdd(kMax - 1, 1) == kMax);
  CHECK_FALSE(CheckedAdd(kMax, 1).has_value());
  CHECK(CheckedSub(kMin + 1, 1) == kMin);
  CHECK_FALSE(CheckedSub(kMin, 1).has_value());
}

TEST_CASE("saturating arithmetic stops at the ends instead of wrapping") {
  CHECK(SaturatingAdd(kMax, 1) == kMax);
  CHECK(SaturatingAdd(kMin, -1) == kMin);
  CHECK(SaturatingAdd(40, 2) == 42);
  CHECK(SaturatingSub(kMin, 1) == kMin);
  CHECK(SaturatingSub(kMax, -1) == kMax);
  CHECK(SaturatingSub(0, kMin) == kMax);
  CHECK(SaturatingSub(44, 2) == 42);
  CHECK(SaturatingMul(kMax, 2) == kMax);
  CHECK(SaturatingMul(kMax, -2) == kMin);
  CHECK(SaturatingMul(-kMax, -2) == kMax);
  CHECK(SaturatingMul(6, 7) == 42);
  CHECK(SaturatingAlignUp(kMax - 3, 256) == kMax);
  CHECK(SaturatingAlignUp(1000, 256) == 1024);
  CHECK(CeilDiv(kMax, 2) == kMax / 2 + 1);
  CHECK(CeilDiv(10, 0) == 0);
}

TEST_CASE("a wide running total goes past 64 bits and back exactly, read saturated") {
  WideTotal total;
  total.Add(kMax);
  total.Add(kMax);
  CHECK(total.Value() == kMax);
  total.Subtract(kMax);
  CHECK(total.Value() == kMax);
  total.Subtract(kMax - 5);
  CHECK(total.Value() == 5);
  CHECK(SaturatingMulDiv(kMax, 4, 8) == kMax / 2);
  CHECK(SaturatingMulDiv(kMax, kMax, 1) == kMax);
  CHECK(SaturatingMulDiv(10, 3, 0) == 0);
}

}  // namespace
}  // namespace spmdsim::ir
