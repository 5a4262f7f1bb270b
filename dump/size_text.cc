#include "dump/size_text.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>

namespace spmdsim::dump {

namespace {

// ParseSize, with a size past 2^63 - 1 bytes INT64_MAX (`saturate`) or nullopt.
std::optional<int64_t> ReadSize(std::string_view text, bool saturate) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  size_t split = 0;
  while (split < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[split])) || text[split] == '.')) {
    ++split;
  }
  if (split == 0) return std::nullopt;
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + split, value);
  if (ec != std::errc() || ptr != text.data() + split) return std::nullopt;
  std::string unit(text.substr(split));
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static constexpr std::array<std::pair<std::string_view, int>, 18> kUnits = {{
      {"", 0},
      {"b", 0},
      {"k", 1},
      {"kb", 1},
      {"kib", 1},
      {"m", 2},
      {"mb", 2},
      {"mib", 2},
      {"g", 3},
      {"gb", 3},
      {"gib", 3},
      {"t", 4},
      {"tb", 4},
      {"tib", 4},
      {"p", 5},
      {"pb", 5},
      {"pib", 5},
      {"bytes", 0},
  }};
  for (const auto& [name, power] : kUnits) {
    if (unit == name) {
      // A whole number of bytes is read exactly (a double holds only 53 bits).
      int64_t exact = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + split, exact);
      if (power == 0 && error == std::errc() && end == text.data() + split) return exact;
      if (power == 0 && error == std::errc::result_out_of_range) {
        return saturate ? std::optional<int64_t>(INT64_MAX) : std::nullopt;
      }
      const double bytes = value * std::pow(1024.0, power);
      if (bytes >= 9.2e18) return saturate ? std::optional<int64_t>(INT64_MAX) : std::nullopt;
      return static_cast<int64_t>(std::llround(bytes));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> ParseSize(std::string_view text) { return ReadSize(text, false); }

std::optional<int64_t> ParseSizeSaturating(std::string_view text) { return ReadSize(text, true); }

}  // namespace spmdsim::dump
