// Sizes, byte formulas and plans of the four lowerings.
#include "cuda_validate/site.h"

#include <catch2/catch.hpp>

namespace spmdsim::validate {
namespace {

SiteSizes SizesOf(std::vector<int64_t> shape, int64_t shards, int64_t index = 0) {
  Site site;
  site.shape = std::move(shape);
  site.shards = shards;
  site.shard_index = index;
  std::string error;
  const std::optional<SiteSizes> sizes = ComputeSizes(site, error);
  INFO(error);
  REQUIRE(sizes.has_value());
  return *sizes;
}

TEST_CASE("A batch-sharded site's local shard and offsets") {
  const SiteSizes s = SizesOf({16, 32, 64}, 8, 5);
  CHECK(s.global_elements == 32768);
  CHECK(s.local_elements == 4096);
  CHECK(s.shard_offset == 5 * 4096);
  CHECK(s.padded_words == 32768);
  CHECK(s.local_shape == std::vector<int64_t>{2, 32, 64});
  // Odd element counts are padded in replicated mode.
  CHECK(SizesOf({9, 7, 5}, 3).padded_words == 316);
}

TEST_CASE("Predicted bytes per lowering follow README.md") {
  const SiteSizes s = SizesOf({16, 32, 64}, 8);
  CHECK(PredictedBytes(Lowering::kReplicated, s) == 8 * 32768 + 4096);
  CHECK(PredictedBytes(Lowering::kPartitionableMaterialized, s) == 17 * 4096);
  CHECK(PredictedBytes(Lowering::kCustomCall, s) == 25 * 4096);
  CHECK(PredictedBytes(Lowering::kFused, s) == 4096);
  // Replicated generation grows with the mesh; the others shrink.
  const SiteSizes wide = SizesOf({16, 32, 64}, 16);
  CHECK(PredictedBytes(Lowering::kReplicated, wide) == 8 * 32768 + 2048);
  CHECK(PredictedBytes(Lowering::kPartitionableMaterialized, wide) == 17 * 2048);
}

TEST_CASE("Every plan allocates exactly its predicted bytes and ends in the mask") {
  for (const auto& [shape, shards] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
           {{16, 32, 64}, 8}, {{9, 7, 5}, 3}, {{1001}, 7}, {{1}, 1}}) {
    Site site;
    site.shape = shape;
    site.shards = shards;
    std::string error;
    const SiteSizes sizes = *ComputeSizes(site, error);
    for (const Lowering lowering : kAllLowerings) {
      INFO(LoweringName(lowering));
      const LoweringPlan plan = MakePlan(lowering, site, sizes);
      CHECK(plan.PlannedBytes() == PredictedBytes(lowering, sizes));
      REQUIRE_FALSE(plan.buffers.empty());
      CHECK(plan.buffers.back().role == BufferRole::kMask);
      CHECK(plan.stages.back().count == sizes.local_elements);
    }
  }
}

TEST_CASE("Lowering names and the site modes spmdsim writes") {
  for (const Lowering lowering : kAllLowerings) {
    CHECK(ParseLowering(LoweringName(lowering)) == lowering);
  }
  CHECK(ParseLowering("partitionable") == Lowering::kPartitionableMaterialized);
  CHECK(ParseLowering("cu_threefry2x32") == Lowering::kCustomCall);
  CHECK_FALSE(ParseLowering("rbg").has_value());
}

TEST_CASE("Sites a device cannot hold as described are refused with a reason") {
  std::string error;
  Site site;
  site.shape = {10, 4};
  site.shards = 4;
  CHECK_FALSE(ComputeSizes(site, error).has_value());
  CHECK(error.find("split evenly") != std::string::npos);
  site.shards = 2;
  site.shard_index = 2;
  CHECK_FALSE(ComputeSizes(site, error).has_value());
  site.shard_index = 0;
  site.shape = {};
  CHECK_FALSE(ComputeSizes(site, error).has_value());
  site.shape = {INT64_MAX / 2, 4};
  CHECK_FALSE(ComputeSizes(site, error).has_value());
  site.shape = {int64_t{1} << 33};
  const std::optional<SiteSizes> big = ComputeSizes(site, error);
  REQUIRE(big.has_value());
  CHECK_FALSE(LoweringLimitError(Lowering::kReplicated, *big).empty());
  CHECK(LoweringLimitError(Lowering::kFused, *big).empty());
}

}  // namespace
}  // namespace spmdsim::validate
