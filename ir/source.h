// A named text buffer and the diagnostics that point into it.
//
// Diagnostics print as compilers do, so editors and CI logs can jump to them:
//   dump.txt:12:7: error: expected ')', got ','
//     %add = f32[8]{0} add(%a,, %b)
//         ^
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace spmdsim::ir {

class SourceBuffer {
 public:
  SourceBuffer(std::string name, std::string text)
      : name_(std::move(name)), text_(std::move(text)) {}
  const std::string& name() const { return name_; }
  std::string_view text() const { return text_; }

  // 1-based line and column of a byte offset.
  void LineCol(size_t offset, int& line, int& col) const;
  // The whole line containing offset, without its newline.
  std::string_view LineAt(size_t offset) const;

 private:
  std::string name_;
  std::string text_;
};

enum class Severity { kError, kWarning };

struct Diagnostic {
  Severity severity = Severity::kError;
  std::string file;
  int line = 0;
  int col = 0;
  std::string message;
  std::string source_line;  // empty when there is no text to show; long lines are excerpted
  int caret_col = 0;        // 1-based column of the caret within source_line

  // "file:line:col: error: message" followed by the source line and a caret.
  std::string ToString() const;
};

Diagnostic MakeDiagnostic(const SourceBuffer& source, size_t offset, Severity severity,
                          std::string message);

// Thrown inside the parser and caught at its public entry points; never escapes ir/.
struct ParseError {
  size_t offset;
  std::string message;
};

}  // namespace spmdsim::ir
