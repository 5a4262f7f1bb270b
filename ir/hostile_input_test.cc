// Regression tests for hostile input: each case is an input that once made the parser or the IR
// queries misbehave (out-of-bounds access, signed overflow, megabytes of memory from one short
// line, a round trip that changed the text) or that shows a limit holding. The CLI-level cases
// (exit codes and messages for broken dumps) are in analyzer/cli/cli_errors_test.cc.
#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "ir/attribute_parsers.h"
#include "ir/checked_math.h"
#include "ir/device_list.h"
#include "ir/parser.h"
#include "ir/printer.h"

namespace spmdsim::ir {
namespace {

ParseResult Parse(std::string text) {
  return ParseHloText(std::make_shared<SourceBuffer>("hostile.hlo", std::move(text)));
}

// Parses, prints, parses the print and prints again: both prints must be equal.
void CheckRoundTrip(const std::string& text) {
  const ParseResult first = Parse(text);
  INFO(text << "\n" << (first.error ? first.error->ToString() : ""));
  REQUIRE(first.ok());
  const std::string printed = PrintModule(*first.modules.at(0));
  const ParseResult second = Parse(printed);
  INFO(printed << "\n" << (second.error ? second.error->ToString() : ""));
  REQUIRE(second.ok());
  CHECK(PrintModule(*second.modules.at(0)) == printed);
}

std::string Module(const std::string& instruction) {
  return "HloModule m\n\nENTRY %e {\n  " + instruction + "\n}\n";
}

TEST_CASE("CeilDiv does not overflow near INT64_MAX") {
  CHECK(CeilDiv(INT64_MAX, 8) == INT64_MAX / 8 + 1);
  CHECK(CeilDiv(16, 8) == 2);
  CHECK(CeilDiv(17, 8) == 3);
  CHECK(CeilDiv(0, 8) == 0);
  CHECK(CeilDiv(5, 0) == 0);
}

TEST_CASE("a packed shape of INT64_MAX elements has its size without overflow") {
  // bits = elements x 1 fits in int64; rounding up to bytes used to compute bits + 7.
  auto shape = ParseShape("s4[9223372036854775807]{0:E(1)}");
  REQUIRE(shape);
  CHECK(shape->ByteSize() == INT64_MAX / 8 + 1);
}

TEST_CASE("iota device lists are validated without being expanded") {
  CHECK(IotaSize({{kMaxDevices}, {}}) == kMaxDevices);
  CHECK(IotaSize({{4, 2}, {1, 0}}) == 8);
  CHECK_FALSE(IotaSize({{kMaxDevices + 1}, {}}));  // over kMaxDevices
  CHECK_FALSE(IotaSize({{4, 2}, {0, 0}}));         // not a permutation
  CHECK_FALSE(IotaSize({{4, 2}, {0, 1, 2}}));      // wrong rank
  CHECK_FALSE(IotaSize({std::vector<int64_t>(kMaxIotaRank + 1, 1), {}}));
  // 2000 shardings of kMaxDevices devices each: validated in O(rank) apiece, so this stays fast.
  std::string body;
  for (int i = 0; i < 2000; ++i) {
    body += "%p" + std::to_string(i) + " = f32[] parameter(" + std::to_string(i) +
            "), sharding={devices=[65536]<=[65536]}\n  ";
  }
  const ParseResult r = Parse(Module(body + "ROOT %t = () tuple()"));
  REQUIRE(r.ok());
  CHECK(r.modules[0]->entry->parameters.size() == 2000);
}

TEST_CASE("mesh device_ids in iota form are kept unexpanded and expand like the explicit list") {
  auto iota = ParseReplicaGroups("mesh['x'=2,'y'=4], device_ids=([8]<=[4,2]T(1,0)) {'y'}");
  auto list = ParseReplicaGroups("mesh['x'=2,'y'=4], device_ids=(0,2,4,6,1,3,5,7) {'y'}");
  REQUIRE(iota);
  REQUIRE(list);
  CHECK(iota->mesh.device_ids.empty());
  CHECK(iota->Expand() == std::vector<std::vector<int64_t>>{{0, 2, 4, 6}, {1, 3, 5, 7}});
  CHECK(list->Expand() == iota->Expand());
  std::string error;
  CHECK_FALSE(ParseReplicaGroups("mesh['x'=8], device_ids=([8]<=[4]) {'x'}", &error));
  CHECK_FALSE(ParseReplicaGroups("mesh['x'=8], device_ids=([8]<=[8] 7) {'x'}", &error));
}

TEST_CASE("a mesh replica_groups attribute with device_ids parses inside a module") {
  // Its top-level ", device_ids=" used to end the raw value after "mesh[...]".
  const std::string reducer =
      "HloModule m\n\n%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n  %y = "
      "f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n\n";
  const std::string text =
      reducer + Module(
                    "%p = f32[8]{0} parameter(0)\n  ROOT %ar = f32[8]{0} all-reduce(%p), "
                    "channel_id=1, replica_groups=mesh['x'=2,'y'=2], "
                    "device_ids=(0,2,1,3) {'y'}, to_apply=%add")
                    .substr(std::string("HloModule m\n\n").size());
  const ParseResult r = Parse(text);
  INFO((r.error ? r.error->ToString() : ""));
  REQUIRE(r.ok());
  const HloInstruction* all_reduce = r.modules[0]->entry->root;
  REQUIRE(all_reduce->replica_groups());
  CHECK(all_reduce->replica_groups()->Expand() ==
        std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}});
  CHECK(all_reduce->FindAttribute("replica_groups") ==
        "mesh['x'=2,'y'=2], device_ids=(0,2,1,3) {'y'}");
  CHECK(all_reduce->Called("to_apply") == r.modules[0]->FindComputation("add"));
  CheckRoundTrip(text);
}

