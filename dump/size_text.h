// Sizes as XLA and people write them, read as bytes: XLA's rounded figures in an OOM message
// ("4.89GiB", "20.54G", "0B") and the size options of the tool ("--max-peak 1.5GiB").
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace spmdsim::dump {

// "384MiB", "1.5 GiB", "1024", "2TB" -> bytes (binary units; KB/MB/GB read as KiB/MiB/GiB, as
// XLA writes them; B, K, M, G, T, P and "bytes" too; case-insensitive; decimals allowed).
// nullopt for anything else (a sign, an exponent, an unknown unit) or on overflow.
std::optional<int64_t> ParseSize(std::string_view text);

// ParseSize, but a well-formed size past 2^63 - 1 bytes is INT64_MAX (saturated, "over 8 EiB"
// in text), for figures that are summed: an OOM listing's sizes.
std::optional<int64_t> ParseSizeSaturating(std::string_view text);

}  // namespace spmdsim::dump
