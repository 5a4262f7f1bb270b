// Grammar-level parser tests on small modules written in XLA's print format. Tests over the real
// dumps in testdata/ live in analyzer/ (they need the dump loader).
#include "ir/parser.h"

#include <catch2/catch.hpp>

#include "ir/printer.h"

namespace spmdsim::ir {
namespace {

constexpr std::string_view kModule =
    R"(HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8,4]{1,0}, u32[2]{0})->(f32[8,4]{1,0})}, input_output_alias={ {0}: (0, {}, may-alias) }, num_partitions=8

%add.clone (x.1: f32[], y.1: f32[]) -> f32[] {
  %x.1 = f32[] parameter(0)
  %y.1 = f32[] parameter(1)
  ROOT %add.1 = f32[] add(f32[] %x.1, f32[] %y.1)
}

%fused_computation (param_0: f32[8,4]) -> f32[8,4] {
  %param_0 = f32[8,4]{1,0} parameter(0)
  %constant.1 = f32[] constant(0.5)
  %broadcast.1 = f32[8,4]{1,0} broadcast(%constant.1), dimensions={}
  ROOT %multiply.1 = f32[8,4]{1,0} multiply(%param_0, %broadcast.1), metadata={op_type="mul" op_name="jit(f)/mul" source_file="/x/model.py" source_line=42}
}

ENTRY %main.9 (Arg_0.1: f32[8,4], Arg_1.2: u32[2]) -> (f32[8,4]) {
  %Arg_0.1 = f32[8,4]{1,0} parameter(0), sharding={devices=[8,1]<=[8]}
  %Arg_1.2 = u32[2]{0} parameter(1), sharding={replicated}
  %fusion = f32[8,4]{1,0} fusion(%Arg_0.1), kind=kLoop, calls=%fused_computation
  %all-reduce = f32[8,4]{1,0} all-reduce(%fusion), channel_id=1, replica_groups=[1,8]<=[8], use_global_device_ids=true, to_apply=%add.clone
  %const.2 = f32[2,2]{1,0} constant({ { 1, 2 }, { 3, 4 } })
  /*index=5*/%mystery = f32[8,4]{1,0} frobnicate(%all-reduce), backend_config="opaque"
  ROOT %tuple = (f32[8,4]{1,0}) tuple(%mystery)
}
)";

ParseResult Parse(std::string_view text) {
  return ParseHloText(std::make_shared<SourceBuffer>("test.hlo", std::string(text)));
}

// The layout that keeps a large module small (see HloInstruction): equal shapes and metadata are
// stored once per module, rare fields only where present, and offsets come from the views.
TEST_CASE("instructions share pooled shapes and metadata; views give source offsets") {
  constexpr std::string_view kText = R"(HloModule m

ENTRY %main (p: f32[8,4]) -> f32[8,4] {
  %p = f32[8,4]{1,0} parameter(0), metadata={op_name="a" source_file="m.py" source_line=1}
  %n = f32[8,4]{1,0} negate(%p), metadata={op_name="a" source_file="m.py" source_line=1}
  ROOT %e = f32[8,4] exponential(%n), metadata={op_name="b"}
}
)";
  ParseResult result = Parse(kText);
  REQUIRE(result.ok());
  const HloModule& m = *result.modules[0];
  const auto& instrs = m.entry->instructions;
  REQUIRE(instrs.size() == 3);
  CHECK(&instrs[0]->shape.get() == &instrs[1]->shape.get());
  CHECK(&instrs[1]->shape.get() != &instrs[2]->shape.get());  // no layout: another text
  CHECK_FALSE(instrs[1]->shape == instrs[2]->shape);          // a layout against none
  CHECK(instrs[2]->shape.dims() == std::vector<int64_t>{8, 4});
  CHECK(&instrs[0]->metadata() == &instrs[1]->metadata());
  CHECK(instrs[1]->metadata().Source() == "m.py:1");
  CHECK(instrs[2]->metadata().op_name == "b");
  CHECK(instrs[2]->sharding() == nullptr);
  CHECK(instrs[2]->called_computations().empty());
  CHECK(instrs[2]->opcode_name() == "exponential");
  CHECK(m.SourceOffset(instrs[2]->name) == kText.find("%e =") + 1);
  CHECK(m.SourceOffset(instrs[2]->attributes[0].value) == kText.find("{op_name=\"b\"}"));
  CHECK(PrintModule(m).find("%e = f32[8,4] exponential(%n), metadata={op_name=\"b\"}") !=
        std::string::npos);
}

