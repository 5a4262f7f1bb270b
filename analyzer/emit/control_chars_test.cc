#include "analyzer/emit/control_chars.h"

#include <catch2/catch.hpp>
#include <sstream>

namespace spmdsim::analyzer {
namespace {

TEST_CASE("control characters from a dump are written as visible text") {
  CHECK(EscapeControls("a\x1b[31mred\x07") == "a\\x1b[31mred\\x07");
  CHECK(EscapeControls("tab\tand\nnewline") == "tab\tand\nnewline");
  CHECK(EscapeControls("tab\tand\nnewline", /*keep_newlines=*/false) == "tab\\x09and\\x0anewline");
  CHECK(EscapeControls("over\rwrite") == "over\\x0dwrite");
  CHECK(EscapeControls(std::string("nul\0del\x7f", 8)) == "nul\\x00del\\x7f");
  // C1 controls (8-bit CSI U+009B) but not the rest of U+0080..U+00FF.
  CHECK(EscapeControls("\xc2\x9b"
                       "31m \xc2\xa9") == "\\u009b31m \xc2\xa9");
  // Non-characters of XML and HTML; other U+Fxxx characters kept.
  CHECK(EscapeControls("\xef\xbf\xbe \xef\xbf\xbf \xef\xbf\xbd \xef\xbc\x81") ==
        "\xef\xbf\xbd \xef\xbf\xbd \xef\xbf\xbd \xef\xbc\x81");
  // A sequence cut at the end is left as it is (no control can be made of it).
  CHECK(EscapeControls("end\xc2") == "end\xc2");
  CHECK(EscapeControls("end\xef\xbf") == "end\xef\xbf");
}

TEST_CASE("a stream filtered for the terminal escapes what it is given, pieces joined") {
  std::ostringstream sink;
  {
    ControlEscapingBuffer filter(sink);
    sink << "op_name=\"\x1b[2J\"" << '\n';
    sink << "\xc2";  // a C1 control written in two pieces, a flush between them
    sink.flush();
    sink << "\x9b"
         << "x" << std::string(70000, 'y') << "\xef\xbf\xbe\n";
  }
  const std::string out = sink.str();
  CHECK(out.rfind("op_name=\"\\x1b[2J\"\n\\u009bx", 0) == 0);
  CHECK(out.size() == 25 + 70000 + 4);
  CHECK(out.substr(out.size() - 4) == "\xef\xbf\xbd\n");
  // The stream has its own buffer back.
  sink << "\x1b";
  CHECK(sink.str().back() == '\x1b');
}

}  // namespace
}  // namespace spmdsim::analyzer
