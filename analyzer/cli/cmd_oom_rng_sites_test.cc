// `spmdsim oom` on the OOM listing of user story 000 (testdata/oom/seed_000.log) and on the
// PaliGemma log, and `spmdsim rng sites` on the seed-size dumps: the random buffers in the
// listing's vocabulary, their total, what each fix would save (the same RNG model in both
// commands), and the collectives replicated mode causes.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "analyzer/cli/command.h"
#include "analyzer/model/oom_report.h"
#include "analyzer/test_support.h"
#include "dump/file_reader.h"

namespace spmdsim::analyzer {
namespace {

using test::RunOutput;
using test::RunSpmdsim;

constexpr int64_t kMiB = int64_t{1} << 20;

TEST_CASE("oom listing of story 000: random buffers total savings") {
  std::string error;
  const dump::DumpResult<std::string> text =
      dump::ReadFileContents(std::string(SPMDSIM_TESTDATA_DIR) + "/oom/seed_000.log");
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
    CHECK(b.phase == passes::SitePhase::kForward);
    CHECK(b.source == "stochastic.py:76");
  }
  CHECK(report->buffers[0].label == "custom-call");
  CHECK(report->buffers[2].role == "counters (iota_2x32_shape)");
  CHECK(report->random_bytes == 5 * 384 * kMiB);
  REQUIRE(report->sites.size() == 3);  // block_0/mlp_dropout, block_11/mlp_dropout, block_0/att
  CHECK(report->sites[0].buffers == 2);
  std::map<std::string, std::optional<int64_t>> saving;
  for (const OomSaving& s : report->savings) saving[s.fix] = s.saving_bytes;
  CHECK(saving["fused"] == 5 * 384 * kMiB);
  CHECK(saving["remat"] == 5 * 384 * kMiB);
  // rbg and replicated make global bits: without the device count they are not figured.
  CHECK_FALSE(saving["rbg"]);
  CHECK_FALSE(saving["replicated"]);
  CHECK_FALSE(report->sites[0].whatif);

  const RunOutput run = RunSpmdsim("oom " SPMDSIM_TESTDATA_DIR "/oom/seed_000.log");
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("random bits: 5 of the listed buffers (1.88 GiB), 3 sites") !=
        std::string::npos);
  CHECK(RunSpmdsim("oom " SPMDSIM_TESTDATA_DIR "/manifest.json").exit_code == kExitParse);
  CHECK(RunSpmdsim("oom " SPMDSIM_TESTDATA_DIR "/oom/seed_000.log --dump /nonexistent").exit_code ==
        kExitUsage);
}

TEST_CASE("oom on the paligemma log: one listing the logits first the failed allocation") {
  const RunOutput text = RunSpmdsim("oom " SPMDSIM_TESTDATA_DIR "/oom/paligemma_gpu.log");
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("failed allocation: 2110783616 B (1.97 GiB)") != std::string::npos);
  CHECK(text.out.find("listing: 6 peak buffers, 8455905296 B (7.88 GiB); 1 repeat of the same "
                      "listing skipped (line 69)") != std::string::npos);
  CHECK(text.out.find("largest: Buffer 1, 5250015232 B (4.89 GiB) f32[5104,257152], output") !=
        std::string::npos);
  // The categories come before the random bits, and lead with the logits.
  const size_t categories = text.out.find("largest buffers by category:\n  output ");
  CHECK(categories != std::string::npos);
  CHECK(categories < text.out.find("no buffer in the listing holds random bits"));

  const RunOutput json =
      RunSpmdsim("oom --format json " SPMDSIM_TESTDATA_DIR "/oom/paligemma_gpu.log");
  REQUIRE(json.exit_code == 0);
  const nlohmann::json oom = nlohmann::json::parse(json.out)["oom"];
  CHECK(oom["buffer_count"] == 6);
  CHECK(oom["repeats_skipped"] == 1);
  CHECK(oom["total_bytes"] == 8455905296);
  CHECK(oom["failed_allocation_bytes"] == 2110783616);
  CHECK(oom["failed_allocation_exact"] == true);
  CHECK(oom["stats"].size() == 7);
  CHECK(oom["categories"][0]["category"] == "output");
  CHECK(oom["categories"][0]["bytes"] == 5250015232);
  CHECK(oom["buffers"][0]["size_bytes"] == 5250015232);
  CHECK(oom["buffers"][0]["size_from"] == "shape");
  CHECK(oom["buffers"][2]["entry_parameter"] == "f16[2048,257152]");
  CHECK(oom["buffers"][2]["category"] == "parameter");
  CHECK(oom["capacity"].is_null());
}

