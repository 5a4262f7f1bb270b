#include "analyzer/emit/human_units.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdint>

namespace spmdsim::analyzer {

std::string HumanBytes(int64_t bytes) {
  // Sums saturate at the 64-bit limit rather than wrap (ir/checked_math.h): say so.
  if (bytes == INT64_MAX) return "over 8 EiB (64-bit limit)";
  if (bytes == INT64_MIN) return "under -8 EiB (64-bit limit)";
  constexpr std::array<std::string_view, 6> kUnits = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  const bool negative = bytes < 0;
  const double magnitude = std::fabs(static_cast<double>(bytes));
  if (magnitude < 1024) return fmt::format("{} B", bytes);
  double value = magnitude;
  size_t unit = 0;
  value /= 1024;
  while (value >= 1024 && unit + 1 < kUnits.size()) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{}{:.2f} {}", negative ? "-" : "", value, kUnits[unit]);
}

std::string HumanBytesDelta(int64_t delta) { return (delta > 0 ? "+" : "") + HumanBytes(delta); }

std::string HumanTime(double us) {
  constexpr double kYearUs = 365.25 * 24 * 3600 * 1e6;
  if (!std::isfinite(us) || us >= kYearUs) return "over a year";
  if (us >= 1e6) return fmt::format("{:.2f} s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:.2f} ms", us / 1e3);
  return fmt::format("{:.1f} us", us);
}

}  // namespace spmdsim::analyzer
