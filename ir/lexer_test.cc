#include "ir/lexer.h"

#include <catch2/catch.hpp>
#include <vector>

namespace spmdsim::ir {
namespace {

std::vector<TokenKind> Kinds(std::string_view text) {
  Lexer lexer(text);
  std::vector<TokenKind> kinds;
  for (Token t = lexer.Next(); t.kind != TokenKind::kEof; t = lexer.Next()) {
    kinds.push_back(t.kind);
    if (t.kind == TokenKind::kError) break;
  }
  return kinds;
}

TEST_CASE("lexer splits an instruction line into tokens") {
  Lexer lexer("%add.3 = f32[8]{0} add(f32[8]{0} %x, %y) /*index=5*/ // tail");
  std::vector<std::string_view> texts;
  for (Token t = lexer.Next(); t.kind != TokenKind::kEof; t = lexer.Next()) texts.push_back(t.text);
  const std::vector<std::string_view> expected = {"add.3", "=",   "f32", "[",   "8", "]", "{", "0",
                                                  "}",     "add", "(",   "f32", "[", "8", "]", "{",
                                                  "0",     "}",   "x",   ",",   "y", ")"};
  CHECK(texts == expected);
}

TEST_CASE("lexer token kinds") {
  CHECK(Kinds("get-tuple-element") == std::vector{TokenKind::kName});
  CHECK(Kinds("-> <= ? *") ==
        std::vector{TokenKind::kArrow, TokenKind::kLeq, TokenKind::kQuestion, TokenKind::kStar});
  CHECK(Kinds("-12 3.5 1e-3 inf -nan") == std::vector{TokenKind::kInt, TokenKind::kNumber,
                                                      TokenKind::kNumber, TokenKind::kNumber,
                                                      TokenKind::kNumber});
  CHECK(Kinds(R"("a \"quoted\" string")") == std::vector{TokenKind::kString});
  CHECK(Kinds("\"unterminated").back() == TokenKind::kError);
  CHECK(Kinds("/* never closed").back() == TokenKind::kError);
  CHECK(Kinds("%").back() == TokenKind::kError);
  CHECK(Kinds("a->b") == std::vector{TokenKind::kName, TokenKind::kArrow, TokenKind::kName});
}

TEST_CASE("raw values stop at a top-level comma or newline") {
  Lexer lexer(R"({devices=[2,4]<=[8] metadata={op_name="a,b"}}, next=1)");
  CHECK(lexer.ScanRawValue() == R"({devices=[2,4]<=[8] metadata={op_name="a,b"}})");
  Lexer dims("b01f_01io->b01f, x");
  CHECK(dims.ScanRawValue() == "b01f_01io->b01f");
  Lexer line("[2,4]<=[4,2]T(1,0)\nnext");
  CHECK(line.ScanRawValue() == "[2,4]<=[4,2]T(1,0)");
}

TEST_CASE("tokens carry file offsets from the base") {
  Lexer lexer("  x", 100);
  CHECK(lexer.Next().offset == 102);
}

}  // namespace
}  // namespace spmdsim::ir
