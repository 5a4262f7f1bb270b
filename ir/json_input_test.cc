#include "ir/json_input.h"

#include <catch2/catch.hpp>
#include <string>

namespace spmdsim::ir {
namespace {

TEST_CASE("JSON inputs: parsed with comments, refused past the nesting limit, errors located") {
  std::string error;
  const auto parsed = ParseJsonInput("{\"a\": 1, // a comment\n \"b\": [2]}", error);
  REQUIRE(parsed);
  CHECK(parsed->at("b").at(0) == 2);
  CHECK_FALSE(ParseJsonInput(std::string(65, '[') + std::string(65, ']'), error));
  CHECK(error == "nested more than 64 deep");
  CHECK(ParseJsonInput(std::string(64, '[') + std::string(64, ']'), error));
  CHECK_FALSE(ParseJsonInput("{\"schema_version\": 1,\n \"modules\": [ }\n", error));
  CHECK(error.rfind("not JSON: parse error at line 2, column 15: syntax error", 0) == 0);
  CHECK_FALSE(ParseJsonInput("[1e3081590284]", error));
  CHECK(error.rfind("not JSON: ", 0) == 0);
}

}  // namespace
}  // namespace spmdsim::ir
