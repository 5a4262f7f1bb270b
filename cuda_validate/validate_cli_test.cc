// Runs the built CPU `spmdsim-validate` (SPMDSIM_VALIDATE_BINARY) as CI does.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
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

#if defined(SPMDSIM_BINARY)
// `spmdsim rng sites DUMP --format json` into a temporary file; returns its path.
std::string WriteRngSites(const std::string& dump) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("spmdsim_validate_" + std::to_string(getpid()) + "_" + dump + ".json"))
                               .string();
  const std::string command = std::string(SPMDSIM_BINARY) + " rng sites " + SPMDSIM_TESTDATA_DIR +
                              "/dumps/" + dump + " --format json > " + path + " 2>/dev/null";
  REQUIRE(std::system(command.c_str()) == 0);
  return path;
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

TEST_CASE("spmdsim-validate runs spmdsim's own rng sites JSON") {
  const char* dump = GENERATE("dp8_partitionable_remat", "dp8_replicated_noremat");
  INFO(dump);
  const std::string sites_path = WriteRngSites(dump);
  const nlohmann::json sites = ReadJson(sites_path);
  const RunOutput run = Run("--backend cpu --reps 1 --format json " + sites_path);
  std::filesystem::remove(sites_path);
  REQUIRE(run.exit_code == 0);
  const nlohmann::json verdict = nlohmann::json::parse(run.out);
  CHECK(verdict.at("ok") == true);

  // The bits sites of the after-optimizations module, by where they sit in spmdsim's JSON.
  int bits_sites = 0;
  int other_sites = 0;
  for (const auto& module : sites.at("modules")) {
    for (const auto& site : module.at("rng").at("sites")) {
      (site.at("purpose") == "bits" ? bits_sites : other_sites)++;
    }
  }
  REQUIRE(bits_sites > 0);
  const auto& results = verdict.at("results");
  REQUIRE(results.size() == 4 * static_cast<size_t>(bits_sites));  // 4 lowerings per bits site
  int from_spmdsim = 0;
  for (const auto& r : results) {
    INFO(r.dump());
    CHECK(r.at("ok") == true);
    CHECK(r.at("measured_bytes") == r.at("predicted_bytes"));
    CHECK(r.at("bits_checked") == true);
    CHECK(r.at("bit_mismatches") == 0);
    CHECK(r.at("mask_mismatches") == 0);
    CHECK(r.at("output_mismatches") == 0);
    if (r.at("prediction_source") == "spmdsim") {
      ++from_spmdsim;
      // The figure is spmdsim's what-if for the site plus the dropout's 1-byte mask.
      const std::string detail = r.at("prediction_detail");
      const size_t m = std::stoul(detail.substr(detail.find("modules[") + 8));
      const size_t s = std::stoul(detail.substr(detail.find("sites[") + 6));
      const auto& site = sites.at("modules").at(m).at("rng").at("sites").at(s);
      const std::string mode = r.at("lowering") == "fused" ? "fused" : "partitionable";
      CHECK(r.at("predicted_bytes").get<int64_t>() ==
            site.at("whatif").at(mode).at("memory_bytes").get<int64_t>() +
                site.at("local_elements").get<int64_t>());
      CHECK(r.at("local_shape") == site.at("shape"));
    }
  }
  CHECK(from_spmdsim == 2 * bits_sites);  // partitionable_materialized and fused
  // split / fold_in key derivations are skipped, each with a reason.
  CHECK(verdict.at("skipped").size() == static_cast<size_t>(other_sites));
  for (const auto& skipped : verdict.at("skipped")) CHECK(skipped.at("reason") != "");
}

TEST_CASE("spmdsim-validate exits 2 when spmdsim's JSON has no threefry bits site (rbg)") {
  const std::string sites_path = WriteRngSites("dp8_rbg_remat");
  const RunOutput run = Run("--backend cpu --reps 1 " + sites_path);
  std::filesystem::remove(sites_path);
  CHECK(run.exit_code == 2);
}
#endif

}  // namespace
}  // namespace spmdsim::validate
