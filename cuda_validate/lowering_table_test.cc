// The four lowerings, run by the CPU backend through the per-element code the CUDA kernels share,
// against the JAX tables (testdata/rng_tables): each device's shard of the bits equals JAX's
// global bits sliced, and the dropout mask equals jax.random.bernoulli's.
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cuda_validate/backend.h"

namespace spmdsim::validate {
namespace {

using nlohmann::json;

json LoadTable(const std::string& name) {
  std::ifstream in(std::string(SPMDSIM_TESTDATA_DIR) + "/rng_tables/" + name + ".json");
  REQUIRE(in.good());
  return json::parse(in);
}

Pair32 KeyOf(const json& pair) {
  return Pair32{pair.at(0).get<uint32_t>(), pair.at(1).get<uint32_t>()};
}

std::vector<Lowering> LoweringsOf(const std::string& mode) {
  if (mode == "replicated") return {Lowering::kReplicated};
  return {Lowering::kPartitionableMaterialized, Lowering::kCustomCall, Lowering::kFused};
}

// Runs every shard of a site whose dim 0 splits `shards` ways and concatenates the outputs.
struct Global {
  std::vector<uint32_t> bits;
  std::string mask;
};
Global RunAllShards(Lowering lowering, const Site& base, int64_t shards) {
  Global global;
  auto backend = MakeCpuBackend(int64_t{1} << 30);
  for (int64_t k = 0; k < shards; ++k) {
    Site site = base;
    site.shards = shards;
    site.shard_index = k;
    std::string error;
    const std::optional<SiteSizes> sizes = ComputeSizes(site, error);
    INFO(error);
    REQUIRE(sizes.has_value());
    RunOptions options;
    options.timed_repetitions = 0;
    const LoweringRun run = backend->Run(MakePlan(lowering, site, *sizes), options);
    REQUIRE(run.error.empty());
    CHECK(run.measured_bytes == PredictedBytes(lowering, *sizes));
    global.bits.insert(global.bits.end(), run.bits.begin(), run.bits.end());
    for (const uint8_t m : run.mask) global.mask += m ? '1' : '0';
  }
  return global;
}

void CheckTable(const std::string& mode) {
  const json table = LoadTable(mode);
  int checked_bits = 0;
  for (const json& c : table.at("bits")) {
    const auto shape = c.at("shape").get<std::vector<int64_t>>();
    if (c.at("bit_width") != 32 || shape.empty() || shape[0] < 2) continue;
    const auto want = c.at("values").get<std::vector<uint32_t>>();
    if (want.empty()) continue;
    Site site;
    site.shape = shape;
    site.key = KeyOf(c.at("key"));
    for (const Lowering lowering : LoweringsOf(mode)) {
      for (const int64_t shards : {int64_t{1}, shape[0] % 7 == 0 ? int64_t{7} : shape[0]}) {
        INFO(mode << " " << LoweringName(lowering) << " seed " << c.at("seed") << " shape "
                  << c.at("shape") << " shards " << shards);
        CHECK(RunAllShards(lowering, site, shards).bits == want);
        ++checked_bits;
      }
    }
  }
  CHECK(checked_bits >= 6);
  for (const json& c : table.at("bernoulli")) {
    Site site;
    site.shape = c.at("shape").get<std::vector<int64_t>>();
    site.key = KeyOf(c.at("key"));
    const auto p_bits = c.at("p_f32_bits").get<uint32_t>();
    std::memcpy(&site.keep_prob, &p_bits, sizeof(float));
    const int64_t shards = site.shape[0] % 7 == 0 ? 7 : site.shape[0];
    for (const Lowering lowering : LoweringsOf(mode)) {
      INFO(mode << " " << LoweringName(lowering) << " bernoulli seed " << c.at("seed"));
      CHECK(RunAllShards(lowering, site, shards).mask == c.at("mask").get<std::string>());
    }
  }
}

TEST_CASE("Replicated lowering (a) reproduces JAX's bits and masks on every shard") {
  CheckTable("replicated");
}

TEST_CASE("Partitionable lowerings (b), (c), (d) reproduce JAX's bits and masks on every shard") {
  CheckTable("partitionable");
}

}  // namespace
}  // namespace spmdsim::validate
