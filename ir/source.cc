#include "ir/source.h"

#include <algorithm>
#include <cstdint>

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

// Length of the valid UTF-8 sequence (of a printable character) at text[i], or 0.
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  uint32_t code = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
    code = lead & 0x1fu;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    code = lead & 0x0fu;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    code = lead & 0x07u;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0u) != 0x80u) return 0;
    code = (code << 6) | (byte(i + k) & 0x3fu);
  }
  const uint32_t smallest = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
  const bool surrogate = code >= 0xd800 && code <= 0xdfff;
  // C1 controls (U+0080..U+009F) drive terminals as the C0 ones do.
  if (code < smallest || surrogate || code > 0x10ffff || code < 0xa0) return 0;
  return length;
}

// The excerpt a diagnostic may print: control characters and bytes that are not UTF-8 (binary
// input) become '?', so a diagnostic never drives the terminal or echoes raw bytes; a tab becomes
// a space. `caret_byte` (a byte offset into `text`) is turned into the column of the result.
std::string Printable(std::string_view text, size_t* caret_byte = nullptr) {
  std::string out;
  out.reserve(text.size());
  size_t columns = 0;
  size_t caret_column = 0;
  for (size_t i = 0; i < text.size();) {
    if (caret_byte != nullptr && i <= *caret_byte) caret_column = columns;
    const auto c = static_cast<unsigned char>(text[i]);
    size_t length = 1;
    if (c == '\t') {
      out += ' ';
    } else if (c < 0x20 || c == 0x7f) {
      out += '?';
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else if ((length = Utf8SequenceLength(text, i)) > 0) {
      out.append(text.substr(i, length));
    } else {
      length = 1;
      out += '?';
    }
    i += length;
    ++columns;
  }
  if (caret_byte != nullptr) *caret_byte = *caret_byte >= text.size() ? columns : caret_column;
  return out;
}

}  // namespace

std::string Diagnostic::ToString() const {
  std::string out = file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " +
                    (severity == Severity::kError ? "error: " : "warning: ") + Printable(message);
  if (source_line.empty()) return out;
  size_t caret = static_cast<size_t>(caret_col > 0 ? caret_col - 1 : 0);  // a byte offset
  const std::string shown = Printable(source_line, &caret);
  out += "\n  " + shown + "\n  " + std::string(caret, ' ') + "^";
  return out;
}

}  // namespace spmdsim::ir
