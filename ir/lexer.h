// Tokens of HLO text. The lexer works over a string_view (a whole file, or one attribute value
// with its offset in the file so that errors still point at the right column) and never copies.
//
// Whitespace, newlines, /* block */ comments and // line comments separate tokens and are skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

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
  Token Next() {
    if (has_peek_) {
      has_peek_ = false;
      return peek_;
    }
    return Lex();
  }
  // Returns the next token without consuming it (one token of look-ahead, cached).
  const Token& Peek() {
    if (!has_peek_) {
      peek_ = Lex();
      has_peek_ = true;
    }
    return peek_;
  }

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
  void SkipTrivia();
  // Steps over the quoted string ("..." or '...'), /* comment */ or // comment that starts at the
  // current position, as the tokenizer would. An unterminated string or /* comment is not
  // stepped over.
  enum class Skipped { kNothing, kSkipped, kUnterminated };
  Skipped SkipQuotedOrComment();
  // Moves back before a peeked token so character-level scanning starts at the right place.
  void UnreadPeek();
  Token Lex();
  // The end of a "#N#M..." tuple-index suffix that starts at p (p itself when there is none).
  size_t SkipTupleIndexSuffix(size_t p) const;

  std::string_view text_;
  size_t base_;
  size_t pos_ = 0;
  bool has_peek_ = false;
  Token peek_;
};

}  // namespace spmdsim::ir
