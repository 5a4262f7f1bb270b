// Tokens of HLO text. The lexer works over a string_view (a whole file, or one attribute value
// with its offset in the file so that errors still point at the right column) and never copies.
//
// Whitespace, newlines, /* block */ comments and // line comments separate tokens and are skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace spmdsim::ir {

enum class TokenKind : uint8_t {
  kEof,       // end of input
  kError,     // a character that starts no token, or an unterminated string/comment
  kLbrace,    // {
  kRbrace,    // }
  kLparen,    // (
  kRparen,    // )
  kLsquare,   // [
  kRsquare,   // ]
  kComma,     // ,
  kColon,     // :
  kEqual,     // =
  kArrow,     // ->
  kLeq,       // <=
  kQuestion,  // ?   (unbounded dynamic dimension)
  kStar,      // *   (combined tile dimension)
  kName,      // [a-zA-Z_][a-zA-Z0-9_.\-]*(#[0-9]+)*   identifiers, opcodes, keywords, types
  kPercent,   // %[a-zA-Z0-9_.\-]+(#[0-9]+)*           instruction or computation name; text
              //                                        excludes '%'. A '#N' suffix is a compact
              //                                        tuple operand (element N of the tuple).
  kInt,       // [-+]?[0-9]+
  kNumber,    // other numeric literals: -?[0-9]+(.[0-9]*)?([eE][+-]?[0-9]+)?, 0x1p-3, inf, nan
  kString,    // "([^"\\]|\\.)*" or '...' (mesh axis names); text excludes the quotes
};

std::string_view TokenKindName(TokenKind kind);

// Scanning helpers over s[0, n), shared with the parser's shape cache: the end of the run of
// name characters [a-zA-Z0-9_.-] that starts at p, and the first blank (' ', '\t', '\n', '\r')
// at or after p (n if none). Names and shapes are most of a dump's tokens: 16 bytes are
// classified at a time where SSE2 is there, inline so that the constants stay in registers.
inline bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}
inline size_t ScanNameChars(const char* s, size_t p, size_t n) {
#if defined(__SSE2__)
  // Bytes of 0x80 and up are negative as signed chars and fall outside every range.
  const __m128i lower_a = _mm_set1_epi8('a' - 1);
  const __m128i lower_z = _mm_set1_epi8('z' + 1);
  const __m128i digit_0 = _mm_set1_epi8('0' - 1);
  const __m128i digit_9 = _mm_set1_epi8('9' + 1);
  const __m128i case_bit = _mm_set1_epi8(0x20);
  const __m128i underscore = _mm_set1_epi8('_');
  const __m128i dot = _mm_set1_epi8('.');
  const __m128i dash = _mm_set1_epi8('-');
  while (p + 16 <= n) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + p));
    const __m128i folded = _mm_or_si128(x, case_bit);  // 'A'-'Z' -> 'a'-'z'
    const __m128i letter =
        _mm_and_si128(_mm_cmpgt_epi8(folded, lower_a), _mm_cmplt_epi8(folded, lower_z));
    const __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(x, digit_0), _mm_cmplt_epi8(x, digit_9));
    const __m128i punct =
        _mm_or_si128(_mm_cmpeq_epi8(x, underscore),
                     _mm_or_si128(_mm_cmpeq_epi8(x, dot), _mm_cmpeq_epi8(x, dash)));
    const auto name =
        static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(letter, _mm_or_si128(digit, punct))));
    if (name != 0xffff) return p + static_cast<size_t>(__builtin_ctz(~name));
    p += 16;
  }
#endif
  while (p < n && IsNameChar(s[p])) ++p;
  return p;
}

inline size_t ScanToBlank(const char* s, size_t p, size_t n) {
#if defined(__SSE2__)
  const __m128i space = _mm_set1_epi8(' ');
  const __m128i tab = _mm_set1_epi8('\t');
  const __m128i newline = _mm_set1_epi8('\n');
  const __m128i cr = _mm_set1_epi8('\r');
  while (p + 16 <= n) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + p));
    const __m128i blank =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, space), _mm_cmpeq_epi8(x, tab)),
                     _mm_or_si128(_mm_cmpeq_epi8(x, newline), _mm_cmpeq_epi8(x, cr)));
    const auto found = static_cast<unsigned>(_mm_movemask_epi8(blank));
    if (found != 0) return p + static_cast<size_t>(__builtin_ctz(found));
    p += 16;
  }
#endif
  while (p < n && s[p] != ' ' && s[p] != '\t' && s[p] != '\n' && s[p] != '\r') ++p;
  return p;
}

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string_view text;
  size_t offset = 0;  // byte offset in the file (not in the lexer's view)
};

class Lexer {
 public:
  // base_offset: where `text` starts in its file, added to every token's offset.
  explicit Lexer(std::string_view text, size_t base_offset = 0) : text_(text), base_(base_offset) {}

