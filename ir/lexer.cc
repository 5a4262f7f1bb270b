#include "ir/lexer.h"

#include <array>
#include <cstring>

namespace spmdsim::ir {
namespace {

constexpr std::array<bool, 256> MakeIdentTable(bool allow_digit_start) {
  std::array<bool, 256> t{};
  for (int c = 'a'; c <= 'z'; ++c) t[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = true;
  for (int c = '0'; c <= '9'; ++c) t[c] = allow_digit_start;
  t['_'] = true;
  t['.'] = allow_digit_start;
  t['-'] = allow_digit_start;
  return t;
}
constexpr std::array<bool, 256> kIdentStart = MakeIdentTable(false);
constexpr std::array<bool, 256> kIdentChar = MakeIdentTable(true);

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The characters a raw value scan stops at: quotes and '/' (strings and comments are stepped over
// whole), brackets, and the ',' and line ends that end a value at the top level. Everything else
// is skipped in a tight loop.
constexpr std::array<bool, 256> MakeRawStopTable() {
  std::array<bool, 256> t{};
  for (const char c : {'"', '\'', '/', '{', '}', '[', ']', '(', ')', ',', '\n', '\r'}) {
    t[static_cast<unsigned char>(c)] = true;
  }
  return t;
}
constexpr std::array<bool, 256> kRawStop = MakeRawStopTable();

// The same for the paren skip of constant payloads: quotes, '/' and parens.
constexpr std::array<bool, 256> MakeParenStopTable() {
  std::array<bool, 256> t{};
  for (const char c : {'"', '\'', '/', '(', ')'}) t[static_cast<unsigned char>(c)] = true;
  return t;
}
constexpr std::array<bool, 256> kParenStop = MakeParenStopTable();

// Where the string whose opening quote is at s[open] closes: the index of its closing quote, or n
// when it is unterminated. XLA escapes newlines in the strings it prints, so a raw one means a
// missing quote and ends the string (unterminated) there; a backslash escapes the next character
// unless that is a newline. (Strings are a third of a dump: the usual string, with no escape and
// no line break before its quote, is found by memchr.)
size_t QuotedEnd(const char* s, size_t n, size_t open) {
  const char quote = s[open];
  size_t p = open + 1;
  const void* close = std::memchr(s + p, quote, n - p);
  if (close != nullptr) {
    const size_t end = static_cast<size_t>(static_cast<const char*>(close) - s);
    if (std::memchr(s + p, '\\', end - p) == nullptr &&
        std::memchr(s + p, '\n', end - p) == nullptr) {
      return end;
    }
  }
  while (p < n && s[p] != quote && s[p] != '\n') {
    if (s[p] == '\\' && p + 1 < n && s[p + 1] != '\n') ++p;
    ++p;
  }
  return p < n && s[p] == quote ? p : n;
}

}  // namespace

std::string_view TokenKindName(TokenKind kind) {
  switch (kind) {
    case TokenKind::kEof:
      return "end of input";
    case TokenKind::kError:
      return "invalid character";
    case TokenKind::kLbrace:
      return "'{'";
    case TokenKind::kRbrace:
      return "'}'";
    case TokenKind::kLparen:
      return "'('";
    case TokenKind::kRparen:
      return "')'";
    case TokenKind::kLsquare:
      return "'['";
    case TokenKind::kRsquare:
      return "']'";
    case TokenKind::kComma:
      return "','";
    case TokenKind::kColon:
      return "':'";
    case TokenKind::kEqual:
      return "'='";
    case TokenKind::kArrow:
      return "'->'";
    case TokenKind::kLeq:
      return "'<='";
    case TokenKind::kQuestion:
      return "'?'";
    case TokenKind::kStar:
      return "'*'";
    case TokenKind::kName:
      return "a name";
    case TokenKind::kPercent:
      return "a %name";
    case TokenKind::kInt:
      return "an integer";
    case TokenKind::kNumber:
      return "a number";
    case TokenKind::kString:
      return "a string";
  }
  return "a token";
}

void Lexer::SkipTrivia() {
  const size_t n = text_.size();
  while (pos_ < n) {
    const char c = text_[pos_];
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < n && text_[pos_ + 1] == '*') {
      const size_t end = text_.find("*/", pos_ + 2);
      if (end == std::string_view::npos) return;  // Lex() reports the unterminated comment
      pos_ = end + 2;
    } else if (c == '/' && pos_ + 1 < n && text_[pos_ + 1] == '/') {
      const size_t end = text_.find('\n', pos_);
      pos_ = end == std::string_view::npos ? n : end;
    } else {
      return;
    }
  }
}

void Lexer::Lex(Token& out) {
  // Runs on locals and writes the token once at the end: the text is read through a char
  // pointer, which may alias anything, so members would be reloaded after every store.
  const char* const s = text_.data();
  const size_t n = text_.size();
  size_t p = pos_;
  // Blanks and line breaks (most tokens follow one blank, or a line break and an indent) are
  // skipped here; SkipTrivia steps over comments.
  while (p < n) {
    const char c = s[p];
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      ++p;
      continue;
    }
    if (c == '/') {
      pos_ = p;
      SkipTrivia();
      p = pos_;
    }
    break;
  }
  const size_t start = p;
  TokenKind kind = TokenKind::kError;
  size_t text_start = start;  // the token's text is s[text_start, p) unless `message` is set
  std::string_view message;   // the text of an error token that describes the error
  if (p >= n) {
    kind = TokenKind::kEof;
  } else {
    const char c = s[p];
    switch (c) {
      case '{':
        kind = TokenKind::kLbrace;
        ++p;
        break;
      case '}':
        kind = TokenKind::kRbrace;
        ++p;
        break;
      case '(':
        kind = TokenKind::kLparen;
        ++p;
        break;
      case ')':
        kind = TokenKind::kRparen;
        ++p;
        break;
      case '[':
        kind = TokenKind::kLsquare;
        ++p;
        break;
      case ']':
        kind = TokenKind::kRsquare;
        ++p;
        break;
      case ',':
        kind = TokenKind::kComma;
        ++p;
        break;
      case ':':
        kind = TokenKind::kColon;
        ++p;
        break;
      case '=':
        kind = TokenKind::kEqual;
        ++p;
        break;
      case '?':
        kind = TokenKind::kQuestion;
        ++p;
        break;
      case '*':
        kind = TokenKind::kStar;
        ++p;
        break;
      case '/':
        // Only an unterminated /* comment reaches here.
        p = n;
        message = "unterminated comment";
        break;
      case '<':
        kind = p + 1 < n && s[p + 1] == '=' ? TokenKind::kLeq : TokenKind::kError;
        p += kind == TokenKind::kLeq ? 2 : 1;
        break;
      case '\'':
      case '"': {
        const size_t close = QuotedEnd(s, n, p);
        if (close >= n) {
          // Past the opening quote to the line end (or the end of input), as a string ends there.
          const void* eol = std::memchr(s + p + 1, '\n', n - p - 1);
          p = eol == nullptr ? n : static_cast<size_t>(static_cast<const char*>(eol) - s);
          message = "unterminated string";
          break;
        }
        kind = TokenKind::kString;
        text_start = start + 1;
        out.kind = kind;
        out.text = std::string_view(s + text_start, close - text_start);
        out.offset = base_ + start;
        pos_ = close + 1;
        return;
      }
      case '%': {
        ++p;
        p = ScanNameChars(s, p, n);
        if (p == start + 1) {
          // A lone '%': an error token whose text is the '%'.
          break;
        }
        p = SkipTupleIndexSuffix(p);
        kind = TokenKind::kPercent;
        text_start = start + 1;
        break;
      }
      default:
        if (c == '-' && p + 1 < n && s[p + 1] == '>') {
          kind = TokenKind::kArrow;
          p += 2;
        } else if (IsDigit(c) || ((c == '-' || c == '+') && p + 1 < n &&
                                  (IsDigit(s[p + 1]) || s[p + 1] == 'i' || s[p + 1] == 'n'))) {
          ++p;
          bool is_int = IsDigit(c);
          while (p < n && IsDigit(s[p])) {
            ++p;
            is_int = true;
          }
          // Anything more (".5", "e-3", "x1p", "inf", "nan") makes it a non-integer number.
          const size_t int_end = p;
          while (p < n &&
                 (kIdentChar[static_cast<unsigned char>(s[p])] ||
                  ((s[p] == '+' || s[p] == '-') &&
                   (s[p - 1] == 'e' || s[p - 1] == 'E' || s[p - 1] == 'p' || s[p - 1] == 'P')))) {
            ++p;
          }
          kind = (is_int && p == int_end) ? TokenKind::kInt : TokenKind::kNumber;
        } else if (kIdentStart[static_cast<unsigned char>(c)]) {
          const size_t scanned = ScanNameChars(s, p + 1, n);
          p = scanned;
          // A '-' may not end a name ("a->b" lexes as a, ->, b).
          while (p > start + 1 && s[p - 1] == '-') --p;
          if (p == scanned) p = SkipTupleIndexSuffix(p);
          kind = TokenKind::kName;
          const std::string_view name(s + start, p - start);
          if (name == "inf" || name == "nan") kind = TokenKind::kNumber;
        } else {
          ++p;  // a character that starts no token: an error token of that one character
        }
        break;
    }
  }
  out.kind = kind;
  if (kind == TokenKind::kEof) {
    out.text = {};
  } else {
    out.text = message.empty() ? std::string_view(s + text_start, p - text_start) : message;
  }
  out.offset = base_ + start;
  pos_ = p;
}

void Lexer::UnreadPeek() {
  if (has_peek_) {
    pos_ = peek_.offset - base_;
    has_peek_ = false;
  }
}

Lexer::Skipped Lexer::SkipQuotedOrComment() {
  const size_t n = text_.size();
  const size_t start = pos_;
  const char c = text_[pos_];
  if (c == '"' || c == '\'') {
    const size_t close = QuotedEnd(text_.data(), n, start);  // as Lex() ends strings
    if (close >= n) return Skipped::kUnterminated;
    pos_ = close + 1;
    return Skipped::kSkipped;
  }
  if (c != '/' || start + 1 >= n) return Skipped::kNothing;
  if (text_[start + 1] == '*') {
    const size_t end = text_.find("*/", start + 2);
    if (end == std::string_view::npos) return Skipped::kUnterminated;
    pos_ = end + 2;
    return Skipped::kSkipped;
  }
  if (text_[start + 1] == '/') {
    const size_t end = text_.find('\n', start);
    pos_ = end == std::string_view::npos ? n : end;
    return Skipped::kSkipped;
  }
  return Skipped::kNothing;
}

std::string_view Lexer::ScanRawValue(bool stop_at_body) {
  UnreadPeek();  // raw scanning starts at the character level
  const size_t n = text_.size();
  const char* const s = text_.data();
  while (pos_ < n && (s[pos_] == ' ' || s[pos_] == '\t')) ++pos_;
  const size_t start = pos_;
  int64_t depth = 0;  // not int: a 2 GiB run of brackets must not overflow it
  for (;;) {
    // Metadata and backend configs are most of a dump's text: the characters that cannot end
    // or nest anything are passed over here.
    while (pos_ < n && !kRawStop[static_cast<unsigned char>(s[pos_])]) ++pos_;
    if (pos_ >= n) break;
    const char c = s[pos_];
    // Inside brackets a // comment is part of the value (its newline keeps it from swallowing
    // what follows when the value is printed back); outside, it ends the value, as a newline does.
    if (depth == 0 && c == '/' && pos_ + 1 < n && s[pos_ + 1] == '/') break;
    if (c == '"' || c == '\'' || c == '/') {
      // An unterminated string or comment ends the value before it, so that the tokenizer reports
      // it; inside a value kept verbatim it would swallow whatever is printed after the value.
      const Skipped skipped = SkipQuotedOrComment();
      if (skipped == Skipped::kUnterminated) break;
      if (skipped == Skipped::kSkipped) continue;
    } else if (c == '{' || c == '[' || c == '(') {
      if (stop_at_body && depth == 0 && c == '{' && pos_ > start &&
          (s[pos_ - 1] == ' ' || s[pos_ - 1] == '\t')) {
        break;
      }
      ++depth;
    } else if (c == '}' || c == ']' || c == ')') {
      if (depth == 0) break;
      --depth;
    } else if (depth == 0) {  // ',', '\n' or '\r'
      break;
    }
    ++pos_;
  }
  size_t end = pos_;
  while (end > start && (s[end - 1] == ' ' || s[end - 1] == '\t')) --end;
  return text_.substr(start, end - start);
}

bool Lexer::SkipBalancedParen(std::string_view& inside) {
  UnreadPeek();
  const size_t n = text_.size();
  const char* const s = text_.data();
  const size_t start = pos_;
  int64_t depth = 1;
  for (;;) {
    while (pos_ < n && !kParenStop[static_cast<unsigned char>(s[pos_])]) ++pos_;
    if (pos_ >= n) return false;
    const char c = s[pos_];
    if (c == '"' || c == '\'' || c == '/') {
      const Skipped skipped = SkipQuotedOrComment();
      if (skipped == Skipped::kUnterminated) return false;
      if (skipped == Skipped::kSkipped) continue;
    } else if (c == '(') {
      ++depth;
    } else if (--depth == 0) {  // ')'
      inside = text_.substr(start, pos_ - start);
      ++pos_;
      return true;
    }
    ++pos_;
  }
}

bool Lexer::TakeName(Token& out) {
  if (has_peek_) return false;
  const char* const s = text_.data();
  const size_t n = text_.size();
  size_t p = pos_;
  while (p < n && s[p] == ' ') ++p;
  if (p >= n || !kIdentStart[static_cast<unsigned char>(s[p])]) return false;
  // As Lex() reads a name: no '-' at its end, a "#3" suffix, and "inf"/"nan" are numbers.
  const size_t start = p;
  const size_t scanned = ScanNameChars(s, p + 1, n);
  p = scanned;
  while (p > start + 1 && s[p - 1] == '-') --p;
  if (p == scanned) p = SkipTupleIndexSuffix(p);
  const std::string_view name(s + start, p - start);
  if (name == "inf" || name == "nan") return false;
  out.kind = TokenKind::kName;
  out.text = name;
  out.offset = base_ + start;
  pos_ = p;
  return true;
}

bool Lexer::TakePlainOperands(std::vector<Token>& names) {
  if (has_peek_) return false;
  const char* const s = text_.data();
  const size_t n = text_.size();
  const size_t first = names.size();
  size_t p = pos_;
  for (;;) {
    if (p < n && s[p] == ' ') ++p;
    if (p >= n || s[p] != '%') break;
    const size_t start = p++;
    p = ScanNameChars(s, p, n);
    // A name must follow the '%', and end where the lexer would end it: no "#3" suffix.
    if (p == start + 1 || p >= n || s[p] == '#') break;
    names.push_back(
        {TokenKind::kPercent, std::string_view(s + start + 1, p - start - 1), base_ + start});
    if (s[p] == ' ') ++p;
    if (p < n && s[p] == ')') {
      pos_ = p + 1;
      return true;
    }
    if (p >= n || s[p] != ',') break;
    ++p;
  }
  names.resize(first);
  return false;
}

// Compact get-tuple-element operands (XLA's --xla_dump_compact_gte, on by default since 2025):
// "%t#3" is element 3 of tuple %t, "%t#3#1" element 1 of that. The suffix belongs to the name.
size_t Lexer::SkipTupleIndexSuffix(size_t p) const {
  const size_t n = text_.size();
  while (p + 1 < n && text_[p] == '#' && IsDigit(text_[p + 1])) {
    p += 2;
    while (p < n && IsDigit(text_[p])) ++p;
  }
  return p;
}

char Lexer::CharAfterPeek() {
  Peek();
  size_t p = pos_;
  while (p < text_.size() &&
         (text_[p] == ' ' || text_[p] == '\t' || text_[p] == '\n' || text_[p] == '\r')) {
    ++p;
  }
  return p < text_.size() ? text_[p] : '\0';
}

bool Lexer::AtEndOfLine() {
  UnreadPeek();
  size_t p = pos_;
  const size_t n = text_.size();
  while (p < n && (text_[p] == ' ' || text_[p] == '\t' || text_[p] == '\r')) ++p;
  return p >= n || text_[p] == '\n';
}

}  // namespace spmdsim::ir