TEST_CASE("mesh group axes may not overlap; disjoint sub-axes of one axis expand in any order") {
  std::string error;
  CHECK_FALSE(ParseReplicaGroups("mesh['x'=4,'y'=2] {'x','x'}", &error));
  CHECK(error.find("overlaps") != std::string::npos);
  CHECK_FALSE(ParseReplicaGroups("mesh['x'=8] {'x',  'x':(2)2}", &error));
  CHECK_FALSE(ParseReplicaGroups("mesh['x'=8] {'x':(1)4, 'x':(2)2}", &error));
  // x = 8 devices as bits (major, middle, minor); the groups span the major and minor bits.
  auto major_first = ParseReplicaGroups("mesh['x'=8] {'x':(1)2, 'x':(4)2}");
  REQUIRE(major_first);
  CHECK(major_first->Expand() == std::vector<std::vector<int64_t>>{{0, 1, 4, 5}, {2, 3, 6, 7}});
  // Listing the minor bit first reorders each group; it used to index past the group table.
  auto minor_first = ParseReplicaGroups("mesh['x'=8] {'x':(4)2, 'x':(1)2}");
  REQUIRE(minor_first);
  CHECK(minor_first->Expand() == std::vector<std::vector<int64_t>>{{0, 4, 1, 5}, {2, 6, 3, 7}});
  CHECK(minor_first->GroupSize() == 4);
  CHECK(minor_first->NumGroups() == 2);
}

TEST_CASE("mesh axis names round-trip whichever quotes they need") {
  for (const char* text : {R"(mesh["a'b"=2,'c'=2] {"a'b"})", R"(mesh['a"b'=2] {'a"b'})"}) {
    auto groups = ParseReplicaGroups(text);
    REQUIRE(groups);
    const std::string printed = groups->ToString();
    INFO(printed);
    auto again = ParseReplicaGroups(printed);
    REQUIRE(again);
    CHECK(*again == *groups);
  }
}

TEST_CASE("a sharding has one kind and only that kind's fields") {
  // Found by the fuzzer: the second kind won, and the tile dims of the first were kept but not
  // printed, so printing changed the sharding.
  for (const char* text :
       {"{{replicated},{devices=[8]<=[8]manual}}", "{replicated manual}", "{replicated device=3}",
        "{maximal device=-2}", "{manual last_tile_dim_replicate}",
        "{replicated last_tile_dims={manual}}"}) {
    std::string error;
    INFO(text);
    CHECK_FALSE(ParseSharding(text, &error));
  }
  CHECK(ParseSharding("{maximal device=3}"));
  CHECK(ParseSharding("{devices=[2,4]<=[8] last_tile_dim_replicate}"));
}

