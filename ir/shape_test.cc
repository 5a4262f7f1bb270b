#include "ir/shape.h"

#include <catch2/catch.hpp>

#include "ir/attribute_parsers.h"

namespace spmdsim::ir {
namespace {

Shape Parse(std::string_view text) {
  std::string error;
  auto shape = ParseShape(text, &error);
  INFO(text << ": " << error);
  REQUIRE(shape.has_value());
  return *shape;
}

TEST_CASE("array shapes, sizes and round trip") {
  const Shape s = Parse("u32[128,1024,768]{2,1,0}");
  CHECK(s.element_type() == PrimitiveType::kU32);
  CHECK(s.ElementCount() == 128 * 1024 * 768);
  CHECK(s.ByteSize() == 402653184);  // 384 MiB, the seed's buffer
  CHECK(s.ToString() == "u32[128,1024,768]{2,1,0}");
  CHECK(Parse("pred[10]").ByteSize() == 10);
  CHECK(Parse("bf16[3,5]").ByteSize() == 30);
  CHECK(Parse("c128[2]").ByteSize() == 32);
  CHECK(Parse("f32[]").ByteSize() == 4);
  CHECK(Parse("f8e4m3fn[16]").ByteSize() == 16);
  CHECK(Parse("f8e4m3b11fnuz[2]").ByteSize() == 2);
  CHECK(Parse("s4[7]").ByteSize() == 7);          // unpacked: a byte each
  CHECK(Parse("s4[7]{0:E(4)}").ByteSize() == 4);  // packed: ceil(28 / 8)
  CHECK(Parse("f32[0,5]").ByteSize() == 0);
}

TEST_CASE("tuples, tokens, dynamic dims and layouts") {
  const Shape t = Parse("(f32[2]{0}, (s32[], token[]), u32[4])");
  REQUIRE(t.IsTuple());
  CHECK(t.ByteSize() == 24);  // three pointers
  CHECK(t.LeafBytes() == 8 + 4 + 16);
  CHECK(t.Subshape({1, 0})->element_type() == PrimitiveType::kS32);
  CHECK(t.Subshape({3}) == nullptr);
  CHECK(t.ToString() == "(f32[2]{0}, (s32[], token[]), u32[4])");

  const Shape d = Parse("f32[<=10,4]{1,0}");
  CHECK(d.IsDynamicDim(0));
  CHECK_FALSE(d.IsDynamicDim(1));
  CHECK(d.ToString() == "f32[<=10,4]{1,0}");
  CHECK(Parse("f32[?,3]").ToString() == "f32[?,3]");

  const Shape tiled = Parse("f32[8,128]{1,0:T(8,128)(2,1)S(1)}");
  CHECK(tiled.layout().tiles.size() == 2);
  CHECK(tiled.layout().memory_space == 1);
  CHECK(tiled.ToString() == "f32[8,128]{1,0:T(8,128)(2,1)S(1)}");
  CHECK(Parse("bf16[4]{0:T(*,128)}").layout().tiles[0].dims[0] == Tile::kCombinedDim);
  CHECK(Parse("f32[4]{0:D(C)L(s32)#(s32)}").layout().other_fields == "D(C)L(s32)#(s32)");
}

TEST_CASE("malformed shapes are rejected with a reason") {
  std::string error;
  CHECK_FALSE(ParseShape("f33[2]", &error));
  CHECK(error.find("unknown element type 'f33'") != std::string::npos);
  CHECK_FALSE(ParseShape("f32[2", &error));
  CHECK_FALSE(ParseShape("f32[-1]", &error));
  CHECK_FALSE(ParseShape("f32[4611686018427387904,4]", &error));
  CHECK(error.find("too large") != std::string::npos);
  CHECK_FALSE(ParseShape("f32[2305843009213693952]", &error));  // 2^61 x 4 bytes overflows
  CHECK_FALSE(ParseShape(std::string(200, '(') + std::string(200, ')'), &error));
  CHECK(error.find("nesting too deep") != std::string::npos);
}

}  // namespace
}  // namespace spmdsim::ir

namespace spmdsim::ir {
namespace {

// XLA:TPU's buffer assignment sizes a tiled buffer by whole tiles (sizes as its
// *-buffer-assignment.txt lists them for these shapes in testdata/dumps/jax012_tpu*).
TEST_CASE("a tiled layout's buffer holds whole tiles") {
  CHECK(Parse("f32[]{:T(128)}").ByteSize() == 512);               // a scalar: one 128-tile
  CHECK(Parse("f32[256,64]{0,1:T(8,128)}").ByteSize() == 65536);  // physical [64,256]
  CHECK(Parse("f32[64,256]{1,0:T(8,128)}").ByteSize() == 65536);
  CHECK(Parse("f32[128,64]{0,1:T(8,128)}").ByteSize() == 32768);    // [64,128]: no padding
  CHECK(Parse("f32[64,64]{1,0:T(8,128)}").ByteSize() == 32768);     // 64 -> 128 lanes
  CHECK(Parse("bf16[3,5]{1,0:T(8,128)(2,1)}").ByteSize() == 2048);  // one 8x128 tile
  CHECK(Parse("f32[3]{0:T(256)}").ByteSize() == 1024);
  // The data is what it was: collectives move the unpadded bytes.
  CHECK(Parse("f32[64,64]{1,0:T(8,128)}").LeafDataBytes() == 16384);
  CHECK(Parse("f32[64,64]{1,0:T(8,128)}").ElementCount() == 4096);
  CHECK(Parse("f32[64,64]{1,0}").ByteSize() == 16384);  // no tiles, no padding
}

}  // namespace
}  // namespace spmdsim::ir
