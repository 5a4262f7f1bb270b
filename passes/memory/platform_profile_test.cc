// Buffer sizes and alignments per platform. The TPU figures are XLA:TPU's own, read from the
// buffer-assignment files of the corpus and of probe compiles (docs/MEMORY.md): a 130-element
// tuple's table takes 1024 B and a 300-element one 1536 B (libtpu 0.12, v5e).
#include "passes/memory/platform_profile.h"

#include <catch2/catch.hpp>

#include "ir/attribute_parsers.h"

namespace spmdsim::passes {
namespace {

int64_t Bytes(Platform platform, const std::string& shape_text) {
  std::string error;
  const std::optional<ir::Shape> shape = ir::ParseShape(shape_text, &error);
  INFO(shape_text << " " << error);
  REQUIRE(shape);
  return PlatformProfile::For(platform).BufferBytes(*shape);
}

std::string Tuple(int elements) {
  std::string text = "(";
  for (int i = 0; i < elements; ++i)
    text += (i ? ", " : "") + std::string("f32[8,128]{1,0:T(8,128)}");
  return text + ")";
}

TEST_CASE("CPU and GPU size buffers as their shapes, tuples as 8-byte pointer tables") {
  for (Platform p : {Platform::kCpu, Platform::kGpu}) {
    CHECK(Bytes(p, "f32[3]{0}") == 12);
    CHECK(Bytes(p, "u32[]") == 4);
    CHECK(Bytes(p, "(f32[3]{0}, u32[])") == 16);
  }
  CHECK(PlatformProfile::For(Platform::kCpu).TempAlignment(0) == 64);
  CHECK(PlatformProfile::For(Platform::kGpu).TempAlignment(0) == 256);
}

TEST_CASE("XLA:TPU pads to whole tiles and allocates in 512-byte units") {
  CHECK(Bytes(Platform::kTpu, "f32[]{:T(128)}") == 512);
  CHECK(Bytes(Platform::kTpu, "f32[64,32]{0,1:T(8,128)}") == 32 * 128 * 4);
  CHECK(Bytes(Platform::kTpu, "bf16[2,32,128]{2,1,0:T(8,128)(2,1)S(1)}") == 2 * 32 * 128 * 2);
  // Untiled outside SMEM: T(8,128) all the same (a thread-local u32[] takes 4 KiB).
  CHECK(Bytes(Platform::kTpu, "f32[32,64]{0,1:S(1)}") == 32768);
  CHECK(Bytes(Platform::kTpu, "u32[]") == 4096);
  // SMEM holds scalars as they are.
  CHECK(Bytes(Platform::kTpu, "u32[]{:S(2)}") == 4);
}

TEST_CASE("XLA:TPU tuple tables are 4 bytes per element rounded up to 512") {
  CHECK(Bytes(Platform::kTpu, Tuple(2)) == 512);
  CHECK(Bytes(Platform::kTpu, Tuple(114)) == 512);
  CHECK(Bytes(Platform::kTpu, Tuple(130)) == 1024);
  CHECK(Bytes(Platform::kTpu, Tuple(300)) == 1536);
}

TEST_CASE("XLA:TPU alignment and names per memory space") {
  const PlatformProfile tpu = PlatformProfile::For(Platform::kTpu);
  CHECK(tpu.TempAlignment(0) == 16384);
  CHECK(tpu.TempAlignment(1) == 4096);
  CHECK(tpu.MemorySpaceName(0) == "HBM");
  CHECK(tpu.MemorySpaceName(1) == "VMEM");
  CHECK(tpu.MemorySpaceName(2) == "SMEM");
  CHECK(tpu.MemorySpaceName(6) == "S(6)");
  CHECK_FALSE(tpu.ReusesArgumentAndOutputAllocations());
  CHECK(PlatformProfile::For(Platform::kGpu).MemorySpaceName(1) == "collective");
}

TEST_CASE("platform names parse in any case and nothing else does") {
  CHECK(ParsePlatform("TPU") == Platform::kTpu);
  CHECK(ParsePlatform("gpu") == Platform::kGpu);
  CHECK(ParsePlatform("cpu") == Platform::kCpu);
  CHECK_FALSE(ParsePlatform("auto"));
  CHECK(PlatformName(Platform::kGpu) == "gpu");
}

}  // namespace
}  // namespace spmdsim::passes
