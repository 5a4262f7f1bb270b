// The escaping and path rules the CI outputs depend on: GitHub workflow commands, XML, SARIF URIs,
// and "file.py:76" sources.
#include "analyzer/views/ci_formats.h"

#include <catch2/catch.hpp>

#include "analyzer/views/sarif_report.h"

namespace spmdsim::analyzer {
namespace {

TEST_CASE("GitHub workflow-command escaping") {
  CHECK(GithubEscapeData("100% of a\r\nb: c, d") == "100%25 of a%0D%0Ab: c, d");
  CHECK(GithubEscapeProperty("100% of a\r\nb: c, d") == "100%25 of a%0D%0Ab%3A c%2C d");
  CHECK(GithubEscapeProperty("src/model.py") == "src/model.py");
  // % first: an escape is never escaped twice.
  CHECK(GithubEscapeData("%0A") == "%250A");
}

TEST_CASE("XmlEscape: markup characters and forbidden control characters") {
  CHECK(XmlEscape("jit(f)/a<b>&\"c\"'d'") == "jit(f)/a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
  CHECK(XmlEscape(std::string("a\x01"
                              "b\tc\n",
                              6)) == "a\\x01b\tc\n");
  CHECK(XmlEscape("u32[2,32,64]") == "u32[2,32,64]");
  // U+FFFE and U+FFFF are valid UTF-8 but not XML characters.
  CHECK(XmlEscape("a\xef\xbf\xbe\xef\xbf\xbf") == "a\xef\xbf\xbd\xef\xbf\xbd");
}

TEST_CASE("Markdown: dump text as a cell or a code span that nothing in it can break") {
  CHECK(MarkdownCell("jit_step|x") == "jit\\_step\\|x");
  CHECK(MarkdownCell("<img src=x onerror=alert(1)>") == "\\<img src\\=x onerror\\=alert\\(1\\)\\>");
  CHECK(MarkdownCell("a\nb\x1b[0m") == "a\\\\x0ab\\\\x1b\\[0m");
  CHECK(MarkdownCode("model.py:76") == "`model.py:76`");
  CHECK(MarkdownCode("a`b") == "``a`b``");
  CHECK(MarkdownCode("`<b>``") == "``` `<b>`` ```");
  CHECK(MarkdownCode("x\ny") == "`x\\x0ay`");
}

TEST_CASE("SplitSource and RelativeTo") {
  const SourceLocation plain = SplitSource("/work/main/tools/gen_dumps.py:169");
  CHECK(plain.file == "/work/main/tools/gen_dumps.py");
  CHECK(plain.line == 169);
  CHECK(SplitSource("model.py").line == 0);
  CHECK(SplitSource("model.py").file == "model.py");
  CHECK(SplitSource("C:x.py:7").file == "C:x.py");
  CHECK(SplitSource("a.py:").line == 0);
  CHECK(SplitSource("a.py:12a").file == "a.py:12a");
  CHECK(SplitSource("").file.empty());

  CHECK(RelativeTo("/ws/a/b.py", "/ws") == "a/b.py");
  CHECK(RelativeTo("/ws/a/b.py", "/ws/") == "a/b.py");
  CHECK(RelativeTo("/wsx/a.py", "/ws") == "/wsx/a.py");
  CHECK(RelativeTo("/ws", "/ws") == "/ws");
  CHECK(RelativeTo("rel/a.py", "") == "rel/a.py");
}

TEST_CASE("PathToUri: file:// for absolute paths, percent-encoding outside the unreserved set") {
  CHECK(PathToUri("/work/main/tools/gen_dumps.py") == "file:///work/main/tools/gen_dumps.py");
  CHECK(PathToUri("src/my model.py") == "src/my%20model.py");
  CHECK(PathToUri("a/b#c%d.py") == "a/b%23c%25d.py");
}

TEST_CASE("SARIF rule ids are unique and in id order") {
  const auto& rules = SarifRules();
  REQUIRE(!rules.empty());
  for (size_t i = 1; i < rules.size(); ++i) {
    CHECK(rules[i - 1].id < rules[i].id);
    for (size_t j = 0; j < i; ++j) CHECK(rules[i].name != rules[j].name);
  }
}

}  // namespace
}  // namespace spmdsim::analyzer