TEST_CASE("parses a scheduled, partitioned module") {
  ParseResult result = Parse(kModule);
  INFO((result.error ? result.error->ToString() : ""));
  REQUIRE(result.ok());
  REQUIRE(result.modules.size() == 1);
  const HloModule& m = *result.modules[0];
  CHECK(m.name == "jit_f");
  CHECK(m.is_scheduled);
  CHECK(m.num_partitions == 8);
  REQUIRE(m.input_output_alias.size() == 1);
  CHECK(m.input_output_alias[0].parameter_number == 0);
  CHECK(m.entry_parameter_layouts.size() == 2);
  CHECK(m.computations.size() == 3);
  REQUIRE(m.entry != nullptr);
  CHECK(m.entry->name == "main.9");
  CHECK(m.InstructionCount() == 3 + 4 + 7);
  CHECK(m.entry->root->name == "tuple");

  const HloComputation* fused = m.FindComputation("fused_computation");
  REQUIRE(fused);
  CHECK(fused->IsFusionComputation());
  CHECK(fused->root->metadata().op_name == "jit(f)/mul");
  CHECK(fused->root->metadata().Source() == "/x/model.py:42");

  const HloInstruction* ar = m.entry->instructions[3];
  CHECK(ar->opcode == Opcode::kAllReduce);
  CHECK(ar->channel_id() == 1);
  CHECK(ar->use_global_device_ids());
  REQUIRE(ar->replica_groups());
  CHECK(ar->replica_groups()->GroupSize() == 8);
  CHECK(ar->Called("to_apply")->name == "add.clone");
  CHECK(ar->operands[0]->name == "fusion");
  const auto& users = m.entry->instructions[2]->users;
  CHECK(std::vector<HloInstruction*>(users.begin(), users.end()) ==
        std::vector<HloInstruction*>{const_cast<HloInstruction*>(ar)});

  const HloInstruction* mystery = m.entry->instructions[5];
  CHECK(mystery->opcode == Opcode::kUnknown);
  CHECK(mystery->opcode_name() == "frobnicate");
  CHECK(m.warning_count == 1);
  CHECK(m.warnings[0].ToString().find("test.hlo:22:") == 0);
  CHECK(m.entry->instructions[4]->payload == "{ { 1, 2 }, { 3, 4 } }");
  CHECK(m.entry->instructions[0]->sharding()->TileCount() == 8);
}

TEST_CASE("print then parse gives the same text again") {
  ParseResult first = Parse(kModule);
  REQUIRE(first.ok());
  const std::string printed = PrintModule(*first.modules[0]);
  ParseResult second = Parse(printed);
  INFO(printed);
  REQUIRE(second.ok());
  CHECK(PrintModule(*second.modules[0]) == printed);
}

TEST_CASE("a module without ENTRY takes its last computation, as XLA does") {
  ParseResult r = Parse(
      "HloModule m\n%a { ROOT %c = f32[] constant(1) }\n"
      "%b { ROOT %d = f32[] constant(2) }\n");
  REQUIRE(r.ok());
  CHECK(r.modules[0]->entry->name == "b");
}

struct BadInput {
  std::string_view text;
  std::string_view expected;
};

