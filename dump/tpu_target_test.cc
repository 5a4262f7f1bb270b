// The TPU generation from libtpu's target arguments (dump/tpu_target.h), on the files libtpu wrote
// for deviceless compiles of each generation (testdata/tpu_target/).
#include "dump/tpu_target.h"

#include <catch2/catch.hpp>
#include <string>

namespace spmdsim::dump {
namespace {

std::string Fixture(const std::string& generation) {
  return std::string(SPMDSIM_TESTDATA_DIR) + "/tpu_target/" + generation + ".target_arguments.txt";
}

TEST_CASE("tpu target: the generation of each compile from its target arguments") {
  for (const std::string generation : {"v5e", "v5p", "v6e"}) {
    CAPTURE(generation);
    CHECK(ReadTpuGeneration(Fixture(generation)) == generation);
  }
}

TEST_CASE("tpu target: what names no known generation is none, not a guess") {
  CHECK_FALSE(ReadTpuGeneration("").has_value());
  CHECK_FALSE(ReadTpuGeneration(Fixture("v9x")).has_value());  // no such file
  CHECK_FALSE(TpuGenerationFromTargetArguments("").has_value());
  CHECK_FALSE(TpuGenerationFromTargetArguments(
                  "tpu_topology_args {\n  version: TPU_VERSION_PUFFERFISH\n}\n")
                  .has_value());
  // A key inside another line's value is not the key.
  CHECK_FALSE(
      TpuGenerationFromTargetArguments("name: \"version: TPU_VERSION_VIPERFISH\"\n").has_value());
  CHECK(TpuGenerationFromTargetArguments(
            "tpu_topology_args {\n  version: TPU_VERSION_VIPERFISH\n  variant: \"lite\"\n}\n") ==
        "v5e");
}

}  // namespace
}  // namespace spmdsim::dump
