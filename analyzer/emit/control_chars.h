// Control characters from a dump (an op_name may hold ESC [ 31 m, BEL, or the 8-bit CSI U+009B)
// must not reach a terminal or a page as themselves: a terminal would obey them (colours, titles,
// cursor moves) and HTML and XML forbid them. Each is written as visible text instead:
//   C0 controls but tab and newline, and DEL   ->  \x1b, \x07, \x7f  (as XLA's text escapes them)
//   C1 controls (U+0080..U+009F)               ->  \u009b
// and the Unicode non-characters U+FFFE and U+FFFF (valid UTF-8, not characters of XML or HTML)
// become U+FFFD. JSON text is unchanged by it (its writer escapes C0 controls itself; `\u009b`
// is the JSON escape of U+009B), so standard output and error are filtered whatever the format.
#pragma once

#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

namespace spmdsim::analyzer {

// `text` with its control characters and U+FFFE/U+FFFF made visible, as above. `keep_newlines`:
// tab and newline pass through, else they become \x09 and \x0a (carriage return always \x0d:
// it would let a line overwrite the one before it).
std::string EscapeControls(std::string_view text, bool keep_newlines = true);

// A filter installed on `stream` for its lifetime: what the stream is given is buffered and
// written through EscapeControls (newlines kept) to the stream's own buffer; the stream gets its
// buffer back when the filter goes (main() keeps one on std::cout and std::cerr for the run).
class ControlEscapingBuffer : public std::streambuf {
 public:
  explicit ControlEscapingBuffer(std::ostream& stream);
  ~ControlEscapingBuffer() override;
  ControlEscapingBuffer(const ControlEscapingBuffer&) = delete;
  ControlEscapingBuffer& operator=(const ControlEscapingBuffer&) = delete;

 protected:
  int_type overflow(int_type c) override;
  int sync() override;

 private:
  // Writes the buffered text, escaped, to the stream's own buffer; false when that fails.
  bool Drain();
  std::ostream& stream_;
  std::streambuf* target_;
  std::vector<char> buffer_;
  std::string pending_;  // the start of a UTF-8 sequence not yet complete
};

}  // namespace spmdsim::analyzer
