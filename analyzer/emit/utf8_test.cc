#include "analyzer/emit/utf8.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "analyzer/emit/html_escape.h"
#include "analyzer/emit/json_text.h"

namespace spmdsim::analyzer {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST_CASE("ValidUtf8 keeps well-formed UTF-8 and replaces every other byte by U+FFFD") {
  CHECK(ValidUtf8("jit(f)/dropout") == "jit(f)/dropout");
  CHECK(ValidUtf8("f\xC3\xBCr \xE2\x82\xAC \xF0\x9F\x98\x80") ==
        "f\xC3\xBCr \xE2\x82\xAC \xF0\x9F\x98\x80");
  CHECK(ValidUtf8("bad\xFFname") == "bad" + kFffd + "name");
  CHECK(ValidUtf8("cut\xC3") == "cut" + kFffd);                           // truncated sequence
  CHECK(ValidUtf8("\xC0\xAF") == kFffd + kFffd);                          // overlong '/'
  CHECK(ValidUtf8("\xED\xA0\x80") == kFffd + kFffd + kFffd);              // a surrogate
  CHECK(ValidUtf8("\xF4\x90\x80\x80") == kFffd + kFffd + kFffd + kFffd);  // past U+10FFFF
  CHECK(IsValidUtf8(ValidUtf8("\x80\xBF\xFE")));
}

TEST_CASE("JSON text of a string with invalid UTF-8 is valid JSON, not an exception") {
  nlohmann::ordered_json document = {{"op_name", "jit(f)/bad\xFFname"}};
  std::string text;
  REQUIRE_NOTHROW(text = JsonText(document));
  CHECK(IsValidUtf8(text));
  CHECK(nlohmann::json::parse(text)["op_name"] == "jit(f)/bad" + kFffd + "name");
}

TEST_CASE("HtmlEscape writes invalid UTF-8 as U+FFFD") {
  CHECK(HtmlEscape("<a\xFF>") == "&lt;a" + kFffd + "&gt;");
}

TEST_CASE("Utf8Prefix cuts at most so many bytes, never inside a sequence") {
  const std::string text = "ab\xC3\xA9\xE2\x82\xAC";  // "ab", e-acute (2 bytes), euro (3)
  CHECK(Utf8Prefix(text, 100) == text);
  CHECK(Utf8Prefix(text, 7) == text);
  CHECK(Utf8Prefix(text, 2) == "ab");
  CHECK(Utf8Prefix(text, 3) == "ab");  // inside the e-acute
  CHECK(Utf8Prefix(text, 4) == "ab\xC3\xA9");
  CHECK(Utf8Prefix(text, 5) == "ab\xC3\xA9");
  CHECK(Utf8Prefix(text, 6) == "ab\xC3\xA9");
  CHECK(Utf8Prefix(text, 0).empty());
  CHECK(Utf8Prefix("\x80\x80\x80", 2).empty());  // only continuation bytes
}
}  // namespace
}  // namespace spmdsim::analyzer
