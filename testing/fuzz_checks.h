// Checks shared by the libFuzzer targets of analyzer/ and dump/: a failure prints what broke, with
// the output, and aborts so that libFuzzer records the input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace spmdsim::testing {

[[noreturn]] inline void FuzzFailure(std::string_view fuzzer, std::string_view what,
                                     std::string_view detail, std::string_view text) {
  std::fprintf(stderr, "%.*s: %.*s: %.*s\n--- output ---\n%.*s\n", static_cast<int>(fuzzer.size()),
               fuzzer.data(), static_cast<int>(what.size()), what.data(),
               static_cast<int>(detail.size()), detail.data(), static_cast<int>(text.size()),
               text.data());
  std::abort();
}

// A JSON output as a command writes it must parse back.
inline void CheckJsonParses(std::string_view fuzzer, std::string_view what,
                            const std::string& text) {
  try {
    (void)nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    FuzzFailure(fuzzer, what, e.what(), text);
  }
}

}  // namespace spmdsim::testing
