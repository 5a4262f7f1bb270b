#include "ir/c_unescape.h"

namespace spmdsim::ir {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

char SimpleEscape(char c) {
  switch (c) {
    case '\\':
      return '\\';
    case '\'':
      return '\'';
    case '"':
      return '"';
    case '?':
      return '?';
    case 'a':
      return '\a';
    case 'b':
      return '\b';
    case 'f':
      return '\f';
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    case 'v':
      return '\v';
    default:
      return '\0';
  }
}

}  // namespace

std::string CUnescape(std::string_view text) {
  if (text.find('\\') == std::string_view::npos) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '\\' || i + 1 >= text.size()) {
      out += text[i++];
      continue;
    }
    const char c = text[i + 1];
    if (const char simple = SimpleEscape(c); simple != '\0') {
      out += simple;
      i += 2;
    } else if (c >= '0' && c <= '7') {
      int value = 0;
      size_t j = i + 1;
      for (; j < text.size() && j < i + 4 && text[j] >= '0' && text[j] <= '7'; ++j) {
        value = value * 8 + (text[j] - '0');
      }
      out += static_cast<char>(value & 0xFF);
      i = j;
    } else if (c == 'x' && i + 2 < text.size() && HexValue(text[i + 2]) >= 0) {
      int value = 0;
      size_t j = i + 2;
      for (; j < text.size() && j < i + 4 && HexValue(text[j]) >= 0; ++j) {
        value = value * 16 + HexValue(text[j]);
      }
      out += static_cast<char>(value & 0xFF);
      i = j;
    } else {
      out += text[i++];  // unknown escape: keep the backslash, then the character as usual
    }
  }
  return out;
}

}  // namespace spmdsim::ir
