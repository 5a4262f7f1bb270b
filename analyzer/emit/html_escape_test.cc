#include "analyzer/emit/html_escape.h"

#include <catch2/catch.hpp>

namespace spmdsim::analyzer {
namespace {

TEST_CASE("HtmlEscape replaces the five markup characters") {
  CHECK(HtmlEscape("") == "");
  CHECK(HtmlEscape("jit(train_step)/while") == "jit(train_step)/while");
  CHECK(HtmlEscape("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;");
  CHECK(HtmlEscape("\"><img src=x onerror=alert(1)>") ==
        "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;");
  CHECK(HtmlEscape("a & b 'c'") == "a &amp; b &#39;c&#39;");
  // Already-escaped text is escaped again: the page shows what the dump holds.
  CHECK(HtmlEscape("&lt;") == "&amp;lt;");
}

TEST_CASE("HtmlEscape keeps UTF-8 and writes control characters as visible text") {
  CHECK(HtmlEscape("f\xc3\xbcr u32[128]") == "f\xc3\xbcr u32[128]");
  const std::string with_nul("a\0b", 3);
  CHECK(HtmlEscape(with_nul) == "a\\x00b");
  CHECK(HtmlEscape("\x1b[31mred") == "\\x1b[31mred");
  CHECK(HtmlEscape("a\tb\nc") == "a\tb\nc");
}

TEST_CASE("HtmlEscape output has no markup character left") {
  std::string all;
  for (int c = 1; c < 128; ++c) all += static_cast<char>(c);
  const std::string escaped = HtmlEscape(all);
  for (const char c : {'<', '>', '"', '\''}) CHECK(escaped.find(c) == std::string::npos);
  // Every '&' starts one of the five references.
  for (size_t at = escaped.find('&'); at != std::string::npos; at = escaped.find('&', at + 1)) {
    const std::string_view rest = std::string_view(escaped).substr(at);
    CHECK((rest.starts_with("&amp;") || rest.starts_with("&lt;") || rest.starts_with("&gt;") ||
           rest.starts_with("&quot;") || rest.starts_with("&#39;")));
  }
}

}  // namespace
}  // namespace spmdsim::analyzer