TEST_CASE("malformed modules give file:line:col errors") {
  const BadInput cases[] = {
      {"", "expected 'HloModule', got end of input"},
      {"HloModule m\nENTRY %e {\n  %a = f32[] add(%b)\n}\n",
       "test.hlo:3:18: error: 'b' is not defined"},
      {"HloModule m\nENTRY %e {\n  %a = f32[ parameter(0)\n}\n", "expected a dimension size"},
      {"HloModule m\nENTRY %e {\n  %a = f32[] parameter(0)\n", "expected '}' closing computation"},
      {"HloModule m\nENTRY %e {\n  %a = f32[] parameter(0)\n  %a = f32[] parameter(1)\n}",
       "redefinition of 'a'"},
      {"HloModule m\nENTRY %e {\n  %a = f32[] call(), to_apply=%nowhere\n}",
       "computation 'nowhere' is not defined"},
      {"HloModule m\nENTRY %e {\n  %a = f32[] constant(1, sharding={devices=[2]0}\n}",
       "unterminated constant"},
      {"HloModule m\nENTRY %e {\n  %a = f32[] parameter(0), sharding={devices=[3]0,1}\n}",
       "need 3"},
      {"HloModule m, num_partitions=x\n", "expected an integer for num_partitions"},
  };
  for (const BadInput& c : cases) {
    ParseResult r = Parse(c.text);
    INFO(c.text);
    REQUIRE_FALSE(r.ok());
    INFO(r.error->ToString());
    CHECK(r.error->ToString().find(c.expected) != std::string::npos);
  }
}

}  // namespace
}  // namespace spmdsim::ir

