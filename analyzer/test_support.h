// For the tests that run the built `spmdsim` (SPMDSIM_BINARY) end to end: one command line in, its
// stdout and exit code out. stderr is discarded (cli_errors_test.cc, which checks what stderr
// says, has its own fork/exec runner).
#pragma once

#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

namespace spmdsim::analyzer::test {

struct RunOutput {
  std::string out;     // stdout
  int exit_code = -1;  // -1 when the process did not exit normally
};

// Runs `SPMDSIM_BINARY args` through /bin/sh, so `args` is shell text: quote what needs quoting.
// `env` ("NAME=value NAME2=value2", shell-quoted too) is set for that run only.
inline RunOutput RunSpmdsim(const std::string& args, const std::string& env = "") {
  RunOutput result;
  const std::string command =
      (env.empty() ? "" : "env " + env + " ") + SPMDSIM_BINARY + " " + args + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 65536> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    result.out.append(buffer.data(), n);
  }
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace spmdsim::analyzer::test
