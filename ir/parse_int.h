// A decimal integer written in HLO text or a backend config ("4", " -2 "): nullopt unless the
// whole text, spaces aside, is one int64.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace spmdsim::ir {

inline std::optional<int64_t> ParseInt64(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace spmdsim::ir
