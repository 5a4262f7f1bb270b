// Sizes as XLA and people write them (ParseSize): XLA's rounded figures of an OOM message and
// what --max-peak / --max-wire accept.
#include "dump/size_text.h"

#include <catch2/catch.hpp>

namespace spmdsim::dump {
namespace {

TEST_CASE("ParseSize: numbers with binary units, decimals and spaces") {
  constexpr int64_t kKiB = 1024;
  CHECK(ParseSize("0") == 0);
  CHECK(ParseSize("1024") == 1024);
  CHECK(ParseSize("512B") == 512);
  CHECK(ParseSize("9223372036854775807") == INT64_MAX);  // exact: past a double's 53 bits
  CHECK(ParseSize("9007199254740993 B") == 9007199254740993);
  CHECK(!ParseSize("9223372036854775808").has_value());
  CHECK(ParseSize("512 bytes") == 512);
  CHECK(ParseSize("1KiB") == kKiB);
  CHECK(ParseSize("300 MiB") == 300 * kKiB * kKiB);
  CHECK(ParseSize("1.5GiB") == 3 * kKiB * kKiB * kKiB / 2);
  CHECK(ParseSize("2.84 MiB") == 2977956);  // 2.84 x 1048576 = 2977955.84, rounded
  CHECK(ParseSize("1TiB") == kKiB * kKiB * kKiB * kKiB);
  CHECK(ParseSize("1PiB") == kKiB * kKiB * kKiB * kKiB * kKiB);
  // Past 64 bits: saturated where sizes are summed (an OOM listing), refused elsewhere.
  CHECK(ParseSizeSaturating("99999999999999999999.00GiB") == INT64_MAX);
  CHECK(ParseSizeSaturating("99999999999999999999") == INT64_MAX);
  CHECK(ParseSizeSaturating("8192PiB") == INT64_MAX);
  CHECK(ParseSizeSaturating("384.00MiB") == 384 * kKiB * kKiB);
  CHECK_FALSE(ParseSizeSaturating("-1GiB").has_value());
  // KB, MB, GB are read as binary, as XLA writes them; case does not matter.
  CHECK(ParseSize("16GB") == 16 * kKiB * kKiB * kKiB);
  CHECK(ParseSize("16gib") == 16 * kKiB * kKiB * kKiB);
  CHECK(ParseSize("  4 M ") == 4 * kKiB * kKiB);
}

TEST_CASE("ParseSize: anything else is nullopt") {
  for (const char* text : {"", " ", "GiB", "-1", "-1GiB", "+1", "1e3", "1.5.2MiB", "12XB",
                           "1 GiB x", "0x10", "1,5GiB", ".", "8EiB", "99999999PiB"}) {
    INFO(text);
    CHECK(!ParseSize(text).has_value());
  }
}

}  // namespace
}  // namespace spmdsim::dump