namespace spmdsim::ir {
namespace {

ParseResult ParseText(std::string_view text) {
  return ParseHloText(std::make_shared<SourceBuffer>("t.hlo", std::string(text)));
}

// XLA's --xla_dump_compact_gte (on by default in 2025's XLA) prints no get-tuple-element and
// writes its users' operand as "%tuple#index"; the IR has the get-tuple-element again.
constexpr std::string_view kCompact = R"(HloModule m

ENTRY %e (p: (f32[2], (s32[], u32[4]))) -> (u32[4], f32[2]) {
  %p = (f32[2]{0}, (s32[], u32[4]{0})) parameter(0)
  %c = u32[4]{0} copy(%p#1#1)
  %d = f32[2]{0} negate(%p#0)
  %e = f32[2]{0} add(%p#0, %d)
  ROOT %t = (u32[4]{0}, f32[2]{0}) tuple(%c, %e)
}
)";

TEST_CASE("compact tuple operands are get-tuple-elements, printed back as written") {
  const ParseResult r = ParseText(kCompact);
  INFO((r.error ? r.error->ToString() : ""));
  REQUIRE(r.ok());
  const HloComputation& entry = *r.modules[0]->entry;
  // p, p#1, p#1#1, c, p#0, d, e, t: each element defined once, before its first user.
  REQUIRE(entry.instructions.size() == 8);
  const HloInstruction& copy = *entry.instructions[3];
  REQUIRE(copy.operands[0]->opcode == Opcode::kGetTupleElement);
  const HloInstruction& inner = *copy.operands[0];
  CHECK(inner.implicit);
  CHECK(inner.tuple_index == 1);
  CHECK(inner.shape.get().ToString() == "u32[4]{0}");
  REQUIRE(inner.operands[0]->opcode == Opcode::kGetTupleElement);
  CHECK(inner.operands[0]->operands[0]->name == "p");
  CHECK(inner.operands[0]->shape.get().ToString() == "(s32[], u32[4]{0})");
  // %p#0 used twice: one get-tuple-element with two users.
  const HloInstruction& negate = *entry.instructions[5];
  const HloInstruction& add = *entry.instructions[6];
  CHECK(negate.operands[0] == add.operands[0]);
  CHECK(negate.operands[0]->users.size() == 2);
  for (size_t i = 1; i < entry.instructions.size(); ++i) {
    CHECK(entry.instructions[i - 1]->id < entry.instructions[i]->id);  // ids in order
  }
  const std::string printed = PrintModule(*r.modules[0]);
  CHECK(printed.find("get-tuple-element") == std::string::npos);
  CHECK(printed.find("copy(%p#1#1)") != std::string::npos);
  const ParseResult again = ParseText(printed);
  REQUIRE(again.ok());
  CHECK(PrintModule(*again.modules[0]) == printed);
}

TEST_CASE("compact tuple operands that name no tuple element are errors") {
  for (std::string_view body : {
           "  %p = f32[2]{0} parameter(0)\n  ROOT %c = f32[2]{0} copy(%p#0)\n",    // not a tuple
           "  %p = (f32[2]{0}) parameter(0)\n  ROOT %c = f32[2]{0} copy(%p#1)\n",  // no element 1
           "  %p = (f32[2]{0}) parameter(0)\n  ROOT %p#0 = f32[2]{0} copy(%p)\n",  // '#' in a name
       }) {
    INFO(body);
    const ParseResult r = ParseText("HloModule m\n\nENTRY %e {\n" + std::string(body) + "}\n");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error->ToString().find("t.hlo:") == 0);
  }
}

// XLA's async syntax sugar: an async-start wrapping an all-to-all (or reduce-scatter, fusion,
// custom-call, ...) printed as "all-to-all-start" with the wrapped op's attributes and no calls=.
TEST_CASE("X-start / X-done are async-start / async-done wrapping an X") {
  const ParseResult r = ParseText(R"(HloModule m, num_partitions=4

ENTRY %e (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %a2a-start = ((f32[8]{0}), f32[8]{0}) all-to-all-start(%p), channel_id=3, replica_groups={{0,1,2,3}}, dimensions={0}
  ROOT %a2a-done = f32[8]{0} all-to-all-done(%a2a-start)
}
)");
  INFO((r.error ? r.error->ToString() : ""));
  REQUIRE(r.ok());
  const HloModule& module = *r.modules[0];
  CHECK(module.warning_count == 0);
  const HloInstruction& start = *module.entry->instructions[1];
  CHECK(start.opcode == Opcode::kAsyncStart);
  CHECK(start.opcode_name() == "all-to-all-start");
  const HloComputation* wrapped = start.Called("calls");
  REQUIRE(wrapped != nullptr);
  CHECK(wrapped->implicit);
  REQUIRE(wrapped->root != nullptr);
  CHECK(wrapped->root->opcode == Opcode::kAllToAll);
  CHECK(wrapped->root->channel_id() == 3);
  REQUIRE(wrapped->root->replica_groups() != nullptr);
  CHECK(wrapped->root->shape.get().ToString() == "f32[8]{0}");
  CHECK(wrapped->parameters.size() == 1);
  const HloInstruction& done = *module.entry->instructions[2];
  CHECK(done.opcode == Opcode::kAsyncDone);
  CHECK(done.Called("calls") == wrapped);
  // Printed back as written, without the wrapped computation.
  const std::string printed = PrintModule(module);
  CHECK(printed.find("all-to-all-start(%p), channel_id=3") != std::string::npos);
  CHECK(printed.find("async_wrapped") == std::string::npos);
  // all-reduce-start is XLA's own opcode, not sugar.
  const ParseResult own = ParseText(
      "HloModule m\n\n%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
      "  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n\nENTRY %e {\n"
      "  %p = f32[8]{0} parameter(0)\n  %ars = f32[8]{0} all-reduce-start(%p), to_apply=%add\n"
      "  ROOT %ard = f32[8]{0} all-reduce-done(%ars)\n}\n");
  REQUIRE(own.ok());
  CHECK(own.modules[0]->entry->instructions[1]->opcode == Opcode::kAllReduceStart);
}

}  // namespace
}  // namespace spmdsim::ir

namespace spmdsim::ir {
namespace {

// XLA prints each frame's parent as the proto's parent_frame_id plus one (HloModule::Print):
// 1 is a root frame, p the frame p - 1. A stack is read innermost first.
TEST_CASE("stack frames: the whole stack of an instruction, parents as XLA prints them") {
  constexpr std::string_view kFrames = R"(HloModule m

FileNames
1 "user/model.py"
2 "lib/dropout.py"

FunctionNames
1 "forward"
2 "dropout"

FileLocations
1 {file_name_id=1 function_name_id=1 line=40 end_line=40 column=1 end_column=9}
2 {file_name_id=2 function_name_id=2 line=7 end_line=7 column=1 end_column=9}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}

ENTRY %e () -> u32[] {
  ROOT %c = u32[] constant(1), metadata={op_name="x" stack_frame_id=2}
}
)";
  ParseResult parsed = ParseHloText(std::make_shared<SourceBuffer>("t.hlo", std::string(kFrames)));
  REQUIRE(parsed.ok());
  const StackFrameIndex& frames = parsed.modules[0]->stack_frames;
  CHECK(frames.Stack(2) == std::vector<std::string>{"lib/dropout.py:7", "user/model.py:40"});
  CHECK(frames.Stack(1) == std::vector<std::string>{"user/model.py:40"});
  CHECK(frames.Stack(0).empty());
  CHECK(frames.Stack(3).empty());
}

}  // namespace
}  // namespace spmdsim::ir
