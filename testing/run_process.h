// Runs a program as a user would from a shell, for the tests that check what spmdsim does with
// hostile input: its exit, the signal that ended it, whether it ran past a time limit, its
// output, the time it took and the most memory it held, optionally under an address-space limit
// (as `ulimit -v`) and with a file on its standard input.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace spmdsim::testing {

// Whether this binary runs under AddressSanitizer, which reserves terabytes of address space (no
// address-space limit can be set on what it runs).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// A user's `ulimit -v 4000000` (KiB), as issue 45's cases were run; 0 under the sanitizer.
inline constexpr uint64_t kUserAddressSpaceLimit = kAddressSanitizer ? 0 : uint64_t{4000000} * 1024;

struct ProcessOptions {
  std::string cwd;                   // empty: this process's
  std::string stdin_path;            // empty: /dev/null
  uint64_t address_space_bytes = 0;  // RLIMIT_AS; 0: none
  std::chrono::seconds timeout{60};  // then SIGKILL, timed_out
  uint32_t uid = 0;                  // run as this user (and group) when this process is root
};

struct ProcessResult {
  int exit_code = -1;  // -1 when the process did not exit normally
  int signal = 0;      // the signal that ended it, if one did
  bool timed_out = false;
  std::string out;
  std::string err;
  double seconds = 0;      // wall time
  double cpu_seconds = 0;  // its user + system time: what it cost, whatever else the machine ran
  int64_t max_rss_kb = 0;  // its peak resident memory (getrusage)
};

// argv[0] is the program's path.
ProcessResult RunProcess(const std::vector<std::string>& argv, const ProcessOptions& options = {});

}  // namespace spmdsim::testing