  // Returns the next token and consumes it. (Next and Peek are inline: they run per token.)
  // Tokens are lexed straight into where they are kept: copying a token just written field by
  // field reads it back in wider loads than it was stored with, which the CPU cannot forward from
  // its store buffer (a stall per token).
  Token Next() {
    Token token;  // one object returned on every path: the caller's own (no copy)
    if (has_peek_) {
      has_peek_ = false;
      token = peek_;
    } else {
      Lex(token);
    }
    return token;
  }
  // Returns the next token without consuming it (one token of look-ahead, cached).
  const Token& Peek() {
    if (!has_peek_) {
      Lex(peek_);
      has_peek_ = true;
    }
    return peek_;
  }

  // Fast paths for the text as XLA prints it, which take a token without lexing it. Each is
  // exact: it succeeds only where Next() would have returned the same token(s), and otherwise
  // consumes nothing, so the caller goes on with Peek/Next.
  //
  // TakeSingle: when nothing is peeked and the next token is the one-character token of `kind`
  // ('{', ')', ',', '=', ...) after at most one blank, consumes it (into *out when given).
  bool TakeSingle(TokenKind kind, Token* out = nullptr) {
    if (has_peek_) return false;
    const char c = SingleChar(kind);
    size_t p = pos_;
    if (p < text_.size() && text_[p] == ' ') ++p;
    if (c == '\0' || p >= text_.size() || text_[p] != c) return false;
    if (out != nullptr) {
      out->kind = kind;
      out->text = text_.substr(p, 1);
      out->offset = base_ + p;
    }
    pos_ = p + 1;
    return true;
  }
  // The file offset where the next token starts (the peeked one, or the next after the blanks,
  // line breaks and comments Lex would skip), without lexing it.
  size_t NextTokenOffset() {
    if (has_peek_) return peek_.offset;
    if (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
    if (pos_ < text_.size() &&
        (static_cast<unsigned char>(text_[pos_]) <= ' ' || text_[pos_] == '/')) {
      SkipTrivia();
    }
    return base_ + pos_;
  }
  // TakeName: when nothing is peeked and the next token is a name (kName) after blanks only,
  // consumes it into `out`.
  bool TakeName(Token& out);
  // An operand list as XLA prints it, after its '(': "%a, %b.1, %c)" (plain %names, each after
  // at most one blank, ", " between them), through the ')'. Appends the names as kPercent tokens;
  // false, with nothing consumed, at anything else (typed operands, compact "%t#3" operands,
  // names without '%', comments, line breaks, an empty list).
  bool TakePlainOperands(std::vector<Token>& names);

  // Position of the next unread character, as a file offset.
  size_t offset() const { return base_ + pos_; }
  std::string_view text() const { return text_; }
  size_t base_offset() const { return base_; }
  // Continues lexing at a file offset inside this lexer's text (drops a peeked token); for
  // callers that recognised a stretch of text by other means (the layout cache).
  void SkipTo(size_t file_offset) {
    has_peek_ = false;
    pos_ = file_offset - base_;
  }

  // Raw scanning for attribute values: returns the text from the current position up to (not
  // including) the first ',', newline or // comment outside brackets, braces, parens and strings,
  // or the end of a bracketed group that closes one we did not open, or an unterminated string or
  // comment. Leading blanks are skipped; strings and comments are stepped over whole, as the
  // tokenizer sees them.
  //
  // With `stop_at_body`, a '{' outside brackets that follows a blank also ends the value: the
  // body of a computation whose header ends with an attribute (`%c (...) -> f32[], a=x {`), as
  // the printer writes it, must not be read as part of the value.
  std::string_view ScanRawValue(bool stop_at_body = false);
  // Skips to the ')' that closes an already consumed '(' (constant payloads) and returns the text
  // between, stepping over strings and comments. Returns false on an unbalanced input or an
  // unterminated string or comment.
  bool SkipBalancedParen(std::string_view& inside);
  // The first non-blank character after the peeked token, or '\0' at the end.
  char CharAfterPeek();
  // True when only blanks/comments remain before the next newline (or end of input).
  bool AtEndOfLine();

 private:
  static char SingleChar(TokenKind kind) {
    switch (kind) {
      case TokenKind::kLbrace:
        return '{';
      case TokenKind::kRbrace:
        return '}';
      case TokenKind::kLparen:
        return '(';
      case TokenKind::kRparen:
        return ')';
      case TokenKind::kLsquare:
        return '[';
      case TokenKind::kRsquare:
        return ']';
      case TokenKind::kComma:
        return ',';
      case TokenKind::kColon:
        return ':';
      case TokenKind::kEqual:
        return '=';
      case TokenKind::kQuestion:
        return '?';
      case TokenKind::kStar:
        return '*';
      default:
        return '\0';
    }
  }
  void SkipTrivia();
  // Steps over the quoted string ("..." or '...'), /* comment */ or // comment that starts at the
  // current position, as the tokenizer would. An unterminated string or /* comment is not
  // stepped over.
  enum class Skipped { kNothing, kSkipped, kUnterminated };
  Skipped SkipQuotedOrComment();
  // Moves back before a peeked token so character-level scanning starts at the right place.
  void UnreadPeek();
  void Lex(Token& out);
  // The end of a "#N#M..." tuple-index suffix that starts at p (p itself when there is none).
  size_t SkipTupleIndexSuffix(size_t p) const;

  std::string_view text_;
  size_t base_;
  size_t pos_ = 0;
  bool has_peek_ = false;
  Token peek_;
};

}  // namespace spmdsim::ir
