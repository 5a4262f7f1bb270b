#include "ir/source.h"

#include <algorithm>

namespace spmdsim::ir {

void SourceBuffer::LineCol(size_t offset, int& line, int& col) const {
  offset = std::min(offset, text_.size());
  const std::string_view before(text_.data(), offset);
  line = 1 + static_cast<int>(std::count(before.begin(), before.end(), '\n'));
  const size_t line_start = before.rfind('\n');
  col =
      1 + static_cast<int>(line_start == std::string_view::npos ? offset : offset - line_start - 1);
}

std::string_view SourceBuffer::LineAt(size_t offset) const {
  const std::string_view all = text_;
  offset = std::min(offset, all.size());
  size_t start = offset;
  while (start > 0 && all[start - 1] != '\n') --start;
  size_t end = all.find('\n', offset);
  if (end == std::string_view::npos) end = all.size();
  return all.substr(start, end - start);
}

Diagnostic MakeDiagnostic(const SourceBuffer& source, size_t offset, Severity severity,
                          std::string message) {
  // An error at the end of input points just past the last non-blank character, so that the
  // line shown is the one left unfinished rather than an empty last line.
  const std::string_view text = source.text();
  if (offset >= text.size()) {
    offset = text.size();
    while (offset > 0 && (text[offset - 1] == ' ' || text[offset - 1] == '\t' ||
                          text[offset - 1] == '\r' || text[offset - 1] == '\n')) {
      --offset;
    }
  }
  Diagnostic d;
  d.severity = severity;
  d.file = source.name();
  source.LineCol(offset, d.line, d.col);
  d.message = std::move(message);
  const std::string_view line = source.LineAt(offset);
  // Very long lines (constants, huge tuples) are shown as an excerpt around the column.
  constexpr size_t kMaxShown = 160;
  const size_t col = static_cast<size_t>(d.col - 1);
  if (line.size() <= kMaxShown) {
    d.source_line = std::string(line);
    d.caret_col = d.col;
    return d;
  }
  const size_t from = col > kMaxShown / 2 ? col - kMaxShown / 2 : 0;
  d.source_line = (from > 0 ? "..." : "") + std::string(line.substr(from, kMaxShown)) +
                  (from + kMaxShown < line.size() ? "..." : "");
  d.caret_col = static_cast<int>(col - from + (from > 0 ? 3 : 0) + 1);
  return d;
}

namespace {

// Control characters (binary input) shown as '?', so a diagnostic never drives the terminal; a
// tab becomes a space so the caret lines up.
std::string Printable(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == '\t') {
      c = ' ';
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      c = '?';
    }
  }
  return out;
}

}  // namespace

std::string Diagnostic::ToString() const {
  std::string out = file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " +
                    (severity == Severity::kError ? "error: " : "warning: ") + Printable(message);
  if (source_line.empty()) return out;
  const std::string shown = Printable(source_line);
  const size_t caret = static_cast<size_t>(caret_col > 0 ? caret_col : 1);
  out += "\n  " + shown + "\n  " + std::string(caret - 1, ' ') + "^";
  return out;
}

}  // namespace spmdsim::ir
