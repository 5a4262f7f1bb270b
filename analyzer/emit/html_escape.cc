#include "analyzer/emit/html_escape.h"

#include "analyzer/emit/control_chars.h"
#include "analyzer/emit/utf8.h"

namespace spmdsim::analyzer {

std::string HtmlEscape(std::string_view raw) {
  const std::string text = EscapeControls(ValidUtf8(raw));
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace spmdsim::analyzer
