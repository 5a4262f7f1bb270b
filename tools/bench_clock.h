// The clocks the benchmark tools read: this process's CPU time (what one core spends, user and
// system, steady on a loaded machine) and wall time, taken together.
#pragma once

#include <chrono>
#include <ctime>

namespace spmdsim::bench {

struct Stamp {
  double wall = 0;
  double cpu = 0;
};

inline Stamp Now() {
  timespec cpu{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
  const auto wall = std::chrono::steady_clock::now().time_since_epoch();
  return {std::chrono::duration<double>(wall).count(),
          static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) * 1e-9};
}

}  // namespace spmdsim::bench
