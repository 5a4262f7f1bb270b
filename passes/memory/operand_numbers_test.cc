// At which numbers a user reads an operand: a narrow user scanned, a wide one indexed.
#include "passes/memory/operand_numbers.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "passes/memory/memory_test_modules.h"

namespace spmdsim::passes {
namespace {

using testing::Find;
using testing::Parse;

TEST_CASE("an operand's numbers, and its first, for narrow and wide users alike") {
  // 40 operands (past what is scanned, so they are indexed): %x at 3, 17 and 39, %y at 0 and
  // every other slot %w; %z is no operand. The narrow user lists %x at 1 and 2.
  std::string operands;
  for (int i = 0; i < 40; ++i) {
    const char* name = i == 3 || i == 17 || i == 39 ? "%x" : i == 0 ? "%y" : "%w";
    operands += std::string(i == 0 ? "" : ", ") + name;
  }
  const std::string text =
      "HloModule numbers\n\nENTRY %main {\n"
      "  %x = f32[2]{0} parameter(0)\n  %y = f32[2]{0} parameter(1)\n"
      "  %w = f32[2]{0} parameter(2)\n  %z = f32[2]{0} parameter(3)\n"
      "  %narrow = f32[6]{0} concatenate(%y, %x, %x), dimensions={0}\n"
      "  ROOT %wide = f32[80]{0} concatenate(" +
      operands + "), dimensions={0}\n}\n";
  const auto module = Parse(text);
  OperandNumbers numbers;
  const ir::HloInstruction& wide = *Find(*module, "wide");
  const ir::HloInstruction& narrow = *Find(*module, "narrow");
  const auto all = [&](const ir::HloInstruction& user, std::string_view operand) {
    std::vector<int32_t> out;
    numbers.ForEach(user, Find(*module, operand), [&](int32_t n) { out.push_back(n); });
    return out;
  };
  for (int pass = 0; pass < 2; ++pass) {  // the second asks the index built by the first
    CHECK(numbers.First(wide, Find(*module, "x")) == 3);
    CHECK(numbers.First(wide, Find(*module, "y")) == 0);
    CHECK(numbers.First(wide, Find(*module, "w")) == 1);
    CHECK(numbers.First(wide, Find(*module, "z")) == -1);
    CHECK(numbers.First(narrow, Find(*module, "x")) == 1);
    CHECK(numbers.First(narrow, Find(*module, "w")) == -1);
    CHECK(all(wide, "x") == std::vector<int32_t>{3, 17, 39});
    CHECK(all(wide, "z").empty());
    CHECK(all(narrow, "x") == std::vector<int32_t>{1, 2});
  }
  CHECK(numbers.indexed() == 1);  // only the wide user is indexed
}

}  // namespace
}  // namespace spmdsim::passes
