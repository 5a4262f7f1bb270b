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

// "384MiB", "1.5 GiB", "1024", "2TB" -> bytes (binary units; KB/MB/GB read as KiB/MiB/GiB).
// nullopt for anything else or on overflow.
std::optional<int64_t> ParseSize(std::string_view text);

}  // namespace spmdsim::analyzer
