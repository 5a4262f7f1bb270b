#include "analyzer/views/html_cells.h"

#include <fmt/format.h>

#include "analyzer/emit/html_escape.h"
#include "analyzer/emit/human_units.h"
#include "analyzer/emit/utf8.h"

namespace spmdsim::analyzer::html {

std::string E(std::string_view text) { return HtmlEscape(text); }

std::string Bytes(int64_t bytes) {
  return fmt::format("<span title=\"{} bytes\">{}</span>", bytes, E(HumanBytes(bytes)));
}

std::string BytesTd(int64_t bytes) {
  return fmt::format("<td class=\"num\" data-sort=\"{0}\" title=\"{0} bytes\">{1}</td>", bytes,
                     E(HumanBytes(bytes)));
}

std::string NumTd(int64_t value) {
  return fmt::format("<td class=\"num\" data-sort=\"{0}\">{0}</td>", value);
}

std::string Td(std::string_view text, std::string_view css) {
  if (css.empty()) return "<td>" + E(text) + "</td>";
  return fmt::format("<td class=\"{}\">{}</td>", css, E(text));
}

// Dump strings longer than this (the op_name of a combined all-reduce, a tuple shape) are cut in
// the cell; the whole text stays in the cell's title.
constexpr size_t kMaxCellChars = 240;

std::string LongTd(std::string_view text, std::string_view css, std::string_view attributes) {
  const std::string open =
      fmt::format("<td class=\"{}\"{}{}", css, attributes.empty() ? "" : " ", attributes);
  if (text.size() <= kMaxCellChars) return open + ">" + E(text) + "</td>";
  return fmt::format("{} title=\"{}\">{}... ({} characters)</td>", open, E(text),
                     E(Utf8Prefix(text, kMaxCellChars)), text.size());
}

std::string TimeTd(double us, bool estimated) {
  if (!estimated) return "<td class=\"num\">-</td>";
  return fmt::format("<td class=\"num\" data-sort=\"{0:.3f}\" title=\"{0:.3f} us\">{1}</td>", us,
                     E(HumanTime(us)));
}

}  // namespace spmdsim::analyzer::html
