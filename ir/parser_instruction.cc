// The HLO text parser, one instruction: its name, shape (pooled), opcode (XLA's async sugar
// recognised), operands (compact get-tuple-element operands defined) and attributes (typed ones
// sub-parsed, metadata pooled).
#include <algorithm>
#include <cstring>
#include <utility>

#include "ir/attribute_parsers.h"
#include "ir/parser_internal.h"

namespace spmdsim::ir::parser_internal {

// instruction ::= ['ROOT'] name '=' shape opcode '(' [operand (',' operand)*] ')'
//                 (',' attribute)*
void HloParser::ParseInstruction(HloComputation& computation) {
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
  if (HasTupleIndex(name.text)) {
    reader_.Fail(name,
                 "an instruction name cannot contain '#' (\"%t#3\" is an operand: "
                 "element 3 of tuple %t)");
  }
  // The name goes into the table one instruction late, when its slot (prefetched since the name
  // was peeked) has long arrived; meanwhile FindInstruction knows it (as the previous
  // instruction, it is the operand named most). A redefinition is still the error reported
  // first: when anything after it fails, the late name is filed (and checked) before that error
  // goes on, here and in ParseComputation.
  if (!table_reserved_ && instructions_by_name_.size() >= kReserveAfter) {
    ReserveForLargeComputation(computation);
  }
  uint64_t hash = next_hash_;
  if (name.text.data() != next_name_.data() || name.text.size() != next_name_.size()) {
    hash = instructions_by_name_.Hash(name.text);
    instructions_by_name_.Prefetch(hash);
  }
  try {
    ParseInstructionBody(instr);
  } catch (...) {
    FileLateName();
    if (instructions_by_name_.Find(name.text, hash) != nullptr) FailRedefinition(name);
    throw;
  }
  FileLateName();
  late_ = instr;
  late_hash_ = hash;
  late_offset_ = name.offset;
  AddInstruction(computation, instr);
  // The next line's name is the next token: its slot is loaded while this one is finished and
  // the next one parsed (the hash is kept for the insert).
  const Token& next = reader_.Peek();
  if (next.kind == TokenKind::kPercent) {
    next_name_ = next.text;
    next_hash_ = instructions_by_name_.Hash(next_name_);
    instructions_by_name_.Prefetch(next_hash_);
  }
}

// A computation past kReserveAfter names is a large one (a model's whole step, PyTorch/XLA's one
// flat graph): its instruction lines are counted once, up to the line that closes it, and the
// name table and the per-instruction arrays sized for them, so they do not grow (the table
// placing every name again, the arrays copying themselves) several more times. Only a size:
// lines that are not instructions make it larger than needed, several instructions on one line
// smaller, and everything still grows as it must.
void HloParser::ReserveForLargeComputation(HloComputation& computation) {
  table_reserved_ = true;
  const std::string_view text = lexer_.text();
  const char* p = text.data() + (lexer_.offset() - lexer_.base_offset());
  const char* const end = text.data() + text.size();
  size_t lines = 0;
  while (p < end) {
    p = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    if (p == nullptr || ++p >= end || *p == '}') break;
    ++lines;
  }
  const size_t count = computation.instructions.size() + lines + 1;
  instructions_by_name_.Reserve(count);
  computation.instructions.reserve(count);
  operand_counts_.reserve(count);
  user_counts_.reserve(count);
  last_user_.reserve(count);
  // Operands per instruction: the edges so far tell.
  operand_locals_.reserve(operand_locals_.size() +
                          lines * (operand_locals_.size() / operand_counts_.size() + 1));
}

// Appends an instruction to its computation and its operands to the computation's edge list, and
// counts it as a user of each (once per operand), while those operands, just looked up, and
// their counts are still in cache.
void HloParser::AddInstruction(HloComputation& computation, HloInstruction* instr) {
  const auto user = static_cast<uint32_t>(computation.instructions.size());
  computation.instructions.push_back(instr);
  user_counts_.push_back(0);
  last_user_.push_back(kPendingLocal);
  for (const HloInstruction* operand : instr->operands) {
    if (operand == nullptr) {
      operand_locals_.push_back(kPendingLocal);
      continue;
    }
    const auto local = static_cast<uint32_t>(operand->id - first_id_);
    operand_locals_.push_back(local);
    if (last_user_[local] != user) {
      last_user_[local] = user;
      ++user_counts_[local];
    }
  }
  operand_counts_.push_back(static_cast<uint32_t>(instr->operands.size()));
}

void HloParser::FailRedefinition(const Token& name) {
  reader_.Fail(name, "redefinition of '" + std::string(name.text) + "'");
}

void HloParser::FileLateName() {
  if (late_ == nullptr) return;
  HloInstruction* const instr = std::exchange(late_, nullptr);
  if (!instructions_by_name_.Insert(instr->name, late_hash_, instr)) {
    FailRedefinition({TokenKind::kPercent, instr->name, late_offset_});
  }
}

// instruction_body ::= '=' shape opcode '(' [operand (',' operand)*] ')' (',' attribute)*
void HloParser::ParseInstructionBody(HloInstruction* instr) {
  reader_.Expect(TokenKind::kEqual, "'=' after the instruction name");
  instr->shape = ShapeRef(ParseInternedShape());
  Token opcode;
  if (!lexer_.TakeName(opcode)) opcode = reader_.Expect(TokenKind::kName, "an opcode");
  instr->opcode = CachedOpcode(opcode.text);
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
        (!instr->shape.IsTuple() || instr->shape.tuple_shapes().size() != instr->operands.size())) {
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
}

// OpcodeFromName through a small direct-mapped cache of the spellings met so far (views into the
// text), keyed by a hash of a few bytes: a file uses a few dozen opcodes a million times, and
// this hit costs a third of a full lookup.
Opcode HloParser::CachedOpcode(std::string_view name) {
  const size_t n = name.size();
  if (n == 0) return OpcodeFromName(name);
  const auto byte = [&](size_t i) {
    return static_cast<size_t>(static_cast<unsigned char>(name[i]));
  };
  const size_t key =
      (n * 0x9e5 ^ byte(0) * 0x61 ^ byte(n / 2) * 0x1f ^ byte(n - 1)) % kOpcodeCacheSize;
  OpcodeCacheEntry& entry = opcode_cache_[key];
  if (SameName(entry.name, name)) return entry.opcode;  // n > 0: an unused entry never matches
  entry = {name, OpcodeFromName(name)};
  return entry.opcode;
}

// The instruction's shape, from the module's pool. Instructions share a few hundred distinct
// shapes, so each shape's text is the pool's key: a shape without blanks inside (all arrays as
// XLA prints them), followed by blanks and the opcode, that is already pooled is skipped without
// being parsed; any other shape is parsed, then looked up by its whole text. A key is the exact
// text of a shape that parsed, and a blank-free key ends where that shape ended, so a match
// parses to the same shape.
const Shape* HloParser::ParseInternedShape() {
  const std::string_view text = lexer_.text();  // the whole file: offsets index it
  const size_t start = lexer_.NextTokenOffset();
  size_t end = start;
  if (start < text.size() && text[start] == '(') {
    // A tuple shape: its text, through the matching ')', is looked up the same way. Tuples have
    // no layout, so the shape ends there; only parens nest in it (layouts' T(8,128) included),
    // /* comments */ are stepped over, and anything else odd (a string, a // comment, a line
    // break) leaves it to the parser.
    int64_t depth = 0;
    size_t close = start;
    for (; close < text.size(); ++close) {
      const char c = text[close];
      if (c == '(') {
        ++depth;
      } else if (c == ')') {
        if (--depth == 0) break;
      } else if (c == '/' && close + 1 < text.size() && text[close + 1] == '*') {
        // "/*index=5*/", as XLA numbers long tuples: part of the key, and may hold a paren.
        const size_t comment_end = text.find("*/", close + 2);
        if (comment_end == std::string_view::npos) {
          close = text.size();
          break;
        }
        close = comment_end + 1;
      } else if (c == '"' || c == '\'' || c == '/' || c == '\n' || c == '\r') {
        close = text.size();
        break;
      }
    }
    if (close < text.size()) end = close + 1;
  } else {
    end = ScanToBlank(text.data(), start, text.size());
  }
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
const Shape* HloParser::PoolShape(Shape shape, size_t start) {
  const std::string_view text = lexer_.text();
  size_t stop = reader_.Peek().offset;
  while (stop > start && IsBlank(text[stop - 1])) --stop;
  const std::string_view key = text.substr(start, stop - start);
  if (const Shape* pooled = shapes_by_text_.Find(key)) return pooled;
  const Shape* added = module_->AddShape(std::move(shape));
  shapes_by_text_.Insert(key, added);
  return added;
}

// operand ::= [shape] name
void HloParser::ParseOperands(HloInstruction& instr) {
  operand_scratch_.clear();
  operand_tokens_.clear();
  if (lexer_.TakePlainOperands(operand_tokens_)) {  // "%a, %b)": most lists
    for (const Token& name : operand_tokens_) AddOperand(instr, name);
  } else {
    if (reader_.Accept(TokenKind::kRparen)) return;
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
      if (HasTupleIndex(name.text)) DefineCompactElement(*instr.parent, name.text, name.offset);
      AddOperand(instr, name);
    } while (reader_.Accept(TokenKind::kComma));
    reader_.Expect(TokenKind::kRparen, "')' closing the operand list");
  }
  // Nulls stay for the pending names till they are resolved.
  instr.operands = module_->arena().AllocateArray<HloInstruction*>(operand_scratch_.size());
  std::copy(operand_scratch_.begin(), operand_scratch_.end(), instr.operands.begin());
}

// Operands almost always name an instruction defined just before: resolved now, while its table
// slot is still in cache; a name not defined yet waits for the end of the scope.
void HloParser::AddOperand(HloInstruction& instr, const Token& name) {
  HloInstruction* const target = FindInstruction(name.text);
  if (target == nullptr) {
    pending_refs_.push_back({&instr, operand_scratch_.size(), name.text, name.offset});
    operand_pending_ = true;
  }
  operand_scratch_.push_back(target);
}

int32_t HloParser::NextInstructionId() {
  if (next_id_ == INT32_MAX) reader_.Fail(reader_.Peek(), "too many instructions in the module");
  return static_cast<int32_t>(next_id_++);
}

// compact_operand ::= name ('#' int)+
// "%t#3" is what XLA writes for a get-tuple-element(%t), index=3 that it does not print. The
// first use defines it: a get-tuple-element named "t#3", placed before the user; "t#3#1" is
// element 1 of "t#3". Its shape is known once %t is (ResolveCompactElementShapes).
void HloParser::DefineCompactElement(HloComputation& computation, std::string_view ref,
                                     size_t offset) {
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
    throw ParseError{offset + hash + 1, "tuple index out of range in '%" + std::string(ref) + "'"};
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
  gte->operands[0] = FindInstruction(tuple);
  if (gte->operands[0] == nullptr) {
    pending_refs_.push_back({gte, 0, tuple, offset});
    operand_pending_ = true;
  }
  compact_elements_.push_back({gte, offset});
  AddInstruction(computation, gte);
}

// XLA's async syntax sugar: "X-start", "X-update", "X-done" for async-start/update/done that
// wrap one X, where X is any opcode without async opcodes of its own (all-to-all,
// reduce-scatter, fusion, custom-call, ...). all-reduce-start and the like are real opcodes
// and never reach here.
void HloParser::SugaredAsyncOpcode(HloInstruction& instr, std::string_view name) {
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

// attribute ::= name '=' value; value is scanned raw, then typed attributes are sub-parsed.
void HloParser::ParseInstructionAttribute(HloInstruction& instr) {
  Token name;
  if (!lexer_.TakeName(name)) {
    name = reader_.Next();
    if (name.kind != TokenKind::kName) reader_.FailExpected("an attribute name", name);
  }
  if (!lexer_.TakeSingle(TokenKind::kEqual)) {
    if (!reader_.PeekIs(TokenKind::kEqual)) {  // the message is built only on failure
      reader_.FailExpected("'=' after attribute '" + std::string(name.text) + "'", reader_.Peek());
    }
    reader_.Next();
  }
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
    instr.mutable_extras().replica_groups = std::make_unique<ReplicaGroups>(ParseReplicaGroups(r));
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

// metadata={...}: dumps repeat a few thousand distinct values over hundreds of thousands of
// instructions, and metadata is over half of a dump's text. So the value is scanned raw, by
// characters, and looked up in the module's pool by its text; only a value not seen before is
// parsed, straight from the token stream. That value must end where a raw scan would have
// ended it: at a ',' or the end of the line.
void HloParser::ParseMetadataAttribute(HloInstruction& instr, std::string_view key) {
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
const Metadata* HloParser::AddMetadata(Metadata metadata, std::string_view raw) {
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
void HloParser::ParseMeshReplicaGroupsAttribute(HloInstruction& instr, std::string_view key) {
  const size_t start = reader_.Peek().offset;
  instr.mutable_extras().replica_groups =
      std::make_unique<ReplicaGroups>(ParseReplicaGroups(reader_));
  const std::string_view value = lexer_.text().substr(start, lexer_.offset() - start);
  if (!lexer_.AtEndOfLine() && !reader_.PeekIs(TokenKind::kComma)) {
    reader_.FailExpected("end of the attribute value", reader_.Peek());
  }
  attribute_scratch_.push_back({key, value});
}

}  // namespace spmdsim::ir::parser_internal
