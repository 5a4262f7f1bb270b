// `spmdsim oom` on the OOM listing of user story 000 (testdata/oom/seed_000.log) and
// `spmdsim rng sites` on the seed-size dumps: the random buffers in the listing's vocabulary,
// their total, what each fix would save, and the collectives replicated mode causes.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "analyzer/input_loader.h"
#include "analyzer/oom_log.h"
#include "analyzer/test_support.h"

namespace spmdsim::analyzer {
namespace {

using test::RunOutput;
using test::RunSpmdsim;

constexpr int64_t kMiB = int64_t{1} << 20;

TEST_CASE("oom listing of story 000: random buffers, total, savings") {
  std::string error;
  const std::optional<std::string> text =
      ReadFileContents(std::string(SPMDSIM_TESTDATA_DIR) + "/oom/seed_000.log", error);
  REQUIRE(text);
  const std::optional<OomReport> report = ParseOomLog(*text, error);
  REQUIRE(report);
  REQUIRE(report->buffers.size() == 5);
  CHECK(report->buffers.front().number == 10);
  CHECK(report->buffers.back().number == 14);
  for (const OomBuffer& b : report->buffers) {
    CHECK(b.size_bytes == 384 * kMiB);
    CHECK(b.shape == "u32[128,1024,768]");
    CHECK(b.random);
    CHECK(b.phase == "forward");
    CHECK(b.source == "stochastic.py:76");
  }
  CHECK(report->buffers[0].label == "custom-call");
  CHECK(report->buffers[2].role == "counters (iota_2x32_shape)");
  CHECK(report->random_bytes == 5 * 384 * kMiB);
  REQUIRE(report->sites.size() == 3);  // block_0/mlp_dropout, block_11/mlp_dropout, block_0/att
  CHECK(report->sites[0].buffers == 2);
  std::map<std::string, int64_t> saving;
  for (const OomSaving& s : report->savings) saving[s.fix] = s.saving_bytes;
  CHECK(saving["fused"] == 5 * 384 * kMiB);
  CHECK(saving["remat"] == 5 * 384 * kMiB);
  CHECK(saving["rbg"] == 2 * 384 * kMiB);  // one bits buffer kept per two-buffer site
  CHECK(saving["replicated"] == 0);

  const RunOutput run = RunSpmdsim("oom " SPMDSIM_TESTDATA_DIR "/oom/seed_000.log");
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("5 hold random bits (1.88 GiB)") != std::string::npos);
  CHECK(RunSpmdsim("oom " SPMDSIM_TESTDATA_DIR "/manifest.json").exit_code == kExitParse);
}

TEST_CASE("rng sites on the seed-size dumps") {
  const RunOutput partitionable =
      RunSpmdsim("rng sites --format json " SPMDSIM_TESTDATA_DIR
                 "/dumps/seed_dp8_partitionable_noremat/"
                 "module_0000.jit_train_step.cpu_after_optimizations.txt.gz");
  REQUIRE(partitionable.exit_code == 0);
  const nlohmann::json p = nlohmann::json::parse(partitionable.out)["modules"][0];
  int64_t sites = 0;
  for (const auto& site : p["rng"]["sites"]) {
    if (site["purpose"] != "bits") continue;
    ++sites;
    CHECK(site["shape"] == nlohmann::json({128, 1024, 768}));
    CHECK(site["dtype"] == "u32");
    // Each dropout holds two u32[128,1024,768] loop-state arrays and their loop copies.
    int64_t big = 0;
    for (const auto& b : site["buffers"]) big += b["shape"] == "u32[128,1024,768]" ? 1 : 0;
    CHECK(big == 4);
  }
  CHECK(sites == 24);
  // Without remat the forward bits are read in the backward: a key residual per dropout.
  int64_t residuals = 0;
  for (const auto& f : p["findings"]) residuals += f["kind"] == "rng-key-residual" ? 1 : 0;
  CHECK(residuals == 24);

  const RunOutput replicated =
      RunSpmdsim("rng sites " SPMDSIM_TESTDATA_DIR
                 "/dumps/seed_dp8_replicated_remat/"
                 "module_0000.jit_train_step.cpu_after_optimizations.txt.gz");
  REQUIRE(replicated.exit_code == 0);
  CHECK(replicated.out.find("collectives caused: 6") != std::string::npos);
  CHECK(replicated.out.find("all-gather") != std::string::npos);
  CHECK(replicated.out.find("rng-replicated-collectives") != std::string::npos);
}

}  // namespace
}  // namespace spmdsim::analyzer
