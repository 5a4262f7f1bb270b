// The HLO text parser: its entry points, and the grammar above instructions (file, module
// header and its tables, computation), with the value helpers the attribute parsers share. The
// parser's state and the other grammar areas: ir/parser_internal.h.
#include "ir/parser.h"

#include <algorithm>

#include "ir/attribute_parsers.h"
#include "ir/checked_math.h"
#include "ir/device_count.h"
#include "ir/limits.h"
#include "ir/parser_internal.h"

namespace spmdsim::ir {
namespace parser_internal {

// file ::= module+
void HloParser::ParseFile(std::vector<std::unique_ptr<HloModule>>& modules) {
  if (reader_.PeekIsName("module") && lexer_.CharAfterPeek() == '@') {
    reader_.Fail(reader_.Peek(),
                 "this is MLIR (StableHLO), not HLO text: spmdsim reads the HLO that XLA dumps "
                 "(XLA_FLAGS=\"--xla_dump_to=DIR --xla_dump_hlo_as_text\", or "
                 "jax.jit(f).lower(...).compile().as_text())");
  }
  do {
    modules.push_back(ParseModule());
  } while (reader_.PeekIsName("HloModule"));
  if (!reader_.PeekIs(TokenKind::kEof)) {
    reader_.FailExpected("a computation or 'HloModule'", reader_.Peek());
  }
}

// module ::= 'HloModule' name (',' attribute)* computation*
std::unique_ptr<HloModule> HloParser::ParseModule() {
  auto module = std::make_unique<HloModule>();
  module_ = module.get();
  module->source = source_;
  const Token keyword = reader_.Peek();
  module->offset = keyword.offset;
  reader_.ExpectName("HloModule");
  module->name = reader_.ExpectIdentifier("a module name").text;
  while (reader_.Accept(TokenKind::kComma)) ParseModuleAttribute(*module);
  ParseStackFrameIndex(module->stack_frames);
  computations_by_name_.Clear();
  shapes_by_text_.Clear();
  element_shapes_.clear();
  metadata_by_text_.Clear();
  pending_calls_.clear();
  next_id_ = 0;
  while (!reader_.PeekIs(TokenKind::kEof) && !reader_.PeekIsName("HloModule")) {
    ParseComputation(*module);
  }
  if (module->computations.empty()) reader_.Fail(reader_.Peek(), "module has no computations");
  ResolveCalls();
  if (module->entry == nullptr) module->entry = module->computations.back();  // as XLA does
  module->entry->is_entry = true;
  module->instruction_id_bound = static_cast<size_t>(next_id_);
  module->call_graph = CallGraph::Build(*module);
  module->devices_named_by_collectives = DevicesNamedByCollectives(*module);
  return module;
}

void HloParser::ParseModuleAttribute(HloModule& module) {
  Token name = reader_.Expect(TokenKind::kName, "a module attribute");
  reader_.Expect(TokenKind::kEqual);
  const size_t value_offset = lexer_.offset();
  std::string_view value = lexer_.ScanRawValue();
  const size_t value_start = ValueStart(value, value_offset);
  module.attributes.push_back({name.text, value});
  if (name.text == "is_scheduled") {
    module.is_scheduled = value == "true";
  } else if (name.text == "num_partitions") {
    module.num_partitions =
        ParseDeviceCount(value, value_start, "num_partitions", module.replica_count);
  } else if (name.text == "replica_count") {
    module.replica_count =
        ParseDeviceCount(value, value_start, "replica_count", module.num_partitions);
  } else if (name.text == "input_output_alias") {
    Lexer sub(value, value_start);
    TokenReader r(sub);
    module.input_output_alias = ParseInputOutputAlias(r);
    ExpectEnd(r);
  } else if (name.text == "entry_computation_layout") {
    ParseEntryLayout(module, value, value_start);
  }
}

// stack_frame_index ::= ['FileNames' (int string)*] ['FunctionNames' (int string)*]
//                       ['FileLocations' (int '{' field* '}')*]
//                       ['StackFrames' (int '{' field* '}')*]
// Entries are numbered 1, 2, ... in order; a gap is an error.
void HloParser::ParseStackFrameIndex(StackFrameIndex& index) {
  const size_t start = reader_.Peek().offset;
  size_t end = start;
  const auto numbered = [&](auto&& parse_entry, size_t count) {
    end = std::max(end, lexer_.offset());  // after the section keyword
    while (reader_.PeekIs(TokenKind::kInt)) {
      const Token number = reader_.Peek();
      const int64_t id = reader_.ExpectInt();
      if (id != static_cast<int64_t>(count) + 1) {
        reader_.Fail(number, "expected entry " + std::to_string(count + 1) + " of the table");
      }
      parse_entry();
      ++count;
      end = lexer_.offset();
    }
  };
  const auto fields = [&](auto&& on_field) {
    reader_.Expect(TokenKind::kLbrace);
    while (!reader_.Accept(TokenKind::kRbrace)) {
      const Token key = reader_.Expect(TokenKind::kName, "a field name");
      reader_.Expect(TokenKind::kEqual);
      on_field(key.text, reader_.ExpectInt());
      reader_.Accept(TokenKind::kComma);
    }
  };
  for (;;) {
    if (reader_.PeekIsName("FileNames")) {
      reader_.Next();
      numbered([&] { index.file_names.push_back(reader_.Expect(TokenKind::kString).text); },
               index.file_names.size());
    } else if (reader_.PeekIsName("FunctionNames")) {
      reader_.Next();
      numbered([&] { index.function_names.push_back(reader_.Expect(TokenKind::kString).text); },
               index.function_names.size());
    } else if (reader_.PeekIsName("FileLocations")) {
      reader_.Next();
      numbered(
          [&] {
            StackFrameIndex::FileLocation location;
            fields([&](std::string_view key, int64_t value) {
              if (key == "file_name_id") location.file_name_id = value;
              if (key == "function_name_id") location.function_name_id = value;
              if (key == "line") location.line = value;
            });
            index.file_locations.push_back(location);
          },
          index.file_locations.size());
    } else if (reader_.PeekIsName("StackFrames")) {
      reader_.Next();
      numbered(
          [&] {
            StackFrameIndex::Frame frame;
            fields([&](std::string_view key, int64_t value) {
              if (key == "file_location_id") frame.file_location_id = value;
              // XLA prints the proto's parent id plus one (HloModule::Print):
              // 1 is a root frame, p the frame p - 1.
              if (key == "parent_frame_id") frame.parent_frame_id = value - 1;
            });
            index.frames.push_back(frame);
          },
          index.frames.size());
    } else {
      break;
    }
  }
  if (end > start) index.raw = source_->text().substr(start, end - start);
}

// entry_computation_layout ::= '{' '(' [shape (',' shape)*] ')' '->' shape '}'
void HloParser::ParseEntryLayout(HloModule& module, std::string_view value, size_t value_start) {
  Lexer sub(value, value_start);
  TokenReader r(sub);
  r.Expect(TokenKind::kLbrace);
  r.Expect(TokenKind::kLparen);
  if (!r.Accept(TokenKind::kRparen)) {
    do {
      module.entry_parameter_layouts.push_back(ParseShape(r));
    } while (r.Accept(TokenKind::kComma));
    r.Expect(TokenKind::kRparen);
  }
  r.Expect(TokenKind::kArrow);
  module.entry_result_layout = ParseShape(r);
  r.Expect(TokenKind::kRbrace);
  ExpectEnd(r);
  module.has_entry_layout = true;
}

// computation ::= ['ENTRY'] name [param_list '->' shape] (',' attribute)* '{' instruction* '}'
// param_list  ::= '(' [name ':' shape (',' name ':' shape)*] ')'
void HloParser::ParseComputation(HloModule& module) {
  HloComputation* computation = module.NewComputation();
  const bool is_entry = reader_.PeekIsName("ENTRY");
  if (is_entry) reader_.Next();
  const Token name = reader_.ExpectIdentifier("a computation name");
  computation->name = name.text;
  computation->offset = name.offset;
  if (!computations_by_name_.Insert(name.text, computation)) {
    reader_.Fail(name, "redefinition of computation '" + std::string(name.text) + "'");
  }
  if (reader_.Accept(TokenKind::kLparen)) {
    computation->has_signature = true;
    if (!reader_.Accept(TokenKind::kRparen)) {
      do {
        ComputationParameter param;
        param.name = reader_.ExpectIdentifier("a parameter name").text;
        reader_.Expect(TokenKind::kColon);
        const size_t shape_start = reader_.Peek().offset;
        param.shape = ShapeRef(PoolShape(ParseShape(reader_), shape_start));
        computation->signature.push_back(std::move(param));
      } while (reader_.Accept(TokenKind::kComma));
      reader_.Expect(TokenKind::kRparen, "')' closing the parameter list");
    }
    reader_.Expect(TokenKind::kArrow, "'->' before the result shape");
    const size_t shape_start = reader_.Peek().offset;
    computation->result_shape = ShapeRef(PoolShape(ParseShape(reader_), shape_start));
  }
  while (reader_.Accept(TokenKind::kComma)) {
    Token attr = reader_.Expect(TokenKind::kName, "a computation attribute");
    reader_.Expect(TokenKind::kEqual);
    std::string_view value = lexer_.ScanRawValue(/*stop_at_body=*/true);
    computation->attributes.push_back({attr.text, value});
  }
  reader_.Expect(TokenKind::kLbrace, "'{' starting the computation body");
  if (is_entry) {
    if (module.entry != nullptr) reader_.Fail(name, "a module has one ENTRY computation");
    module.entry = computation;
    computation->is_entry = true;
  }
  instructions_by_name_.Clear();
  table_reserved_ = false;
  pending_refs_.clear();
  operand_pending_ = false;
  operand_locals_.clear();
  operand_counts_.clear();
  user_counts_.clear();
  last_user_.clear();
  first_id_ = next_id_;
  pending_parameters_.clear();
  compact_elements_.clear();
  computation_first_call_ = pending_calls_.size();
  try {
    while (!reader_.Accept(TokenKind::kRbrace)) {
      // The start of another computation or module cannot be an instruction: a '}' is missing.
      if (reader_.PeekIs(TokenKind::kEof) || reader_.PeekIsName("ENTRY") ||
          reader_.PeekIsName("HloModule")) {
        reader_.FailExpected("'}' closing computation '" + std::string(name.text) + "'",
                             reader_.Peek());
      }
      ParseInstruction(*computation);
    }
  } catch (...) {
    FileLateName();  // its redefinition, if it is one, was the first error
    throw;
  }
  FileLateName();
  if (computation->instructions.empty()) reader_.Fail(name, "computation has no instructions");
  computation->instructions.shrink_to_fit();
  ResolveParameters(*computation);
  ResolveOperands(*computation);
  ResolveCompactElementShapes();
  DesugarAsyncOps(module);
  if (computation->root == nullptr) {
    computation->root = computation->instructions.back();  // as XLA does
  }
  module.computations.push_back(computation);
}

// File offset of a value that ScanRawValue returned (leading blanks skipped).
size_t HloParser::ValueStart(std::string_view value, size_t fallback) const {
  if (value.empty()) return fallback;
  return static_cast<size_t>(value.data() - lexer_.text().data()) + lexer_.base_offset();
}

int64_t HloParser::ParseIntValue(std::string_view value, size_t offset, std::string_view what) {
  int64_t v = 0;
  if (!ParseInt64(value, v)) {
    throw ParseError{offset, "expected an integer for " + std::string(what) + ", got '" +
                                 std::string(value.substr(0, 40)) + "'"};
  }
  return v;
}

// num_partitions / replica_count: at least 1, and with the other one at most kMaxDevices.
int64_t HloParser::ParseDeviceCount(std::string_view value, size_t offset, std::string_view what,
                                    int64_t other) {
  const int64_t count = ParseIntValue(value, offset, what);
  const auto devices = CheckedMul(count, other);
  if (count < 1 || !devices || *devices > kMaxDevices) {
    std::string why = " must be at least 1";
    if (count >= 1) {
      why = other > 1
                ? " makes replica_count x num_partitions " +
                      (devices ? std::to_string(*devices) : std::string("past 2^63")) + " devices,"
                : " devices:";
      why += " more than " + std::to_string(kMaxDevices) + ", the most spmdsim reads";
    }
    throw ParseError{offset, std::string(what) + "=" + std::string(value.substr(0, 40)) + why};
  }
  return count;
}

std::string_view HloParser::Unquote(std::string_view value, size_t offset) {
  if (value.size() < 2 || value.front() != '"' || value.back() != '"') {
    throw ParseError{offset,
                     "expected a quoted string, got '" + std::string(value.substr(0, 40)) + "'"};
  }
  return value.substr(1, value.size() - 2);
}

void HloParser::ExpectEnd(TokenReader& r) {
  if (!r.PeekIs(TokenKind::kEof)) r.FailExpected("end of the attribute value", r.Peek());
}

void HloParser::Warn(size_t offset, std::string message) {
  ++module_->warning_count;
  if (static_cast<int>(module_->warnings.size()) < options_.max_warnings) {
    module_->warnings.push_back(
        MakeDiagnostic(*source_, offset, Severity::kWarning, std::move(message)));
  }
}

}  // namespace parser_internal

ParseResult ParseHloText(std::shared_ptr<const SourceBuffer> source, const ParseOptions& options) {
  ParseResult result;
  parser_internal::HloParser parser(source, options);
  try {
    parser.ParseFile(result.modules);
  } catch (const ParseError& e) {
    result.modules.clear();
    result.error = MakeDiagnostic(*source, e.offset, Severity::kError, e.message);
  } catch (const std::bad_alloc&) {
    result.modules.clear();
    result.error = MakeDiagnostic(*source, 0, Severity::kError, "out of memory while parsing");
  }
  return result;
}

bool LooksLikeHloText(std::string_view text) {
  Lexer lexer(text.substr(0, 4096));
  const Token t = lexer.Next();
  return t.kind == TokenKind::kName && t.text == "HloModule";
}

}  // namespace spmdsim::ir
