// Grammar helpers over a Lexer shared by the module parser and the attribute sub-parsers. Every
// failure throws ParseError with the file offset; the public entry points catch it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/lexer.h"
#include "ir/source.h"

namespace spmdsim::ir {

// Nesting deeper than this (tuples in tuples, sharding in sharding) is rejected as malformed.
inline constexpr int kMaxNestingDepth = 64;

class TokenReader {
 public:
  explicit TokenReader(Lexer& lexer) : lexer_(lexer) {}

  Lexer& lexer() { return lexer_; }
  const Token& Peek() { return lexer_.Peek(); }
  Token Next() { return lexer_.Next(); }
  bool PeekIs(TokenKind kind) { return lexer_.Peek().kind == kind; }
  bool PeekIsName(std::string_view text) {
    const Token& t = lexer_.Peek();
    return t.kind == TokenKind::kName && t.text == text;
  }
  // Consumes the next token when it has this kind. (Inline, with Expect: they run per token.)
  bool Accept(TokenKind kind) {
    if (lexer_.TakeSingle(kind)) return true;
    if (lexer_.Peek().kind != kind) return false;
    lexer_.Next();
    return true;
  }

  // Consumes a token of this kind or throws "expected <what>, got <token>".
  Token Expect(TokenKind kind, std::string_view what = {}) {
    Token token;
    if (lexer_.TakeSingle(kind, &token)) return token;
    token = lexer_.Next();
    if (token.kind != kind) FailExpected(what.empty() ? TokenKindName(kind) : what, token);
    return token;
  }
  void ExpectName(std::string_view text);
  // A name, a %name, or (as identifiers may be numbers in old dumps) an integer.
  Token ExpectIdentifier(std::string_view what);
  int64_t ExpectInt(std::string_view what = "an integer");
  // '{' int (',' int)* '}' or '{' '}'
  std::vector<int64_t> ExpectIntList(TokenKind open = TokenKind::kLbrace,
                                     TokenKind close = TokenKind::kRbrace);

  [[noreturn]] void Fail(const Token& at, std::string message);
  [[noreturn]] void FailExpected(std::string_view what, const Token& got);

 private:
  Lexer& lexer_;
};

// "'{'", "name 'foo'", "end of input" — how a token is named in error messages.
std::string DescribeToken(const Token& token);

// Parses a decimal integer with overflow checking; false on failure.
bool ParseInt64(std::string_view text, int64_t& value);

}  // namespace spmdsim::ir
