// Runs the built CPU `spmdsim-validate` (SPMDSIM_VALIDATE_BINARY) as CI does.
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace spmdsim::validate {
namespace {

struct RunOutput {
  std::string out;
  int exit_code = -1;
};

RunOutput Run(const std::string& args) {
  RunOutput result;
  const std::string command = std::string(SPMDSIM_VALIDATE_BINARY) + " " + args + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 65536> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST_CASE("spmdsim-validate --shape runs all four lowerings and writes the verdict JSON") {
  const RunOutput run =
      Run("--backend cpu --shape 8,16,33 --shards 4 --shard-index 3 --reps 1 --format json");
  REQUIRE(run.exit_code == 0);
  const nlohmann::json verdict = nlohmann::json::parse(run.out);
  CHECK(verdict.at("ok") == true);
  REQUIRE(verdict.at("results").size() == 4);
  for (const auto& r : verdict.at("results")) {
    INFO(r.dump());
    CHECK(r.at("measured_bytes") == r.at("predicted_bytes"));
    CHECK(r.at("bit_mismatches") == 0);
    CHECK(r.at("local_shape") == nlohmann::json::array({2, 16, 33}));
  }
  CHECK(verdict.at("results")[0].at("lowering") == "replicated");
  CHECK(verdict.at("results")[0].at("predicted_bytes") == 8 * 8 * 16 * 33 + 2 * 16 * 33);
}

TEST_CASE("spmdsim-validate reads the example prediction file") {
  const RunOutput run = Run("--backend cpu --reps 1 " + std::string(SPMDSIM_VALIDATE_DIR) +
                            "/examples/dropout_sites.json");
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("verdict: ok") != std::string::npos);
}

TEST_CASE("spmdsim-validate usage errors exit 2") {
  CHECK(Run("--backend cpu").exit_code == 2);
  CHECK(Run("--backend cpu --shape 10,4 --shards 4").exit_code == 2);
  CHECK(Run("--backend cpu --shape 8,4 --lowering rbg").exit_code == 2);
  CHECK(Run("--backend cuda --shape 8,4").exit_code == 2);  // this build has no CUDA backend
  CHECK(Run("--backend cpu /nonexistent.json").exit_code == 2);
  CHECK(Run("--backend cpu --shape 8,4 --max-host-bytes 100").exit_code == 1);
}

}  // namespace
}  // namespace spmdsim::validate
