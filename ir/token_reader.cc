#include "ir/token_reader.h"

#include <charconv>

namespace spmdsim::ir {

std::string DescribeToken(const Token& token) {
  switch (token.kind) {
    case TokenKind::kEof:
      return "end of input";
    case TokenKind::kError: {
      if (token.text.size() != 1) return std::string(token.text);  // "unterminated string"
      const auto c = static_cast<unsigned char>(token.text[0]);
      if (c >= 0x20 && c < 0x7f) return "'" + std::string(token.text) + "'";
      static constexpr char kHex[] = "0123456789abcdef";
      return std::string("byte 0x") + kHex[c >> 4] + kHex[c & 15];  // binary input
    }
    case TokenKind::kName:
    case TokenKind::kInt:
    case TokenKind::kNumber:
      return "'" + std::string(token.text.substr(0, 40)) + "'";
    case TokenKind::kPercent:
      return "'%" + std::string(token.text.substr(0, 40)) + "'";
    case TokenKind::kString:
      return "string \"" + std::string(token.text.substr(0, 40)) + "\"";
    default:
      return std::string(TokenKindName(token.kind));
  }
}

bool ParseInt64(std::string_view text, int64_t& value) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end;
}

void TokenReader::Fail(const Token& at, std::string message) {
  throw ParseError{at.offset, std::move(message)};
}

void TokenReader::FailExpected(std::string_view what, const Token& got) {
  Fail(got, "expected " + std::string(what) + ", got " + DescribeToken(got));
}

void TokenReader::ExpectName(std::string_view text) {
  Token token = lexer_.Next();
  if (token.kind != TokenKind::kName || token.text != text) {
    FailExpected("'" + std::string(text) + "'", token);
  }
}

Token TokenReader::ExpectIdentifier(std::string_view what) {
  Token token = lexer_.Next();
  if (token.kind != TokenKind::kName && token.kind != TokenKind::kPercent &&
      token.kind != TokenKind::kInt) {
    FailExpected(what, token);
  }
  return token;
}

int64_t TokenReader::ExpectInt(std::string_view what) {
  Token token = lexer_.Next();
  int64_t value = 0;
  if (token.kind != TokenKind::kInt) FailExpected(what, token);
  if (!ParseInt64(token.text, value))
    Fail(token, "integer out of range: " + std::string(token.text));
  return value;
}

std::vector<int64_t> TokenReader::ExpectIntList(TokenKind open, TokenKind close) {
  Expect(open);
  std::vector<int64_t> values;
  if (Accept(close)) return values;
  do {
    values.push_back(ExpectInt());
  } while (Accept(TokenKind::kComma));
  Expect(close);
  return values;
}

}  // namespace spmdsim::ir
