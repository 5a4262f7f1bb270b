// Sizes and times for people: "384.00 MiB", "1.23 ms". JSON keeps exact bytes; only text views
// use these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spmdsim::analyzer {

// 402653184 -> "384.00 MiB"; below 1 KiB -> "512 B".
std::string HumanBytes(int64_t bytes);

// A change in bytes, always signed: 1024 -> "+1.00 KiB", -512 -> "-512 B", 0 -> "0 B".
std::string HumanBytesDelta(int64_t delta);

// "384MiB", "1.5 GiB", "1024", "2TB" -> bytes (binary units; KB/MB/GB read as KiB/MiB/GiB, as
// XLA writes them; B, K, M, G, T, P and "bytes" too; case-insensitive; decimals allowed).
// nullopt for anything else (a sign, an exponent, an unknown unit) or on overflow.
std::optional<int64_t> ParseSize(std::string_view text);

}  // namespace spmdsim::analyzer