// One model of what each RNG lowering materializes (passes/rng/rng_whatif.h): `oom` on story 000's
// listing with the seed dump beside it and `rng sites` on that dump give the same figures.
TEST_CASE("oom and rng sites give the same rbg figure on the seed dump") {
  const std::string dump = SPMDSIM_TESTDATA_DIR "/dumps/seed_dp8_partitionable_remat";
  const RunOutput oom_run =
      RunSpmdsim("oom --format json " SPMDSIM_TESTDATA_DIR "/oom/seed_000.log --dump " + dump);
  REQUIRE(oom_run.exit_code == 0);
  const nlohmann::json oom = nlohmann::json::parse(oom_run.out)["oom"];
  const RunOutput sites_run =
      RunSpmdsim("rng sites --format json " + dump +
                 "/module_0000.jit_train_step.cpu_after_optimizations.txt.gz");
  REQUIRE(sites_run.exit_code == 0);
  const nlohmann::json rng = nlohmann::json::parse(sites_run.out)["modules"][0]["rng"];

  // u32[128,1024,768] per device on 8 devices: rbg makes the device's piece where XLA shards the
  // generator, the global u32[1024,1024,768] where it replicates it.
  constexpr int64_t kRbgSharded = int64_t{128} * 1024 * 768 * 4;
  constexpr int64_t kRbg = int64_t{1024} * 1024 * 768 * 4;
  constexpr int64_t kPartitionable = 4 * int64_t{128} * 1024 * 768 * 4;
  CHECK(oom["devices"] == 8);
  REQUIRE(oom["sites"].size() == 3);
  for (const auto& site : oom["sites"]) {
    CHECK(site["whatif"]["rbg"]["memory_bytes"] == kRbgSharded);
    CHECK(site["whatif"]["rbg"]["bounds"]["memory_bytes_high"] == kRbg);
    CHECK(site["whatif"]["partitionable"]["memory_bytes"] == kPartitionable);
  }
  int64_t bits_sites = 0;
  int64_t one_consumer = 0;
  for (const auto& site : rng["sites"]) {
    if (site["purpose"] != "bits") continue;
    ++bits_sites;
    CHECK(site["whatif"]["rbg"]["memory_bytes"] == kRbgSharded);
    CHECK(site["whatif"]["rbg"]["bounds"]["memory_bytes_high"] == kRbg);
    CHECK(site["whatif"]["partitionable"]["memory_bytes"] == kPartitionable);
    // Replicated mode also materializes the concatenated halves where several instructions
    // read the bits; the listing cannot say, so `oom` counts one consumer.
    if (site["consumers"].size() == 1) {
      ++one_consumer;
      CHECK(site["whatif"]["replicated"] == oom["sites"][0]["whatif"]["replicated"]);
    }
  }
  CHECK(bits_sites == 48);
  CHECK(one_consumer == 24);
  // rbg costs more than the listed bits: never recommended here (it was "saves 768 MiB").
  CHECK(oom["savings"]["rbg"]["materialized_bytes"] == 3 * kRbg);
  CHECK(oom["savings"]["rbg"]["saving_bytes"] == 5 * 384 * kMiB - 3 * kRbg);
  CHECK(oom["savings"]["rbg"]["recommended"] == false);
  // The dump is rematerialized: remat is not recommended.
  CHECK(oom["rematerialized"] == true);
  CHECK(oom["savings"]["remat"]["recommended"] == false);
  CHECK(oom["savings"]["remat"]["saving_bytes"] == 0);
  CHECK(oom["savings"]["fused"]["recommended"] == true);

  // --devices gives the same figures without the dump.
  const RunOutput devices =
      RunSpmdsim("oom --format json --devices 8 " SPMDSIM_TESTDATA_DIR "/oom/seed_000.log");
  REQUIRE(devices.exit_code == 0);
  const nlohmann::json by_flag = nlohmann::json::parse(devices.out)["oom"];
  CHECK(by_flag["sites"][0]["whatif"] == oom["sites"][0]["whatif"]);
  CHECK(by_flag["savings"]["remat"]["recommended"] == true);  // nothing says remat here
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

namespace spmdsim::analyzer {
namespace {

// A site read by a hundred fusions gets one short consumers line: consumers that differ only in
// their instructions' numbers are counted as one kind, and the counts add up to JSON's list.
TEST_CASE("rng sites text: consumers of one kind are folded into a count") {
  const std::string dir = std::string(SPMDSIM_TESTDATA_DIR) +
                          "/dumps/jax012_gpu8_seed_flax_dp_partitionable_kernel_remat";
  const RunOutput text = RunSpmdsim("rng sites " + dir + " --stage after");
  const RunOutput json = RunSpmdsim("rng sites " + dir + " --stage after --format json");
  REQUIRE(text.exit_code == 0);
  REQUIRE(json.exit_code == 0);
  const nlohmann::json sites = nlohmann::json::parse(json.out)["modules"][0]["rng"]["sites"];
  size_t most = 0;
  for (const auto& site : sites) most = std::max(most, site["consumers"].size());
  REQUIRE(most >= 50);  // the site the fold is for
  size_t folded_lines = 0;
  size_t start = 0;
  while ((start = text.out.find("    consumers: ", start)) != std::string::npos) {
    const size_t end = text.out.find('\n', start);
    const std::string line = text.out.substr(start, end - start);
    start = end;
    CHECK(line.size() < 600);
    if (line.find(" x ") == std::string::npos) continue;
    ++folded_lines;
    // The counts of this line add up to one site's consumers.
    size_t total = 0;
    size_t kinds = 0;
    for (size_t at = line.find(": ") + 2; at < line.size();) {
      const size_t next = std::min(line.find("; ", at), line.size());
      const std::string item = line.substr(at, next - at);
      const size_t x = item.find(" x ");
      const bool counted = x != std::string::npos && item.find_first_not_of("0123456789") == x;
      total += counted ? std::stoul(item.substr(0, x)) : 1;
      ++kinds;
      at = next + 2;
    }
    bool matches_a_site = false;
    for (const auto& site : sites) matches_a_site |= site["consumers"].size() == total;
    INFO(line);
    CHECK(matches_a_site);
    CHECK(kinds <= 6);
  }
  CHECK(folded_lines > 0);
}

}  // namespace
}  // namespace spmdsim::analyzer

namespace spmdsim::analyzer {
namespace {

// `oom --dump` and `analyze` judge one module: the random bits they count at its peak are the
// same bytes (oom lists 20 buffers, but counts among all of them).
TEST_CASE("oom --dump counts the random bits at the peak as analyze does") {
  const std::string dir = std::string(SPMDSIM_TESTDATA_DIR) +
                          "/dumps/jax012_gpu8_seed_flax_dp_partitionable_kernel_remat";
  const std::string log = std::string(SPMDSIM_TESTDATA_DIR) + "/oom/seed_000.log";
  const RunOutput oom = RunSpmdsim("oom " + log + " --dump " + dir + " --format json");
  const RunOutput analyze =
      RunSpmdsim("analyze " + dir + " --stage after --format json --timeline-points 1");
  REQUIRE(oom.exit_code == 0);
  REQUIRE(analyze.exit_code == 0);
  const nlohmann::json from_oom = nlohmann::json::parse(oom.out).at("fit");
  const nlohmann::json from_analyze =
      nlohmann::json::parse(analyze.out).at("modules").at(0).at("fit");
  REQUIRE(from_analyze.at("fits") == false);
  CHECK(from_analyze.at("random_bits_at_peak_bytes").get<int64_t>() > 0);
  CHECK(from_oom.at("random_bits_at_peak_bytes") == from_analyze.at("random_bits_at_peak_bytes"));
}

}  // namespace
}  // namespace spmdsim::analyzer
