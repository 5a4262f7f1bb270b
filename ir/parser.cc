#include "ir/parser.h"

#include <algorithm>
#include <unordered_map>

#include "ir/attribute_parsers.h"
#include "ir/checked_math.h"
#include "ir/lexer.h"
#include "ir/limits.h"
#include "ir/name_table.h"
#include "ir/token_reader.h"

namespace spmdsim::ir {
namespace {

// An operand or control predecessor named before the computation is complete.
struct PendingRef {
  HloInstruction* instruction;
  size_t index;  // operand index, or SIZE_MAX for a control predecessor
  std::string_view name;
  size_t offset;
};

struct PendingCall {
  HloInstruction* instruction;
  size_t index;  // in called_computations
  std::string_view name;
  size_t offset;
};

class HloParser {
 public:
  HloParser(std::shared_ptr<const SourceBuffer> source, const ParseOptions& options)
      : source_(std::move(source)), options_(options), lexer_(source_->text()), reader_(lexer_) {}

  // file ::= module+
  void ParseFile(std::vector<std::unique_ptr<HloModule>>& modules) {
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

 private:
  // module ::= 'HloModule' name (',' attribute)* computation*
  std::unique_ptr<HloModule> ParseModule() {
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
    module->call_graph = CallGraph::Build(*module);
    return module;
  }

  void ParseModuleAttribute(HloModule& module) {
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
  void ParseStackFrameIndex(StackFrameIndex& index) {
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
                if (key == "parent_frame_id") frame.parent_frame_id = value;
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
  void ParseEntryLayout(HloModule& module, std::string_view value, size_t value_start) {
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
  void ParseComputation(HloModule& module) {
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
    pending_refs_.clear();
    pending_parameters_.clear();
    compact_elements_.clear();
    computation_first_call_ = pending_calls_.size();
    while (!reader_.Accept(TokenKind::kRbrace)) {
      // The start of another computation or module cannot be an instruction: a '}' is missing.
      if (reader_.PeekIs(TokenKind::kEof) || reader_.PeekIsName("ENTRY") ||
          reader_.PeekIsName("HloModule")) {
        reader_.FailExpected("'}' closing computation '" + std::string(name.text) + "'",
                             reader_.Peek());
      }
      ParseInstruction(*computation);
    }
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

  // instruction ::= ['ROOT'] name '=' shape opcode '(' [operand (',' operand)*] ')'
  //                 (',' attribute)*
  void ParseInstruction(HloComputation& computation) {
    HloInstruction* instr = module_->NewInstruction();
    instr->parent = &computation;
    Token name = reader_.Next();
    if (name.kind == TokenKind::kName && name.text == "ROOT") {
      instr->is_root = true;
      if (computation.root != nullptr) reader_.Fail(name, "a computation has one ROOT");
      computation.root = instr;
      name = reader_.Next();
    }
    if (name.kind != TokenKind::kName && name.kind != TokenKind::kPercent) {
      reader_.FailExpected("an instruction name", name);
    }
    instr->name = name.text;
    if (name.text.find('#') != std::string_view::npos) {
      reader_.Fail(name,
                   "an instruction name cannot contain '#' (\"%t#3\" is an operand: "
                   "element 3 of tuple %t)");
    }
    if (!instructions_by_name_.Insert(name.text, instr)) {
      reader_.Fail(name, "redefinition of '" + std::string(name.text) + "'");
    }
    reader_.Expect(TokenKind::kEqual, "'=' after the instruction name");
    instr->shape = ShapeRef(ParseInternedShape());
    const Token opcode = reader_.Expect(TokenKind::kName, "an opcode");
    instr->opcode = OpcodeFromName(opcode.text);
    if (instr->opcode == Opcode::kUnknown) SugaredAsyncOpcode(*instr, opcode.text);
    if (instr->opcode == Opcode::kUnknown) {
      instr->mutable_extras().written_opcode_name = opcode.text;
      Warn(opcode.offset, "unknown opcode '" + std::string(opcode.text) +
                              "'; kept as a generic instruction, analyses skip it");
    }
    reader_.Expect(TokenKind::kLparen, "'(' after the opcode");
    if (instr->opcode == Opcode::kConstant) {
      if (!lexer_.SkipBalancedParen(instr->payload)) {
        reader_.Fail(opcode, "unterminated constant literal");
      }
    } else if (instr->opcode == Opcode::kParameter) {
      const Token number = reader_.Peek();
      const int64_t parameter_number = reader_.ExpectInt("a parameter number");
      instr->payload = number.text;
      if (parameter_number < 0 || parameter_number > 1000000) {
        reader_.Fail(number, "parameter number out of range");
      }
      instr->parameter_number = static_cast<int32_t>(parameter_number);
      reader_.Expect(TokenKind::kRparen);
      pending_parameters_.push_back({instr, number.offset});
    } else {
      ParseOperands(*instr);
      // The analyses index a tuple's elements by operand (XLA's verifier checks the same).
      if (instr->opcode == Opcode::kTuple &&
          (!instr->shape.IsTuple() ||
           instr->shape.tuple_shapes().size() != instr->operands.size())) {
        reader_.Fail(opcode,
                     "tuple has " + std::to_string(instr->operands.size()) +
                         " operands but its shape has " +
                         (instr->shape.IsTuple()
                              ? std::to_string(instr->shape.tuple_shapes().size()) + " elements"
                              : std::string("no tuple")));
      }
    }
    // Numbered after its operands: the get-tuple-elements of compact operands come first.
    instr->id = NextInstructionId();
    attribute_scratch_.clear();
    while (reader_.Accept(TokenKind::kComma)) ParseInstructionAttribute(*instr);
    // Collected apart and copied once into the arena, at the exact size.
    const std::span<Attribute> attributes =
        module_->arena().AllocateArray<Attribute>(attribute_scratch_.size());
    std::copy(attribute_scratch_.begin(), attribute_scratch_.end(), attributes.begin());
    instr->attributes = attributes;
    computation.instructions.push_back(instr);
  }

  // The instruction's shape, from the module's pool. Instructions share a few hundred distinct
  // shapes, so each shape's text is the pool's key: a shape without blanks inside (all arrays as
  // XLA prints them), followed by blanks and the opcode, that is already pooled is skipped without
  // being parsed; any other shape is parsed, then looked up by its whole text. A key is the exact
  // text of a shape that parsed, and a blank-free key ends where that shape ended, so a match
  // parses to the same shape.
  const Shape* ParseInternedShape() {
    const std::string_view text = lexer_.text();  // the whole file: offsets index it
    const size_t start = reader_.Peek().offset;
    size_t end = start;
    while (end < text.size() && !IsBlank(text[end])) ++end;
    size_t next = end;
    while (next < text.size() && (text[next] == ' ' || text[next] == '\t')) ++next;
    if (end > start && next > end && next < text.size() && text[next] >= 'a' && text[next] <= 'z') {
      if (const Shape* pooled = shapes_by_text_.Find(text.substr(start, end - start))) {
        lexer_.SkipTo(end);
        return pooled;
      }
    }
    return PoolShape(ParseShape(reader_), start);
  }

  // The pooled shape whose text is the one just parsed, from `start` (the shape's first token)
  // to the next token; `shape` is added to the pool if that text is new.
  const Shape* PoolShape(Shape shape, size_t start) {
    const std::string_view text = lexer_.text();
    size_t stop = reader_.Peek().offset;
    while (stop > start && IsBlank(text[stop - 1])) --stop;
    const std::string_view key = text.substr(start, stop - start);
    if (const Shape* pooled = shapes_by_text_.Find(key)) return pooled;
    const Shape* added = module_->AddShape(std::move(shape));
    shapes_by_text_.Insert(key, added);
    return added;
  }

  static bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

  // operand ::= [shape] name
  void ParseOperands(HloInstruction& instr) {
    if (reader_.Accept(TokenKind::kRparen)) return;
    size_t count = 0;
    do {
      const Token& t = reader_.Peek();
      if (t.kind == TokenKind::kLparen ||
          (t.kind == TokenKind::kName && lexer_.CharAfterPeek() == '[')) {
        ParseShape(reader_);  // typed operand: the type is the operand's own, not kept
      }
      const Token name = reader_.Next();
      if (name.kind != TokenKind::kPercent && name.kind != TokenKind::kName) {
        reader_.FailExpected("an operand name", name);
      }
      if (name.text.find('#') != std::string_view::npos) {
        DefineCompactElement(*instr.parent, name.text, name.offset);
      }
      pending_refs_.push_back({&instr, count++, name.text, name.offset});
    } while (reader_.Accept(TokenKind::kComma));
    reader_.Expect(TokenKind::kRparen, "')' closing the operand list");
    instr.operands = module_->arena().AllocateArray<HloInstruction*>(count);  // nulls till resolved
  }

  int32_t NextInstructionId() {
    if (next_id_ == INT32_MAX) reader_.Fail(reader_.Peek(), "too many instructions in the module");
    return static_cast<int32_t>(next_id_++);
  }

  // compact_operand ::= name ('#' int)+
  // "%t#3" is what XLA writes for a get-tuple-element(%t), index=3 that it does not print. The
  // first use defines it: a get-tuple-element named "t#3", placed before the user; "t#3#1" is
  // element 1 of "t#3". Its shape is known once %t is (ResolveCompactElementShapes).
  void DefineCompactElement(HloComputation& computation, std::string_view ref, size_t offset) {
    if (instructions_by_name_.Find(ref) != nullptr) return;
    // Each '#' nests one tuple deeper; shapes nest at most kMaxDepth (the recursion below too).
    if (std::count(ref.begin(), ref.end(), '#') > 64) {
      throw ParseError{offset,
                       "too many tuple indices in '%" + std::string(ref.substr(0, 40)) + "...'"};
    }
    const size_t hash = ref.rfind('#');
    const std::string_view tuple = ref.substr(0, hash);
    int64_t index = 0;
    if (!ParseInt64(ref.substr(hash + 1), index) || index > INT32_MAX) {
      throw ParseError{offset + hash + 1,
                       "tuple index out of range in '%" + std::string(ref) + "'"};
    }
    if (tuple.find('#') != std::string_view::npos) DefineCompactElement(computation, tuple, offset);
    HloInstruction* gte = module_->NewInstruction();
    gte->parent = &computation;
    gte->name = ref;
    gte->opcode = Opcode::kGetTupleElement;
    gte->tuple_index = static_cast<int32_t>(index);
    gte->implicit = true;
    gte->operands = module_->arena().AllocateArray<HloInstruction*>(1);
    gte->id = NextInstructionId();
    instructions_by_name_.Insert(ref, gte);
    pending_refs_.push_back({gte, 0, tuple, offset});
    compact_elements_.push_back({gte, offset});
    computation.instructions.push_back(gte);
  }

  // The shapes of the compact operands' get-tuple-elements, in the order they were defined (an
  // element of an element after its tuple).
  void ResolveCompactElementShapes() {
    for (const auto& [gte, offset] : compact_elements_) {
      const Shape& tuple = gte->operands[0]->shape;
      const auto index = static_cast<size_t>(gte->tuple_index);
      if (!tuple.IsTuple() || index >= tuple.tuple_shapes().size()) {
        throw ParseError{offset, "'%" + std::string(gte->name) + "': '%" +
                                     std::string(gte->operands[0]->name) + "' has no element " +
                                     std::to_string(index)};
      }
      gte->shape = ShapeRef(PooledCopy(&tuple.tuple_shapes()[index]));
    }
  }

  // XLA's async syntax sugar: "X-start", "X-update", "X-done" for async-start/update/done that
  // wrap one X, where X is any opcode without async opcodes of its own (all-to-all,
  // reduce-scatter, fusion, custom-call, ...). all-reduce-start and the like are real opcodes
  // and never reach here.
  void SugaredAsyncOpcode(HloInstruction& instr, std::string_view name) {
    static constexpr std::pair<std::string_view, Opcode> kForms[] = {
        {"-start", Opcode::kAsyncStart},
        {"-update", Opcode::kAsyncUpdate},
        {"-done", Opcode::kAsyncDone}};
    for (const auto& [suffix, async_opcode] : kForms) {
      if (name.size() <= suffix.size() || !name.ends_with(suffix)) continue;
      const Opcode wrapped = OpcodeFromName(name.substr(0, name.size() - suffix.size()));
      switch (wrapped) {
        case Opcode::kUnknown:
        case Opcode::kAllGather:
        case Opcode::kAllReduce:
        case Opcode::kCollectivePermute:
        case Opcode::kCopy:
        case Opcode::kSend:
        case Opcode::kRecv:
        case Opcode::kAsyncStart:
        case Opcode::kAsyncUpdate:
        case Opcode::kAsyncDone:
          return;
        default:
          break;
      }
      instr.opcode = async_opcode;
      instr.mutable_extras().written_opcode_name = name;
      if (async_opcode == Opcode::kAsyncStart) sugared_starts_.push_back({&instr, wrapped});
      return;
    }
  }

  // An "X-start(a, b), attrs" becomes what XLA's parser makes of it: async-start(a, b),
  // calls=%<name>.async_wrapped, where that computation's parameters stand for a and b and its
  // root is X(params) with the start's attributes, shaped as element 1 of the start's result.
  // The update and done after it call the same computation.
  void DesugarAsyncOps(HloModule& module) {
    for (const auto& [start, wrapped_opcode] : sugared_starts_) {
      const Shape& shape = start->shape;
      if (!shape.IsTuple() || shape.tuple_shapes().size() < 2) {
        throw ParseError{module.SourceOffset(start->name),
                         "'" + std::string(start->opcode_name()) +
                             "' must return a tuple ((operands...), result, ...)"};
      }
      HloComputation* wrapped = module.NewComputation();
      wrapped->name = ArenaString(std::string(start->name) + ".async_wrapped");
      wrapped->implicit = true;
      wrapped->offset = module.SourceOffset(start->name);
      std::vector<HloInstruction*> params;
      for (size_t i = 0; i < start->operands.size(); ++i) {
        HloInstruction* param = module_->NewInstruction();
        param->parent = wrapped;
        param->name = ArenaString("async_param." + std::to_string(i));
        param->opcode = Opcode::kParameter;
        param->parameter_number = static_cast<int32_t>(i);
        param->shape = start->operands[i]->shape;
        param->id = NextInstructionId();
        wrapped->instructions.push_back(param);
        wrapped->parameters.push_back(param);
        params.push_back(param);
      }
      HloInstruction* root = module_->NewInstruction();
      root->parent = wrapped;
      root->name = ArenaString(std::string(start->name) + ".async_op");
      root->opcode = wrapped_opcode;
      root->is_root = true;
      root->shape = ShapeRef(PooledCopy(&shape.tuple_shapes()[1]));
      root->attributes = start->attributes;
      root->set_metadata(&start->metadata());
      root->operands = module_->arena().AllocateArray<HloInstruction*>(params.size());
      std::copy(params.begin(), params.end(), root->operands.begin());
      root->id = NextInstructionId();
      InstructionExtras& from = start->mutable_extras();
      InstructionExtras& to = root->mutable_extras();
      // The wrapped op's own attributes move to it; the start keeps what describes the start.
      to.replica_groups = std::move(from.replica_groups);
      to.source_target_pairs = std::move(from.source_target_pairs);
      to.channel_id = std::exchange(from.channel_id, -1);
      to.use_global_device_ids = std::exchange(from.use_global_device_ids, false);
      to.custom_call_target = std::exchange(from.custom_call_target, {});
      to.backend_config = from.backend_config;
      to.called_computations = std::move(from.called_computations);
      from.called_computations.clear();
      for (CalledComputation& called : to.called_computations) {
        if (called.computation == nullptr) continue;  // resolved at the end of the module
        auto& callers = called.computation->callers;
        std::replace(callers.begin(), callers.end(), start, root);
      }
      // Only this computation's calls can name the start: scan those, not the module's.
      for (size_t i = computation_first_call_; i < pending_calls_.size(); ++i) {
        if (pending_calls_[i].instruction == start) pending_calls_[i].instruction = root;
      }
      wrapped->instructions.push_back(root);
      wrapped->root = root;
      for (HloInstruction* param : params) {
        param->users = module_->arena().AllocateArray<HloInstruction*>(1);
        param->users[0] = root;
      }
      from.called_computations.push_back({"calls", wrapped});
      wrapped->callers.push_back(start);
      module.computations.push_back(wrapped);
      // The update/done chain that follows the start calls the same computation.
      std::vector<HloInstruction*> chain{start};
      while (!chain.empty()) {
        HloInstruction* at = chain.back();
        chain.pop_back();
        for (HloInstruction* user : at->users) {
          if ((user->opcode == Opcode::kAsyncUpdate || user->opcode == Opcode::kAsyncDone) &&
              user->Called("calls") == nullptr) {
            user->mutable_extras().called_computations.push_back({"calls", wrapped});
            wrapped->callers.push_back(user);
            chain.push_back(user);
          }
        }
      }
    }
    sugared_starts_.clear();
  }

  const Shape* PooledCopy(const Shape* element) {
    auto [it, added] = element_shapes_.try_emplace(element, nullptr);
    if (added) it->second = module_->AddShape(*element);
    return it->second;
  }

  std::string_view ArenaString(const std::string& text) {
    const std::span<char> chars = module_->arena().AllocateArray<char>(text.size());
    std::copy(text.begin(), text.end(), chars.begin());
    return {chars.data(), chars.size()};
  }

  // attribute ::= name '=' value; value is scanned raw, then typed attributes are sub-parsed.
  void ParseInstructionAttribute(HloInstruction& instr) {
    const Token name = reader_.Next();
    if (name.kind != TokenKind::kName) reader_.FailExpected("an attribute name", name);
    if (!reader_.PeekIs(TokenKind::kEqual)) {  // the message is built only on failure
      reader_.FailExpected("'=' after attribute '" + std::string(name.text) + "'", reader_.Peek());
    }
    reader_.Next();
    if (name.text == "metadata" && reader_.PeekIs(TokenKind::kLbrace)) {
      ParseMetadataAttribute(instr, name.text);
      return;
    }
    if (name.text == "replica_groups" && reader_.PeekIsName("mesh")) {
      ParseMeshReplicaGroupsAttribute(instr, name.text);
      return;
    }
    const size_t value_offset = lexer_.offset();
    const std::string_view value = lexer_.ScanRawValue();
    const size_t start = ValueStart(value, value_offset);
    if (value.empty())
      reader_.Fail(reader_.Peek(), "empty value for '" + std::string(name.text) + "'");
    attribute_scratch_.push_back({name.text, value});
    const std::string_view key = name.text;
    if (key == "metadata") {  // not a '{': ParseMetadata reports the error
      Lexer sub(value, start);
      TokenReader r(sub);
      instr.set_metadata(AddMetadata(ParseMetadata(r, value), value));
      ExpectEnd(r);
    } else if (key == "sharding") {
      Lexer sub(value, start);
      TokenReader r(sub);
      instr.mutable_extras().sharding = std::make_unique<Sharding>(ParseSharding(r));
      ExpectEnd(r);
    } else if (key == "replica_groups") {
      Lexer sub(value, start);
      TokenReader r(sub);
      instr.mutable_extras().replica_groups =
          std::make_unique<ReplicaGroups>(ParseReplicaGroups(r));
      ExpectEnd(r);
    } else if (key == "source_target_pairs") {
      Lexer sub(value, start);
      TokenReader r(sub);
      instr.mutable_extras().source_target_pairs =
          std::make_unique<SourceTargetPairs>(ParseSourceTargetPairs(r));
      ExpectEnd(r);
    } else if (key == "channel_id") {
      instr.mutable_extras().channel_id = ParseIntValue(value, start, "channel_id");
    } else if (key == "index" && instr.opcode == Opcode::kGetTupleElement) {
      const int64_t index = ParseIntValue(value, start, "index");
      if (index < INT32_MIN || index > INT32_MAX) {
        throw ParseError{start, "get-tuple-element index out of range"};
      }
      instr.tuple_index = static_cast<int32_t>(index);
    } else if (key == "use_global_device_ids") {
      if (value == "true") instr.mutable_extras().use_global_device_ids = true;
    } else if (key == "custom_call_target") {
      instr.mutable_extras().custom_call_target = Unquote(value, start);
    } else if (key == "backend_config") {
      instr.mutable_extras().backend_config = value.front() == '"' ? Unquote(value, start) : value;
    } else if (key == "calls" || key == "to_apply" || key == "body" || key == "condition" ||
               key == "branch_computations" || key == "true_computation" ||
               key == "false_computation" || key == "async_computation") {
      Lexer sub(value, start);
      TokenReader r(sub);
      auto& called = instr.mutable_extras().called_computations;
      for (const Token& callee : ParseComputationList(r)) {
        pending_calls_.push_back({&instr, called.size(), callee.text, callee.offset});
        called.push_back({key, nullptr});
      }
      ExpectEnd(r);
    } else if (key == "control-predecessors") {
      Lexer sub(value, start);
      TokenReader r(sub);
      for (const Token& pred : ParseComputationList(r)) {
        pending_refs_.push_back({&instr, SIZE_MAX, pred.text, pred.offset});
      }
      ExpectEnd(r);
    }
  }

  // Indexes the parameters by number. A number past the computation's instruction count cannot
  // number this computation's parameters, and sizing the table by it would let one short line
  // allocate megabytes.
  void ResolveParameters(HloComputation& computation) {
    const size_t count = computation.instructions.size();
    auto& params = computation.parameters;
    for (const auto& [instr, offset] : pending_parameters_) {
      const auto index = static_cast<size_t>(instr->parameter_number);
      if (index >= count) {
        throw ParseError{offset, "parameter number " + std::to_string(index) +
                                     " out of range: computation '" +
                                     std::string(computation.name) + "' has " +
                                     std::to_string(count) + " instructions"};
      }
      if (params.size() <= index) params.resize(index + 1, nullptr);
      if (params[index] != nullptr) throw ParseError{offset, "duplicate parameter number"};
      params[index] = instr;
    }
  }

  // metadata={...}: dumps repeat a few thousand distinct values over hundreds of thousands of
  // instructions, and metadata is over half of a dump's text. So the value is scanned raw, by
  // characters, and looked up in the module's pool by its text; only a value not seen before is
  // parsed, straight from the token stream. That value must end where a raw scan would have
  // ended it: at a ',' or the end of the line.
  void ParseMetadataAttribute(HloInstruction& instr, std::string_view key) {
    const size_t start = reader_.Peek().offset;
    const std::string_view raw = lexer_.ScanRawValue();
    const Metadata* metadata = metadata_by_text_.Find(raw);
    std::string_view value = raw;
    if (metadata == nullptr) {
      lexer_.SkipTo(start);
      Metadata parsed = ParseMetadata(reader_, {});
      value = lexer_.text().substr(start, lexer_.offset() - start);
      metadata = AddMetadata(parsed, value);
    }
    if (!lexer_.AtEndOfLine() && !reader_.PeekIs(TokenKind::kComma)) {
      reader_.FailExpected("end of the attribute value", reader_.Peek());
    }
    attribute_scratch_.push_back({key, value});
    instr.set_metadata(metadata);
  }

  // Adds a metadata value not seen before to the module's pool, its source resolved through the
  // stack-frame tables when it names a frame.
  const Metadata* AddMetadata(Metadata metadata, std::string_view raw) {
    metadata.raw = raw;
    if (metadata.source_file.empty() && metadata.stack_frame_id > 0) {
      module_->stack_frames.Resolve(metadata.stack_frame_id, metadata.source_file,
                                    metadata.source_line);
    }
    const Metadata* added = module_->AddMetadata(metadata);
    metadata_by_text_.Insert(raw, added);
    return added;
  }

  // replica_groups=mesh[...], device_ids=(...) {...}: parsed in place, as its top-level comma
  // would end a raw value before device_ids.
  void ParseMeshReplicaGroupsAttribute(HloInstruction& instr, std::string_view key) {
    const size_t start = reader_.Peek().offset;
    instr.mutable_extras().replica_groups =
        std::make_unique<ReplicaGroups>(ParseReplicaGroups(reader_));
    const std::string_view value = lexer_.text().substr(start, lexer_.offset() - start);
    if (!lexer_.AtEndOfLine() && !reader_.PeekIs(TokenKind::kComma)) {
      reader_.FailExpected("end of the attribute value", reader_.Peek());
    }
    attribute_scratch_.push_back({key, value});
  }

  void ResolveOperands(HloComputation& computation) {
    for (const PendingRef& ref : pending_refs_) {
      HloInstruction* const target = instructions_by_name_.Find(ref.name);
      if (target == nullptr) {
        throw ParseError{ref.offset, "'" + std::string(ref.name) + "' is not defined in '" +
                                         std::string(computation.name) + "'"};
      }
      if (ref.index == SIZE_MAX) {
        ref.instruction->mutable_extras().control_predecessors.push_back(target);
      } else {
        ref.instruction->operands[ref.index] = target;
      }
    }
    // Users in two passes, counting first, so each array is allocated once at its exact size.
    // Instruction ids are consecutive within a computation.
    const int64_t first_id = computation.instructions.front()->id;
    user_counts_.assign(computation.instructions.size(), 0);
    last_user_.assign(computation.instructions.size(), -1);
    for (HloInstruction* instr : computation.instructions) {
      for (HloInstruction* operand : instr->operands) {
        const auto local = static_cast<size_t>(operand->id - first_id);
        if (last_user_[local] != instr->id) {
          last_user_[local] = instr->id;
          ++user_counts_[local];
        }
      }
    }
    for (HloInstruction* instr : computation.instructions) {
      uint32_t& count = user_counts_[static_cast<size_t>(instr->id - first_id)];
      instr->users = module_->arena().AllocateArray<HloInstruction*>(count);
      count = 0;  // from here on: the users filled in so far
    }
    for (HloInstruction* instr : computation.instructions) {
      for (HloInstruction* operand : instr->operands) {
        // Users are added instruction by instruction, so a repeated operand finds this
        // instruction already last in its user array.
        uint32_t& filled = user_counts_[static_cast<size_t>(operand->id - first_id)];
        if (filled == 0 || operand->users[filled - 1] != instr) operand->users[filled++] = instr;
      }
    }
  }

  void ResolveCalls() {
    for (const PendingCall& call : pending_calls_) {
      HloComputation* const callee = computations_by_name_.Find(call.name);
      if (callee == nullptr) {
        throw ParseError{call.offset,
                         "computation '" + std::string(call.name) + "' is not defined"};
      }
      call.instruction->mutable_extras().called_computations[call.index].computation = callee;
      auto& callers = callee->callers;
      if (callers.empty() || callers.back() != call.instruction) {
        callers.push_back(call.instruction);
      }
    }
  }

  // File offset of a value that ScanRawValue returned (leading blanks skipped).
  size_t ValueStart(std::string_view value, size_t fallback) const {
    if (value.empty()) return fallback;
    return static_cast<size_t>(value.data() - lexer_.text().data()) + lexer_.base_offset();
  }

  int64_t ParseIntValue(std::string_view value, size_t offset, std::string_view what) {
    int64_t v = 0;
    if (!ParseInt64(value, v)) {
      throw ParseError{offset, "expected an integer for " + std::string(what) + ", got '" +
                                   std::string(value.substr(0, 40)) + "'"};
    }
    return v;
  }

  // num_partitions / replica_count: at least 1, and with the other one at most kMaxDevices.
  int64_t ParseDeviceCount(std::string_view value, size_t offset, std::string_view what,
                           int64_t other) {
    const int64_t count = ParseIntValue(value, offset, what);
    const auto devices = CheckedMul(count, other);
    if (count < 1 || !devices || *devices > kMaxDevices) {
      std::string why = " must be at least 1";
      if (count >= 1) {
        why = other > 1 ? " makes replica_count x num_partitions " +
                              (devices ? std::to_string(*devices) : std::string("past 2^63")) +
                              " devices,"
                        : " devices:";
        why += " more than " + std::to_string(kMaxDevices) + ", the most spmdsim reads";
      }
      throw ParseError{offset, std::string(what) + "=" + std::string(value.substr(0, 40)) + why};
    }
    return count;
  }

  std::string_view Unquote(std::string_view value, size_t offset) {
    if (value.size() < 2 || value.front() != '"' || value.back() != '"') {
      throw ParseError{offset,
                       "expected a quoted string, got '" + std::string(value.substr(0, 40)) + "'"};
    }
    return value.substr(1, value.size() - 2);
  }

  static void ExpectEnd(TokenReader& r) {
    if (!r.PeekIs(TokenKind::kEof)) r.FailExpected("end of the attribute value", r.Peek());
  }

  void Warn(size_t offset, std::string message) {
    ++module_->warning_count;
    if (static_cast<int>(module_->warnings.size()) < options_.max_warnings) {
      module_->warnings.push_back(
          MakeDiagnostic(*source_, offset, Severity::kWarning, std::move(message)));
    }
  }

  std::shared_ptr<const SourceBuffer> source_;
  ParseOptions options_;
  Lexer lexer_;
  TokenReader reader_;
  HloModule* module_ = nullptr;
  NameTable<HloComputation*> computations_by_name_;
  NameTable<HloInstruction*> instructions_by_name_;
  NameTable<const Shape*> shapes_by_text_;  // the module's pooled shapes, by their text
  NameTable<const Metadata*> metadata_by_text_;
  std::vector<PendingRef> pending_refs_;
  std::vector<Attribute> attribute_scratch_;  // the attributes of the instruction being parsed
  std::vector<uint32_t> user_counts_;         // per instruction of the computation, by local id
  std::vector<int64_t> last_user_;
  std::vector<PendingCall> pending_calls_;
  std::vector<std::pair<HloInstruction*, size_t>> pending_parameters_;  // and the number's offset
  std::vector<std::pair<HloInstruction*, size_t>> compact_elements_;    // and the operand's offset
  std::unordered_map<const Shape*, const Shape*> element_shapes_;   // tuple element -> pooled copy
  std::vector<std::pair<HloInstruction*, Opcode>> sugared_starts_;  // and the wrapped opcode
  int64_t next_id_ = 0;
  size_t computation_first_call_ = 0;  // pending_calls_ made by the computation being parsed
};

}  // namespace

ParseResult ParseHloText(std::shared_ptr<const SourceBuffer> source, const ParseOptions& options) {
  ParseResult result;
  HloParser parser(source, options);
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
