// The parser's fast paths (issue #14) must read text exactly as the token-by-token path does:
// the lexer's Take* shortcuts against Next(), operands resolved as they are read against names
// defined later, the name table filed one instruction late against redefinitions, and the
// pooled tuple shapes and large-computation sizing against the IR they produce.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "ir/lexer.h"
#include "ir/name_table.h"
#include "ir/parser.h"

namespace spmdsim::ir {
namespace {

ParseResult Parse(std::string_view text) {
  return ParseHloText(std::make_shared<SourceBuffer>("test.hlo", std::string(text)));
}

std::string ErrorOf(std::string_view text) {
  ParseResult result = Parse(text);
  return result.ok() ? "ok" : result.error->message;
}

std::vector<std::string> Names(const std::vector<HloInstruction*>& instrs) {
  std::vector<std::string> names;
  for (const HloInstruction* instr : instrs) names.emplace_back(instr->name);
  return names;
}

std::vector<std::string> Names(std::span<HloInstruction*> instrs) {
  return Names(std::vector<HloInstruction*>(instrs.begin(), instrs.end()));
}

TEST_CASE("the name scanners classify every byte as the lexer's tables do") {
  for (int c = 0; c < 256; ++c) {
    const bool name_char = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    const bool blank = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    for (size_t at : {size_t{0}, size_t{7}, size_t{15}, size_t{16}, size_t{30}}) {
      std::string name(40, 'a');
      name[at] = static_cast<char>(c);
      CHECK(ScanNameChars(name.data(), 0, name.size()) == (name_char ? name.size() : at));
      std::string other(40, 'x');
      other[at] = static_cast<char>(c);
      CHECK(ScanToBlank(other.data(), 0, other.size()) == (blank ? at : other.size()));
    }
  }
  const std::string_view short_text = "ab.c-9_";
  CHECK(ScanNameChars(short_text.data(), 0, 3) == 3);  // the end bounds the scan
}

TEST_CASE("TakeSingle, TakeName and TakePlainOperands read what Next() reads") {
  // Each text is read twice: by Next() alone, and with every fast path tried first.
  const std::vector<std::string_view> texts = {
      "%a = f32[4]{0} add(%b, %c.1), dimensions={0}\n  %d = f32[] negate(%a)",
      "x ,  y )( = :: ** ?? [ ] { }",
      "add(%t#0, %t#1) add(%x)#1 add(%x, f32[] %y) add( %x ,%y ) add(%x\n, %y) add(%x, /*c*/ %y)",
      "name- inf nan infinity _x %x- %x# %1 %",
      "a(%b,%c) a(%b, c) a(%b, %c",
  };
  const auto describe = [](const Token& t) {
    return std::string(TokenKindName(t.kind)) + ":" + std::string(t.text) + "@" +
           std::to_string(t.offset);
  };
  for (std::string_view text : texts) {
    // Commas are left out of both: the operand list fast path does not return them.
    std::vector<std::string> plain;
    Lexer a(text);
    for (Token t = a.Next(); t.kind != TokenKind::kEof; t = a.Next()) {
      if (t.kind != TokenKind::kComma) plain.push_back(describe(t));
    }
    std::vector<std::string> fast;
    Lexer b(text);
    const TokenKind singles[] = {TokenKind::kComma, TokenKind::kRparen, TokenKind::kLparen,
                                 TokenKind::kEqual, TokenKind::kColon,  TokenKind::kStar};
    bool after_lparen = false;
    for (;;) {
      std::vector<Token> operands;
      if (after_lparen && b.TakePlainOperands(operands)) {
        for (const Token& o : operands) fast.push_back(describe(o));
        fast.push_back(describe({TokenKind::kRparen, ")", b.offset() - 1}));  // the list's ')'
        after_lparen = false;
        continue;
      }
      Token t;
      bool taken = b.TakeName(t);
      for (TokenKind kind : singles) taken = taken || b.TakeSingle(kind, &t);
      if (!taken) t = b.Next();
      if (t.kind == TokenKind::kEof) break;
      after_lparen = t.kind == TokenKind::kLparen;
      if (t.kind != TokenKind::kComma) fast.push_back(describe(t));
    }
    INFO(text);
    CHECK(fast == plain);
  }
}

TEST_CASE("operands may name instructions defined after them, themselves included") {
  ParseResult result = Parse(R"(HloModule m

ENTRY %e (p: f32[4]) -> f32[4] {
  ROOT %r = f32[4]{0} add(%a, %b), control-predecessors={%b, %a}
  %a = f32[4]{0} negate(%p)
  %p = f32[4]{0} parameter(0)
  %b = f32[4]{0} add(%a, %a)
  %s = f32[4]{0} add(%s, %b)
}
)");
  REQUIRE(result.ok());
  const HloComputation& entry = *result.modules[0]->entry;
  REQUIRE(entry.instructions.size() == 5);
  const HloInstruction& r = *entry.instructions[0];
  CHECK(Names(r.operands) == std::vector<std::string>{"a", "b"});
  CHECK(Names(r.control_predecessors()) == std::vector<std::string>{"b", "a"});
  CHECK(Names(entry.instructions[1]->users) == std::vector<std::string>{"r", "b"});  // once each
  CHECK(Names(entry.instructions[3]->users) == std::vector<std::string>{"r", "s"});
  CHECK(Names(entry.instructions[4]->operands) == std::vector<std::string>{"s", "b"});
  CHECK(Names(entry.instructions[4]->users) == std::vector<std::string>{"s"});
}

TEST_CASE("a redefinition is the first error, whatever fails after it") {
  const std::string head =
      "HloModule m\n\nENTRY %e (p: f32[4]) -> f32[4] {\n"
      "  %p = f32[4]{0} parameter(0)\n  %a = f32[4]{0} negate(%p)\n";
  // The next line redefines %a, then something else goes wrong: on that line, on the next, at
  // the end of the computation or of the file.
  for (const std::string tail : {
           "  %a = f32[4]{0} negate(%p), foo\n}\n",
           "  %a = f32[4 negate(%p)\n}\n",
           "  %a = f32[4]{0} negate(%p)\n  %b = f32[4]{0} negate(%p), foo\n}\n",
           "  %a = f32[4]{0} negate(%p)\n  ROOT %b = f32[4]{0} negate(%a)\n  ROOT %c = f32[4] "
           "negate(%b)\n}\n",
           "  %a = f32[4]{0} negate(%p)\n  %t#1 = f32[4]{0} negate(%p)\n}\n",
           "  %a = f32[4]{0} negate(%p)\n",
           "  %a = f32[4]{0} negate(%a)\n  %b = f32[4\n",
           "  %a = f32[4]{0} negate(%p)\n}\n",
       }) {
    INFO(tail);
    CHECK(ErrorOf(head + tail) == "redefinition of 'a'");
  }
  CHECK(ErrorOf(head + "  %b = f32[4]{0} negate(%p)\n  %b = f32[4]{0} negate(%zz)\n}\n") ==
        "redefinition of 'b'");
  CHECK(ErrorOf(head + "  %b = f32[4]{0} add(%p, %zz)\n}\n") == "'zz' is not defined in 'e'");
}

TEST_CASE("tuple shapes found by their text, comments included, parse as themselves") {
  ParseResult result = Parse(R"(HloModule m

ENTRY %e (p: f32[4]) -> (f32[4], f32[4], (f32[4], s32[])) {
  %p = f32[4]{0} parameter(0)
  %c = s32[] constant(1)
  %t = (f32[4]{0}, f32[4]{0}, (f32[4]{0}, s32[])) tuple(%p, %p, %u)
  %u = (f32[4]{0}, s32[]) tuple(%p, %c)
  %v = (f32[4]{0}, /*index=1*/f32[4]{0}, (f32[4]{0}, s32[])) tuple(%p, %p, %u)
  ROOT %w = (f32[4]{0}, f32[4]{0}, (f32[4]{0}, s32[])) tuple(%p, %p, %u)
}
)");
  REQUIRE(result.ok());
  const auto& instrs = result.modules[0]->entry->instructions;
  REQUIRE(instrs.size() == 6);
  CHECK(instrs[2]->shape.ToString() == "(f32[4]{0}, f32[4]{0}, (f32[4]{0}, s32[]))");
  CHECK(instrs[4]->shape == instrs[2]->shape.get());
  CHECK(&instrs[5]->shape.get() == &instrs[2]->shape.get());  // one pooled shape
  CHECK(ErrorOf("HloModule m\n\nENTRY %e () -> f32[] {\n  %a = (f32[], /*x) f32[] "
                "constant(0)\n}\n") != "ok");
}

TEST_CASE("a large computation parses as a small one does") {
  // Past the size at which the parser sizes its tables from the lines ahead; with lines that
  // are not instructions (comments, blank lines) and instructions sharing a line.
  std::string text =
      "HloModule m\n\nENTRY %e (p: f32[4]) -> f32[4] {\n  %p = f32[4]{0} parameter(0)\n";
  const int count = 9000;
  for (int i = 0; i < count; ++i) {
    const std::string prev = i == 0 ? "p" : "n." + std::to_string(i - 1);
    text += "  %n." + std::to_string(i) + " = f32[4]{0} add(%" + prev + ", %p)";
    text += i % 100 == 0 ? "  %m." + std::to_string(i) + " = f32[4]{0} negate(%p)\n" : "\n";
    if (i % 1000 == 0) text += "  // a comment line\n\n";
  }
  text += "  ROOT %r = f32[4]{0} negate(%n." + std::to_string(count - 1) + ")\n}\n";
  ParseResult result = Parse(text);
  REQUIRE(result.ok());
  const HloComputation& entry = *result.modules[0]->entry;
  CHECK(entry.instructions.size() == static_cast<size_t>(1 + count + count / 100 + 1));
  CHECK(entry.instructions[0]->users.size() == static_cast<size_t>(count + count / 100));
  CHECK(result.modules[0]->FindComputation("e") == &entry);
  CHECK(entry.root->operands[0]->name == "n." + std::to_string(count - 1));
}

TEST_CASE("a name table keeps every name through growth and Clear") {
  NameTable<int> table;
  std::vector<std::string> names;
  for (int i = 0; i < 100000; ++i) names.push_back("name." + std::to_string(i));
  for (int round = 0; round < 3; ++round) {
    table.Clear();
    if (round == 2) table.Reserve(names.size());
    for (size_t i = 0; i < names.size(); ++i)
      REQUIRE(table.Insert(names[i], static_cast<int>(i) + 1));
    CHECK(!table.Insert(names[5], 0));
    for (size_t i = 0; i < names.size(); i += 97)
      CHECK(table.Find(names[i]) == static_cast<int>(i) + 1);
    CHECK(table.Find("name.x") == 0);
  }
}

}  // namespace
}  // namespace spmdsim::ir
