// Sizes and times for people: "384.00 MiB", "1.23 ms". JSON keeps exact bytes; only text views
// use these. Sizes people write are read by dump/size_text.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace spmdsim::analyzer {

// 402653184 -> "384.00 MiB"; below 1 KiB -> "512 B".
std::string HumanBytes(int64_t bytes);

// A change in bytes, always signed: 1024 -> "+1.00 KiB", -512 -> "-512 B", 0 -> "0 B".
std::string HumanBytesDelta(int64_t delta);

// A time given in microseconds: "12.3 us", "1.23 ms", "4.56 s"; a time past a year (an estimate
// over saturated figures, or not finite) is "over a year" rather than a number of 20 digits.
std::string HumanTime(double us);

}  // namespace spmdsim::analyzer
