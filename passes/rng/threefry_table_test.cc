// Every value of testdata/rng_tables (written by tools/gen_rng_tables.py with the pinned JAX)
// against the whole-array functions of passes/rng/threefry.h and the per-element formulas of
// passes/rng/threefry_core.h that the CUDA kernels use.
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "passes/rng/threefry.h"

namespace spmdsim::passes {
namespace {

using nlohmann::json;

json LoadTable(const std::string& name) {
  const std::string path = std::string(SPMDSIM_TESTDATA_DIR) + "/rng_tables/" + name + ".json";
  std::ifstream in(path);
  REQUIRE(in.good());
  return json::parse(in);
}

Pair32 KeyOf(const json& pair) {
  return Pair32{pair.at(0).get<uint32_t>(), pair.at(1).get<uint32_t>()};
}

RngMode ModeOf(const json& table) {
  const std::optional<RngMode> mode = ParseRngMode(table.at("mode").get<std::string>());
  REQUIRE(mode.has_value());
  return *mode;
}

// Per-element value of a bits case from threefry_core.h alone.
uint64_t ElementBits(RngMode mode, Pair32 key, int64_t n, int width, uint64_t i) {
  if (mode == RngMode::kPartitionable) {
    if (width == 64) return threefry::PartitionableBits64At(key, i);
    const uint32_t bits = threefry::PartitionableBits32At(key, i);
    return width == 32 ? bits : bits & ((1u << width) - 1u);
  }
  const auto words = static_cast<uint64_t>((n * width + 31) / 32);
  if (width == 64) {
    return (static_cast<uint64_t>(threefry::ReplicatedWordAt(key, words, i)) << 32) |
           threefry::ReplicatedWordAt(key, words, static_cast<uint64_t>(n) + i);
  }
  const uint64_t per_word = 32 / static_cast<uint64_t>(width);
  const uint32_t word = threefry::ReplicatedWordAt(key, words, i / per_word);
  return (word >> ((i % per_word) * static_cast<uint64_t>(width))) & ((uint64_t{1} << width) - 1);
}

void CheckModeTable(const std::string& name) {
  const json table = LoadTable(name);
  const RngMode mode = ModeOf(table);
  std::map<int, size_t> values_per_width;
  for (const json& c : table.at("bits")) {
    const Pair32 key = KeyOf(c.at("key"));
    const auto shape = c.at("shape").get<std::vector<int64_t>>();
    const int width = c.at("bit_width").get<int>();
    const auto want = c.at("values").get<std::vector<uint64_t>>();
    INFO(name << " bits seed " << c.at("seed") << " shape " << c.at("shape") << " width " << width);
    const BitsResult got = RandomBits(key, shape, width, mode);
    REQUIRE(got.error.empty());
    CHECK(got.values == want);
    const auto n = static_cast<int64_t>(want.size());
    size_t element_mismatches = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (ElementBits(mode, key, n, width, static_cast<uint64_t>(i)) !=
          want[static_cast<size_t>(i)]) {
        ++element_mismatches;
      }
    }
    CHECK(element_mismatches == 0);
    if (width == 32) {
      const BitsResult tail = Bits32Range(key, n, mode, n / 2, n);
      REQUIRE(tail.error.empty());
      CHECK(tail.values == std::vector<uint64_t>(want.begin() + n / 2, want.end()));
    }
    values_per_width[width] += want.size();
  }
  // The bar: at least 1,000 values per mode and bit width.
  for (const int width : {8, 16, 32, 64}) CHECK(values_per_width[width] >= 1000);

  for (const json& c : table.at("split")) {
    INFO(name << " split seed " << c.at("seed") << " num " << c.at("num"));
    const KeysResult got = Split(KeyOf(c.at("key")), c.at("num").get<int64_t>(), mode);
    REQUIRE(got.error.empty());
    std::vector<Pair32> want;
    for (const json& k : c.at("keys")) want.push_back(KeyOf(k));
    CHECK(got.keys == want);
  }
  for (const json& c : table.at("fold_in")) {
    INFO(name << " fold_in seed " << c.at("seed") << " data " << c.at("data"));
    CHECK(FoldIn(KeyOf(c.at("key")), c.at("data").get<uint32_t>()) == KeyOf(c.at("result")));
  }
  for (const json& c : table.at("uniform_f32")) {
    INFO(name << " uniform seed " << c.at("seed") << " shape " << c.at("shape"));
    const UniformResult got =
        UniformF32(KeyOf(c.at("key")), c.at("shape").get<std::vector<int64_t>>(), mode);
    REQUIRE(got.error.empty());
    std::vector<uint32_t> got_bits(got.values.size());
    if (!got.values.empty()) std::memcpy(got_bits.data(), got.values.data(), got.values.size() * 4);
    CHECK(got_bits == c.at("f32_bits").get<std::vector<uint32_t>>());
  }
  for (const json& c : table.at("bernoulli")) {
    INFO(name << " bernoulli seed " << c.at("seed") << " shape " << c.at("shape"));
    // bernoulli(key, p, shape) = uniform(key, shape, float32) < p.
    const auto p_bits = c.at("p_f32_bits").get<uint32_t>();
    float p = 0;
    std::memcpy(&p, &p_bits, sizeof(p));
    const UniformResult got =
        UniformF32(KeyOf(c.at("key")), c.at("shape").get<std::vector<int64_t>>(), mode);
    REQUIRE(got.error.empty());
    std::string mask;
    for (const float u : got.values) mask += u < p ? '1' : '0';
    CHECK(mask == c.at("mask").get<std::string>());
  }
}

TEST_CASE("Partitionable-mode tables of the pinned JAX") { CheckModeTable("partitionable"); }

TEST_CASE("Replicated-mode tables of the pinned JAX") { CheckModeTable("replicated"); }

TEST_CASE("Seed tables of the pinned JAX, with and without jax_enable_x64") {
  const json table = LoadTable("seeds");
  REQUIRE(table.at("seeds").size() >= 20);
  for (const json& row : table.at("seeds")) {
    INFO("seed " << row.at("seed") << " x64 " << row.at("x64"));
    const SeedWidth width = row.at("x64").get<bool>() ? SeedWidth::k64 : SeedWidth::k32;
    CHECK(KeyFromSeed(row.at("seed").get<int64_t>(), width) == KeyOf(row.at("key")));
  }
}

}  // namespace
}  // namespace spmdsim::passes