TEST_CASE("a computation attribute ends before the body the printer puts on its line") {
  // Found by the 12-minute fuzz run on the shared-pool IR: a header attribute whose raw value
  // runs to the end of its line parsed, but printed with " {" after it the value swallowed the
  // body.
  CheckRoundTrip(
      "HloModule m\n\n%c, op_type=a.1 (p: u64[2]) -> u32[] \n { %p = u64[2]{0} parameter(0)\n"
      "  %s = u64[1]{0} slice(%p), slice={[0:1]}\n  %v = u32[1]{0} convert(%s)\n"
      "  ROOT %b = u32[] bitcast(%v)\n}\n");
  CheckRoundTrip(
      "HloModule m\n\n%c (p: f32[]) -> f32[], execution_thread=\"main\" {\n"
      "  ROOT %p = f32[] parameter(0)\n}\n\nENTRY %e (q: f32[]) -> f32[] {\n"
      "  %q = f32[] parameter(0)\n  ROOT %r = f32[] call(%q), to_apply=%c\n}\n");
}

TEST_CASE("a parameter number must be within the computation's instruction count") {
  // The parameter table used to be sized by the number: 8 MB for one short line.
  const ParseResult r = Parse(Module("ROOT %p = f32[] parameter(999999)"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error->ToString().find("parameter number 999999 out of range") != std::string::npos);
  CHECK(Parse(Module("%a = f32[] parameter(1)\n  ROOT %b = f32[] parameter(0)")).ok());
  const ParseResult dup = Parse(Module("%a = f32[] parameter(0)\n  ROOT %b = f32[] parameter(0)"));
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.error->message == "duplicate parameter number");
}

TEST_CASE("comments inside raw attribute values and constants survive a round trip") {
  // A // comment ends an attribute value, like a newline; what follows it is skipped.
  CheckRoundTrip(Module("ROOT %c = f32[2]{0} constant({1, 2}), frobnicate=1 // note, x=y"));
  // Brackets and quotes inside comments do not count.
  CheckRoundTrip(Module("ROOT %c = f32[2]{0} constant({1, /* ) */ 2}), frobnicate={a /* } */}"));
  CheckRoundTrip(Module("ROOT %c = f32[2]{0} constant({1, // )\n 2})"));
}

TEST_CASE("an unterminated string ends a raw value, so printing cannot make it swallow more") {
  // Found by the fuzzer: the raw metadata value ended in a string broken at a newline; printed
  // back on one line, the string ran on through the closing '}'.
  std::string error;
  CHECK_FALSE(ParseSharding("{replicated metadata={oame\"ated metadata={oame\"a\"},{\n}a\"},{\n}\n",
                            &error));
  CHECK_FALSE(Parse(Module("ROOT %c = f32[] constant(1), frobnicate=\"abc\n}")).ok());
}

TEST_CASE("a trailing backslash or a raw newline ends a string as unterminated") {
  for (const char* text :
       {"HloModule m, a=\"\\", "HloModule m\nENTRY %e {\n  ROOT %c = f32[] constant(\"\\",
        "HloModule m\nENTRY %e {\n  ROOT %c = f32[] constant(1), metadata={op_name=\"x\n}\n"}) {
    const ParseResult r = Parse(text);
    INFO(text);
    CHECK_FALSE(r.ok());
  }
  const ParseResult r =
      Parse("HloModule m\nENTRY %e {\n  ROOT %c = f32[] constant(1), metadata={op_name=\"x\n}\n");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error->line == 3);
  CHECK(r.error->message == "expected a metadata value, got unterminated string");
}

TEST_CASE("diagnostics show binary input as bytes, never as control characters") {
  const ParseResult r = Parse("\x01\x02HloModule\x1b[2J");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error->message == "expected 'HloModule', got byte 0x01");
  const std::string shown = r.error->ToString();
  CHECK(shown.find('\x1b') == std::string::npos);
  CHECK(shown.find("??HloModule?[2J") != std::string::npos);
}

TEST_CASE("an error at the end of input points at the last line, not past it") {
  const ParseResult r = Parse("HloModule m\nENTRY %e {\n  ROOT %c = f32[] constant(1)\n\n\n");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error->line == 3);
  CHECK(r.error->col == 30);
  CHECK(r.error->source_line == "  ROOT %c = f32[] constant(1)");
}

}  // namespace
}  // namespace spmdsim::ir
