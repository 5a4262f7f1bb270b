// ir::JsonNestingDepth (ir/limits.h): the nesting of JSON text outside its strings, what the
// readers of JSON files check before parsing them.
#include <catch2/catch.hpp>
#include <string>

#include "ir/limits.h"

namespace spmdsim::ir {
namespace {

TEST_CASE("json nesting depth: brackets and braces outside strings, escapes included") {
  CHECK(JsonNestingDepth("") == 0);
  CHECK(JsonNestingDepth("1") == 0);
  CHECK(JsonNestingDepth(R"({"a": [1, {"b": []}]})") == 4);
  CHECK(JsonNestingDepth(R"({"a": "[[[[{{{{"})") == 1);          // inside a string
  CHECK(JsonNestingDepth(R"({"a": "\"[[[[", "b": [1]})") == 2);  // an escaped quote
  CHECK(JsonNestingDepth(R"(["\\", [[]]])") == 3);               // an escaped backslash
  CHECK(JsonNestingDepth("]]]][") == 1);                         // unbalanced: never negative
  // Counting stops past the limit: a file of a million "[" is refused after 65.
  const std::string deep(1000000, '[');
  CHECK(JsonNestingDepth(deep) == kMaxJsonNesting + 1);
  CHECK(JsonNestingDepth(std::string(kMaxJsonNesting, '[') + std::string(kMaxJsonNesting, ']')) ==
        kMaxJsonNesting);
}

}  // namespace
}  // namespace spmdsim::ir
