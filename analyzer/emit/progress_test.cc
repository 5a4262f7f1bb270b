// The progress line: on stderr only when asked (a terminal, or SPMDSIM_PROGRESS=1), erased before
// the output, never on stdout.
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "analyzer/test_support.h"

namespace spmdsim::analyzer {
namespace {

using test::RunSpmdsim;

const std::string kDump = SPMDSIM_TESTDATA_DIR "/dumps/dp8_partitionable_remat";

TEST_CASE("progress line on stderr when forced on, nothing when off or not a terminal") {
  // What the run writes to stderr (stdout to /dev/null).
  struct Captured {
    std::string out;
    int exit_code = -1;
  };
  const auto stderr_of = [](const std::string& env) {
    const std::string command =
        "env " + env + " " SPMDSIM_BINARY " rng sites " + kDump + " 2>&1 >/dev/null";
    Captured captured;
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    size_t n = 0;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) captured.out.append(buffer, n);
    const int status = pclose(pipe);
    captured.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return captured;
  };
  const auto on = stderr_of("SPMDSIM_PROGRESS=1");
  CHECK(on.exit_code == 0);
  CHECK(on.out.find("\rspmdsim: parsing module_0000.jit_train_step") != std::string::npos);
  CHECK(on.out.find("\rspmdsim: reading ") != std::string::npos);
  CHECK(on.out.find(": rng sites") != std::string::npos);
  // Erased at the end: the last thing written returns the cursor to an empty line.
  REQUIRE(!on.out.empty());
  CHECK(on.out.back() == '\r');
  CHECK(on.out.find('\n') == std::string::npos);

  // ctest's stderr is not a terminal: silent by default, and when forced off.
  CHECK(stderr_of("SPMDSIM_PROGRESS=").out.empty());
  CHECK(stderr_of("SPMDSIM_PROGRESS=0").out.empty());

  // stdout is the same with and without it.
  CHECK(RunSpmdsim("rng sites " + kDump, "SPMDSIM_PROGRESS=1").out ==
        RunSpmdsim("rng sites " + kDump).out);
}

}  // namespace
}  // namespace spmdsim::analyzer
