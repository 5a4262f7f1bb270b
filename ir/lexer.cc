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

Token Lexer::Lex() {
  // Most tokens follow one blank or none: that is skipped here, SkipTrivia does the rest.
  if (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  if (pos_ < text_.size() &&
      (static_cast<unsigned char>(text_[pos_]) <= ' ' || text_[pos_] == '/')) {
    SkipTrivia();
  }
  const size_t n = text_.size();
  Token tok;
  tok.offset = base_ + pos_;
  if (pos_ >= n) {
    tok.kind = TokenKind::kEof;
    return tok;
  }
  const size_t start = pos_;
  const auto single = [&](TokenKind kind) {
    ++pos_;
    tok.kind = kind;
    tok.text = text_.substr(start, 1);
    return tok;
  };
  const char c = text_[pos_];
  switch (c) {
    case '{':
      return single(TokenKind::kLbrace);
    case '}':
      return single(TokenKind::kRbrace);
    case '(':
      return single(TokenKind::kLparen);
    case ')':
      return single(TokenKind::kRparen);
    case '[':
      return single(TokenKind::kLsquare);
    case ']':
      return single(TokenKind::kRsquare);
    case ',':
      return single(TokenKind::kComma);
    case ':':
      return single(TokenKind::kColon);
    case '=':
      return single(TokenKind::kEqual);
    case '?':
      return single(TokenKind::kQuestion);
    case '*':
      return single(TokenKind::kStar);
    case '/':
      // Only an unterminated /* comment reaches here.
      pos_ = n;
      tok.kind = TokenKind::kError;
      tok.text = "unterminated comment";
      return tok;
    case '<':
      if (pos_ + 1 < n && text_[pos_ + 1] == '=') {
        pos_ += 2;
        tok.kind = TokenKind::kLeq;
        tok.text = text_.substr(start, 2);
        return tok;
      }
      return single(TokenKind::kError);
    case '\'':
    case '"': {
      const char quote = c;
      // XLA escapes newlines in the strings it prints, so a raw one means a missing quote; ending
      // the string there reports it at its opening quote instead of lines later.
      // (Strings are a third of a dump: the scan runs on locals, which stay in registers.)
      const char* const s = text_.data();
      size_t p = pos_ + 1;
      // Fast path (memchr) for the usual string: no escape and no line break before its quote.
      const void* close = std::memchr(s + p, quote, n - p);
      const size_t end =
          close != nullptr ? static_cast<size_t>(static_cast<const char*>(close) - s) : n;
      const std::string_view body = text_.substr(p, end - p);
      if (end < n && body.find('\\') == std::string_view::npos &&
          body.find('\n') == std::string_view::npos) {
        p = end;
      }
      while (p < n && s[p] != quote && s[p] != '\n') {
        if (s[p] == '\\' && p + 1 < n && s[p + 1] != '\n') ++p;
        ++p;
      }
      pos_ = p;
      if (pos_ >= n || text_[pos_] == '\n') {
        tok.kind = TokenKind::kError;
        tok.text = "unterminated string";
        return tok;
      }
      tok.kind = TokenKind::kString;
      tok.text = text_.substr(start + 1, pos_ - start - 1);
      ++pos_;
      return tok;
    }
    case '%': {
      size_t p = pos_ + 1;
      while (p < n && kIdentChar[static_cast<unsigned char>(text_[p])]) ++p;
      if (p > pos_ + 1) p = SkipTupleIndexSuffix(p);
      pos_ = p;
      if (pos_ == start + 1) {
        tok.kind = TokenKind::kError;
        tok.text = text_.substr(start, 1);
        return tok;
      }
      tok.kind = TokenKind::kPercent;
      tok.text = text_.substr(start + 1, pos_ - start - 1);
      return tok;
    }
    default:
      break;
  }
  if (c == '-' && pos_ + 1 < n && text_[pos_ + 1] == '>') {
    pos_ += 2;
    tok.kind = TokenKind::kArrow;
    tok.text = text_.substr(start, 2);
    return tok;
  }
  if (IsDigit(c) ||
      ((c == '-' || c == '+') && pos_ + 1 < n &&
       (IsDigit(text_[pos_ + 1]) || text_[pos_ + 1] == 'i' || text_[pos_ + 1] == 'n'))) {
    ++pos_;
    bool is_int = IsDigit(c);
    while (pos_ < n && IsDigit(text_[pos_])) {
      ++pos_;
      is_int = true;
    }
    // Anything more (".5", "e-3", "x1p", "inf", "nan") makes it a non-integer number.
    const size_t int_end = pos_;
    while (pos_ < n && (kIdentChar[static_cast<unsigned char>(text_[pos_])] ||
                        ((text_[pos_] == '+' || text_[pos_] == '-') &&
                         (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E' ||
                          text_[pos_ - 1] == 'p' || text_[pos_ - 1] == 'P')))) {
      ++pos_;
    }
    tok.kind = (is_int && pos_ == int_end) ? TokenKind::kInt : TokenKind::kNumber;
    tok.text = text_.substr(start, pos_ - start);
    return tok;
  }
  if (kIdentStart[static_cast<unsigned char>(c)]) {
    size_t p = pos_ + 1;
    while (p < n && kIdentChar[static_cast<unsigned char>(text_[p])]) ++p;
    pos_ = p;
    // A '-' may not end a name ("a->b" lexes as a, ->, b).
    while (pos_ > start + 1 && text_[pos_ - 1] == '-') --pos_;
    if (pos_ == p) pos_ = SkipTupleIndexSuffix(pos_);
    tok.kind = TokenKind::kName;
    tok.text = text_.substr(start, pos_ - start);
    if (tok.text == "inf" || tok.text == "nan") tok.kind = TokenKind::kNumber;
    return tok;
  }
  return single(TokenKind::kError);
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
    size_t p = pos_ + 1;
    while (p < n && text_[p] != c && text_[p] != '\n') {  // as Lex() ends strings
      if (text_[p] == '\\' && p + 1 < n && text_[p + 1] != '\n') ++p;
      ++p;
    }
    if (p >= n || text_[p] != c) return Skipped::kUnterminated;
    pos_ = p + 1;
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
  while (pos_ < n && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  const size_t start = pos_;
  int64_t depth = 0;  // not int: a 2 GiB run of brackets must not overflow it
  while (pos_ < n) {
    const char c = text_[pos_];
    // Inside brackets a // comment is part of the value (its newline keeps it from swallowing
    // what follows when the value is printed back); outside, it ends the value, as a newline does.
    if (depth == 0 && c == '/' && pos_ + 1 < n && text_[pos_ + 1] == '/') break;
    // An unterminated string or comment ends the value before it, so that the tokenizer reports
    // it; inside a value kept verbatim it would swallow whatever is printed after the value.
    const Skipped skipped = SkipQuotedOrComment();
    if (skipped == Skipped::kUnterminated) break;
    if (skipped == Skipped::kSkipped) continue;
    if (stop_at_body && depth == 0 && c == '{' && pos_ > start &&
        (text_[pos_ - 1] == ' ' || text_[pos_ - 1] == '\t')) {
      break;
    }
    if (c == '{' || c == '[' || c == '(') {
      ++depth;
    } else if (c == '}' || c == ']' || c == ')') {
      if (depth == 0) break;
      --depth;
    } else if (depth == 0 && (c == ',' || c == '\n' || c == '\r')) {
      break;
    }
    ++pos_;
  }
  size_t end = pos_;
  while (end > start && (text_[end - 1] == ' ' || text_[end - 1] == '\t')) --end;
  return text_.substr(start, end - start);
}

bool Lexer::SkipBalancedParen(std::string_view& inside) {
  UnreadPeek();
  const size_t n = text_.size();
  const size_t start = pos_;
  int64_t depth = 1;
  while (pos_ < n) {
    const Skipped skipped = SkipQuotedOrComment();
    if (skipped == Skipped::kUnterminated) return false;
    if (skipped == Skipped::kSkipped) continue;
    const char c = text_[pos_];
    if (c == '(') {
      ++depth;
    } else if (c == ')') {
      if (--depth == 0) {
        inside = text_.substr(start, pos_ - start);
        ++pos_;
        return true;
      }
    }
    ++pos_;
  }
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
