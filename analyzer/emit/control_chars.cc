#include "analyzer/emit/control_chars.h"

#include <fmt/format.h>

namespace spmdsim::analyzer {

namespace {

// Bytes of the text that need no change before the next control, C1 lead or non-character.
bool Plain(unsigned char c) { return c >= 0x20 && c != 0x7f && c != 0xc2 && c != 0xef; }

// Appends the escape of the sequence at `text[i]` (or its byte as is); returns its length, 0 when
// the sequence is cut short at the end of `text` (a streamed piece: wait for the rest).
size_t EscapeAt(std::string_view text, size_t i, bool keep_newlines, bool whole, std::string& out) {
  const auto c = static_cast<unsigned char>(text[i]);
  if (c < 0x20 || c == 0x7f) {
    if (keep_newlines && (c == '\n' || c == '\t')) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
    return 1;
  }
  if (c == 0xc2) {  // U+0080..U+00BF; C1 controls are C2 80..C2 9F
    if (i + 1 >= text.size()) return whole ? (out += text[i], 1) : 0;
    const auto next = static_cast<unsigned char>(text[i + 1]);
    if (next >= 0x80 && next <= 0x9f) {
      out += fmt::format("\\u00{:02x}", next);
    } else {
      out.append(text.substr(i, 2));
    }
    return 2;
  }
  if (c == 0xef) {  // U+F000..U+FFFF; U+FFFE and U+FFFF are EF BF BE and EF BF BF
    if (i + 2 >= text.size()) return whole ? (out += text[i], 1) : 0;
    const auto b1 = static_cast<unsigned char>(text[i + 1]);
    const auto b2 = static_cast<unsigned char>(text[i + 2]);
    if (b1 == 0xbf && (b2 == 0xbe || b2 == 0xbf)) {
      out += "\xef\xbf\xbd";
    } else {
      out.append(text.substr(i, 3));
    }
    return 3;
  }
  out += static_cast<char>(c);
  return 1;
}

// Escapes `text`; with `whole` false, a sequence cut at the end is left in `rest`.
std::string Escape(std::string_view text, bool keep_newlines, bool whole, std::string* rest) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t run = i;
    while (run < text.size() && Plain(static_cast<unsigned char>(text[run]))) ++run;
    out.append(text.substr(i, run - i));
    i = run;
    if (i >= text.size()) break;
    const size_t used = EscapeAt(text, i, keep_newlines, whole, out);
    if (used == 0) {
      *rest = std::string(text.substr(i));
      break;
    }
    i += used;
  }
  return out;
}

}  // namespace

std::string EscapeControls(std::string_view text, bool keep_newlines) {
  return Escape(text, keep_newlines, /*whole=*/true, nullptr);
}

ControlEscapingBuffer::ControlEscapingBuffer(std::ostream& stream)
    : stream_(stream), target_(stream.rdbuf()), buffer_(size_t{1} << 16) {
  setp(buffer_.data(), buffer_.data() + buffer_.size());
  stream.rdbuf(this);
}

ControlEscapingBuffer::~ControlEscapingBuffer() {
  Drain();
  if (!pending_.empty()) target_->sputn(pending_.data(), std::ssize(pending_));
  target_->pubsync();
  stream_.rdbuf(target_);
}

bool ControlEscapingBuffer::Drain() {
  std::string text = std::move(pending_);
  pending_.clear();
  text.append(pbase(), static_cast<size_t>(pptr() - pbase()));
  setp(buffer_.data(), buffer_.data() + buffer_.size());
  const std::string out = Escape(text, /*keep_newlines=*/true, /*whole=*/false, &pending_);
  return target_->sputn(out.data(), std::ssize(out)) == std::ssize(out);
}

ControlEscapingBuffer::int_type ControlEscapingBuffer::overflow(int_type c) {
  if (!Drain()) return traits_type::eof();
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  *pptr() = traits_type::to_char_type(c);
  pbump(1);
  return c;
}

int ControlEscapingBuffer::sync() {
  // A sequence cut by the flush stays pending: written raw, C2 then 9B would make a control.
  if (!Drain()) return -1;
  return target_->pubsync();
}

}  // namespace spmdsim::analyzer
