// Runs the built `spmdsim rng bits` (SPMDSIM_BINARY) and compares its JSON with the tables the
// pinned JAX wrote (testdata/rng_tables), plus the usage errors a user can hit.
#include <array>
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "analyzer/model/rng_report.h"
#include "analyzer/test_support.h"

namespace spmdsim::analyzer {
namespace {

using nlohmann::json;

using test::RunOutput;
using test::RunSpmdsim;

json LoadTable(const std::string& name) {
  std::ifstream in(std::string(SPMDSIM_TESTDATA_DIR) + "/rng_tables/" + name + ".json");
  REQUIRE(in.good());
  return json::parse(in);
}

std::string ShapeArg(const json& shape) {
  std::string text;
  for (const json& dim : shape)
    text += (text.empty() ? "" : ",") + std::to_string(dim.get<int64_t>());
  return "'" + text + "'";
}

TEST_CASE("rng bits --format json equals every bits case of the replicated table") {
  const json table = LoadTable("replicated");
  for (const json& c : table.at("bits")) {
    const std::string args = "rng bits --seed " + std::to_string(c.at("seed").get<int64_t>()) +
                             " --shape " + ShapeArg(c.at("shape")) + " --bits " +
                             std::to_string(c.at("bit_width").get<int>()) +
                             " --mode replicated --format json";
    INFO(args);
    const RunOutput run = RunSpmdsim(args);
    REQUIRE(run.exit_code == 0);
    const json got = json::parse(run.out);
    CHECK(got.at("schema_version") == 1);
    CHECK(got.at("key") == c.at("key"));
    CHECK(got.at("values") == c.at("values"));
  }
}

TEST_CASE("rng bits --split and --fold-in equal the partitionable table") {
  const json table = LoadTable("partitionable");
  for (const json& c : table.at("split")) {
    const std::string args = "rng bits --key " + std::to_string(c.at("key")[0].get<uint32_t>()) +
                             "," + std::to_string(c.at("key")[1].get<uint32_t>()) + " --split " +
                             std::to_string(c.at("num").get<int64_t>()) +
                             " --mode partitionable --format json";
    INFO(args);
    const RunOutput run = RunSpmdsim(args);
    REQUIRE(run.exit_code == 0);
    CHECK(json::parse(run.out).at("keys") == c.at("keys"));
  }
  for (const json& c : table.at("fold_in")) {
    const std::string args = "rng bits --seed " + std::to_string(c.at("seed").get<int64_t>()) +
                             " --fold-in " + std::to_string(c.at("data").get<int64_t>()) +
                             " --mode partitionable --format json";
    INFO(args);
    const RunOutput run = RunSpmdsim(args);
    REQUIRE(run.exit_code == 0);
    CHECK(json::parse(run.out).at("keys") == json::array({c.at("result")}));
  }
}

TEST_CASE("rng bits text output is one value per line") {
  const RunOutput run = RunSpmdsim("rng bits --seed 1701 --shape 3 --bits 16 --mode replicated");
  CHECK(run.exit_code == 0);
  CHECK(run.out == "41682\n1300\n55017\n");
}

TEST_CASE(
    "rng sites --jax-version: releases before 0.5.0 all-reduce the concatenation, others "
    "all-gather") {
  CHECK(ParseJaxVersion("0.4.30") == std::array<int64_t, 3>{0, 4, 30});
  CHECK(ParseJaxVersion("v0.5") == std::array<int64_t, 3>{0, 5, 0});
  CHECK(ParseJaxVersion("0.4.36.dev20241122") == std::array<int64_t, 3>{0, 4, 36});
  CHECK(ParseJaxVersion("0.5.0rc1") == std::array<int64_t, 3>{0, 5, 0});
  for (const char* bad : {"", "0", "abc", "0.", ".4.30", "0.x", "-1.2"}) {
    INFO(bad);
    CHECK_FALSE(ParseJaxVersion(bad).has_value());
  }
  CHECK(ConcatLoweringOf("0.4.38") == passes::ConcatLowering::kAllReduce);
  CHECK(ConcatLoweringOf("0.5.0") == passes::ConcatLowering::kAllGather);
  CHECK(ConcatLoweringOf("0.12.0.1") == passes::ConcatLowering::kAllGather);
  CHECK(ConcatLoweringOf("") == passes::ConcatLowering::kAllGather);

  // The replicated what-if of the JAX 0.4.30 partitionable dump, with and without the version.
  const std::string dump = std::string(SPMDSIM_TESTDATA_DIR) +
                           "/dumps/jax04_cpu8_plain_dp_partitionable_remat "
                           "--module jit_train_step --stage after --format json";
  const auto replicated = [&](const std::string& extra) {
    const RunOutput run = RunSpmdsim("rng sites " + dump + extra);
    REQUIRE(run.exit_code == 0);
    return json::parse(run.out).at("modules").at(0).at("rng").at("totals").at("whatif").at(
        "replicated");
  };
  const json today = replicated("");
  const json old = replicated(" --jax-version 0.4.30");
  // Per site the all-reduce sends 2 x 7/8 of the 128 KiB concatenation instead of the two
  // gathers' 7/8 of it: 8 sites x 112 KiB more.
  CHECK(old.at("wire_bytes_per_device").get<int64_t>() -
            today.at("wire_bytes_per_device").get<int64_t>() ==
        8 * 114688);
  CHECK(old.at("memory_bytes").get<int64_t>() > today.at("memory_bytes").get<int64_t>());
  CHECK(RunSpmdsim("rng sites " + dump + " --jax-version abc").exit_code == 2);

  // oom: an OOM listing's site of one consumer keeps the zero buffer besides the all-reduce's
  // output (4n more) and sends the all-reduce's 2 (P-1)/P instead of the gathers' (P-1)/P of 4n.
  const std::string log =
      std::string(SPMDSIM_TESTDATA_DIR) + "/oom/seed_000.log --devices 8 --format json";
  const auto oom_site = [&](const std::string& extra) {
    const RunOutput run = RunSpmdsim("oom " + log + extra);
    REQUIRE(run.exit_code == 0);
    return json::parse(run.out).at("oom").at("sites").at(0);
  };
  const json site_today = oom_site("");
  const json site_old = oom_site(" --jax-version 0.4.38");
  const int64_t bits = 4 * site_today.at("global_elements").get<int64_t>();
  REQUIRE(bits > 0);
  CHECK(site_old.at("whatif").at("replicated").at("memory_bytes").get<int64_t>() -
            site_today.at("whatif").at("replicated").at("memory_bytes").get<int64_t>() ==
        bits);
  CHECK(site_old.at("whatif").at("replicated").at("wire_bytes_per_device").get<int64_t>() -
            site_today.at("whatif").at("replicated").at("wire_bytes_per_device").get<int64_t>() ==
        bits * 7 / 8);
  CHECK(RunSpmdsim("oom " + log + " --jax-version x").exit_code == 2);
  CHECK(RunSpmdsim("report --jax-version 0.x -o /dev/null").exit_code == 2);
}

TEST_CASE("rng bits refuses bad requests with exit code 2") {
  CHECK(RunSpmdsim("rng bits --seed 0 --shape 65536,65536 --mode partitionable").exit_code == 2);
  CHECK(RunSpmdsim("rng bits --seed 0 --shape 3,x --mode partitionable").exit_code == 2);
  CHECK(RunSpmdsim("rng bits --seed 0 --shape 3 --bits 12 --mode partitionable").exit_code == 2);
  CHECK(RunSpmdsim("rng bits --seed 0 --shape 3 --split 2 --mode partitionable").exit_code == 2);
  CHECK(RunSpmdsim("rng bits --seed 0 --shape 3").exit_code == 2);  // --mode is required
  CHECK(RunSpmdsim("rng bits --shape 3 --mode replicated").exit_code == 2);
  CHECK(RunSpmdsim("rng bits --seed 0 --fold-in 4294967296 --mode replicated").exit_code == 2);
  CHECK(RunSpmdsim("rng bits --seed 18446744073709551615 --shape 3 --mode replicated").exit_code ==
        2);
  CHECK(RunSpmdsim("rng").exit_code == 2);
}

}  // namespace
}  // namespace spmdsim::analyzer
