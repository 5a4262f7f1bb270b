#include "ir/c_unescape.h"

#include <catch2/catch.hpp>

namespace spmdsim::ir {
namespace {

TEST_CASE("CUnescape decodes XLA's C escapes in names") {
  // As testdata/dumps/*/before_optimizations.txt writes JAX's parameter paths.
  CHECK(CUnescape(R"(jit(train_step)/params[\'blocks\'][1][\'b1\'])") ==
        "jit(train_step)/params['blocks'][1]['b1']");
  CHECK(CUnescape(R"(a\"b\\c\nd\te)") == "a\"b\\c\nd\te");
  CHECK(CUnescape(R"(\101\x42\x4a)") == "ABJ");
  CHECK(CUnescape("plain/op_name") == "plain/op_name");
  // Kept as written: an unknown escape, a lone trailing backslash, \x without hex digits.
  CHECK(CUnescape(R"(a\qb)") == R"(a\qb)");
  CHECK(CUnescape("end\\") == "end\\");
  CHECK(CUnescape(R"(\xZ)") == R"(\xZ)");
}

}  // namespace
}  // namespace spmdsim::ir
