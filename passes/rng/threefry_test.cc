// Known answers of REFERENCE.md sections 1-2: the three raw Threefry-2x32 vectors (the Random123
// known-answer tests JAX's own test suite uses) and every JAX known answer listed there.
#include "passes/rng/threefry.h"

#include <catch2/catch.hpp>
#include <cstring>

namespace spmdsim::passes {
namespace {

using threefry::Threefry2x32;

std::vector<uint64_t> Bits(int64_t seed, int width, RngMode mode) {
  const BitsResult result = RandomBits(KeyFromSeed(seed), {3}, width, mode);
  REQUIRE(result.error.empty());
  return result.values;
}

TEST_CASE("Threefry2x32 matches the three raw known-answer vectors") {
  CHECK(Threefry2x32({0, 0}, {0, 0}) == Pair32{0x6b200159, 0x99ba4efe});
  CHECK(Threefry2x32({0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        Pair32{0x1cb996fc, 0xbb002be7});
  CHECK(Threefry2x32({0x13198a2e, 0x03707344}, {0x243f6a88, 0x85a308d3}) ==
        Pair32{0xc4923a9c, 0x483df7a0});
}

TEST_CASE("Replicated-mode known answers of JAX") {
  const RngMode mode = RngMode::kReplicated;
  const KeysResult split = Split(KeyFromSeed(0), 4, mode);
  REQUIRE(split.error.empty());
  CHECK(split.keys == std::vector<Pair32>{{2285895361, 1501764800},
                                          {1518642379, 4090693311},
                                          {433833334, 4221794875},
                                          {839183663, 3740430601}});
  CHECK(FoldIn(KeyFromSeed(0), 4) == Pair32{2285895361, 433833334});
  CHECK(Bits(1701, 8, mode) == std::vector<uint64_t>{216, 115, 43});
  CHECK(Bits(1701, 16, mode) == std::vector<uint64_t>{41682, 1300, 55017});
  CHECK(Bits(1701, 32, mode) == std::vector<uint64_t>{56197195, 4200222568, 961309823});
  CHECK(Bits(1701, 64, mode) ==
        std::vector<uint64_t>{3982329540505020460u, 16822122385914693683u, 7882654074788531506u});
}

TEST_CASE("Partitionable-mode known answers of JAX") {
  const RngMode mode = RngMode::kPartitionable;
  CHECK(Bits(0, 32, mode) == std::vector<uint64_t>{0xf29a4fa7, 0xfa843692, 0x55110e28});
  CHECK(Bits(0, 64, mode) ==
        std::vector<uint64_t>{0x6b20015999ba4efe, 0x375f238fcddb151d, 0xf71f4ea9a20e4081});
  const KeysResult split = Split(KeyFromSeed(0), 2, mode);
  REQUIRE(split.error.empty());
  CHECK(split.keys == std::vector<Pair32>{{1797259609, 2579123966}, {928981903, 3453687069}});
  // fold_in does not depend on the mode.
  CHECK(FoldIn(KeyFromSeed(0), 4) == Pair32{2285895361, 433833334});
  // uniform f32 of PRNGKey(0), shape (): 0.947667 (JAX prints 6 significant digits).
  const UniformResult uniform = UniformF32(KeyFromSeed(0), {}, mode);
  REQUIRE(uniform.values.size() == 1);
  CHECK(uniform.values[0] == Approx(0.947667).epsilon(1e-6));
}

TEST_CASE("Seeds follow JAX's int64 and int32 conversions") {
  CHECK(KeyFromSeed(0) == Pair32{0, 0});
  CHECK(KeyFromSeed(-1) == Pair32{0xffffffff, 0xffffffff});
  CHECK(KeyFromSeed(int64_t{1} << 32) == Pair32{1, 0});
  CHECK(KeyFromSeed(-1, SeedWidth::k32) == Pair32{0, 0xffffffff});
  CHECK(KeyFromSeed((int64_t{1} << 32) + 5, SeedWidth::k32) == Pair32{0, 5});
}

TEST_CASE("Requests JAX would refuse or serve differently are refused") {
  CHECK_FALSE(RandomBits({0, 0}, {3}, 12, RngMode::kPartitionable).error.empty());
  CHECK_FALSE(RandomBits({0, 0}, {-1}, 32, RngMode::kPartitionable).error.empty());
  CHECK_FALSE(RandomBits({0, 0}, {INT64_MAX, 2}, 32, RngMode::kPartitionable).error.empty());
  // More than 2^32 - 2 replicated counter words take JAX's multi-block path.
  CHECK_FALSE(RandomBits({0, 0}, {int64_t{1} << 31}, 64, RngMode::kReplicated).error.empty());
  CHECK_FALSE(Split({0, 0}, -1, RngMode::kReplicated).error.empty());
  CHECK_FALSE(Bits32Range({0, 0}, 10, RngMode::kReplicated, 5, 11).error.empty());
}

TEST_CASE("Bits32Range equals the sliced whole array in both modes") {
  for (const RngMode mode : {RngMode::kPartitionable, RngMode::kReplicated}) {
    for (const int64_t total : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{64}, int64_t{1001}}) {
      const BitsResult whole = RandomBits({0x1234, 0xabcdef}, {total}, 32, mode);
      REQUIRE(whole.error.empty());
      for (const int64_t begin : {int64_t{0}, total / 3, total - 1}) {
        const int64_t end = std::min(total, begin + total / 2 + 1);
        const BitsResult part = Bits32Range({0x1234, 0xabcdef}, total, mode, begin, end);
        REQUIRE(part.error.empty());
        CHECK(part.values ==
              std::vector<uint64_t>(whole.values.begin() + begin, whole.values.begin() + end));
      }
    }
  }
}

}  // namespace
}  // namespace spmdsim::passes
