// The HLO text parser's state, shared by the files that implement it (not part of the API; use
// ir/parser.h). One grammar area per file:
//   parser.cc              the entry points; file, module header and computation; value helpers
//   parser_instruction.cc  an instruction: name, shape, opcode, operands, attributes
//   parser_resolve.cc      what waits for a scope to close: operands and users, parameters,
//                          compact get-tuple-elements, calls, XLA's async sugar
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/hlo.h"
#include "ir/lexer.h"
#include "ir/name_table.h"
#include "ir/parser.h"
#include "ir/source.h"
#include "ir/token_reader.h"

namespace spmdsim::ir::parser_internal {

// An operand or control predecessor named before it was defined (resolved when the computation
// is complete).
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

// The instruction table's entries are the instructions, whose names they hold.
struct InstructionName {
  std::string_view operator()(const HloInstruction* instr) const { return instr->name; }
};

class HloParser {
 public:
  HloParser(std::shared_ptr<const SourceBuffer> source, const ParseOptions& options)
      : source_(std::move(source)), options_(options), lexer_(source_->text()), reader_(lexer_) {}

  // file ::= module+
  void ParseFile(std::vector<std::unique_ptr<HloModule>>& modules);

 private:
  // parser.cc: module, computation, values.
  std::unique_ptr<HloModule> ParseModule();
  void ParseModuleAttribute(HloModule& module);
  void ParseStackFrameIndex(StackFrameIndex& index);
  void ParseEntryLayout(HloModule& module, std::string_view value, size_t value_start);
  void ParseComputation(HloModule& module);
  size_t ValueStart(std::string_view value, size_t fallback) const;
  int64_t ParseIntValue(std::string_view value, size_t offset, std::string_view what);
  int64_t ParseDeviceCount(std::string_view value, size_t offset, std::string_view what,
                           int64_t other);
  std::string_view Unquote(std::string_view value, size_t offset);
  static void ExpectEnd(TokenReader& r);
  void Warn(size_t offset, std::string message);

  // parser_instruction.cc: one instruction.
  void ParseInstruction(HloComputation& computation);
  [[noreturn]] void FailRedefinition(const Token& name);
  // Enters the last instruction's name in the table (see ParseInstruction); throws when it is a
  // redefinition.
  void FileLateName();
  // The instruction of this name in the computation so far: the late one, or the table's.
  HloInstruction* FindInstruction(std::string_view name) const {
    if (late_ != nullptr && SameName(late_->name, name)) return late_;
    return instructions_by_name_.Find(name);
  }
  void ParseInstructionBody(HloInstruction* instr);
  const Shape* ParseInternedShape();
  const Shape* PoolShape(Shape shape, size_t start);
  void ParseOperands(HloInstruction& instr);
  void AddOperand(HloInstruction& instr, const Token& name);
  // A compact operand's "#N" suffix ("t#3", "t#3#1"): the lexer keeps a '#' only before digits
  // at the end of a name, so a name has one when a '#' precedes its trailing digits.
  static bool HasTupleIndex(std::string_view name) {
    size_t i = name.size();
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
    return i > 0 && i < name.size() && name[i - 1] == '#';
  }
  int32_t NextInstructionId();
  void DefineCompactElement(HloComputation& computation, std::string_view ref, size_t offset);
  void AddInstruction(HloComputation& computation, HloInstruction* instr);
  void ReserveForLargeComputation(HloComputation& computation);
  static constexpr size_t kReserveAfter = 4096;
  void SugaredAsyncOpcode(HloInstruction& instr, std::string_view name);
  Opcode CachedOpcode(std::string_view name);
  void ParseInstructionAttribute(HloInstruction& instr);
  void ParseMetadataAttribute(HloInstruction& instr, std::string_view key);
  const Metadata* AddMetadata(Metadata metadata, std::string_view raw);
  void ParseMeshReplicaGroupsAttribute(HloInstruction& instr, std::string_view key);
  static bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

  // parser_resolve.cc: what waits for the end of a computation or module.
  void ResolveParameters(HloComputation& computation);
  void ResolveOperands(HloComputation& computation);
  void FillUsers(HloComputation& computation);
  void FillUsersFromOperands(HloComputation& computation);
  void ResolveCompactElementShapes();
  void DesugarAsyncOps(HloModule& module);
  void ResolveCalls();
  const Shape* PooledCopy(const Shape* element);
  std::string_view ArenaString(const std::string& text);

  std::shared_ptr<const SourceBuffer> source_;
  ParseOptions options_;
  Lexer lexer_;
  TokenReader reader_;
  HloModule* module_ = nullptr;
  NameTable<HloComputation*> computations_by_name_;
  NameTable<HloInstruction*, InstructionName> instructions_by_name_;
  NameTable<const Shape*> shapes_by_text_;  // the module's pooled shapes, by their text
  NameTable<const Metadata*> metadata_by_text_;
  std::vector<PendingRef> pending_refs_;
  bool operand_pending_ = false;  // pending_refs_ holds an operand (not only control edges)
  std::vector<Attribute> attribute_scratch_;      // the attributes of the instruction being parsed
  std::vector<HloInstruction*> operand_scratch_;  // its operands (null: pending)
  std::vector<Token> operand_tokens_;             // their names, when read on the fast path
  // The name of the instruction after the one just parsed, as peeked, and its hash (its table
  // slot was prefetched).
  std::string_view next_name_;
  uint64_t next_hash_ = 0;
  struct OpcodeCacheEntry {
    std::string_view name;  // empty: unused
    Opcode opcode = Opcode::kUnknown;
  };
  static constexpr size_t kOpcodeCacheSize = 512;
  OpcodeCacheEntry opcode_cache_[kOpcodeCacheSize];
  HloInstruction* late_ = nullptr;  // parsed, its name not in the table yet
  uint64_t late_hash_ = 0;
  size_t late_offset_ = 0;       // of its name
  bool table_reserved_ = false;  // ReserveForLargeComputation ran for this computation
  // The computation's operand edges as local ids (id - first_id_), instruction by instruction in
  // the computation's order, and each instruction's operand count: its users are counted and
  // filled from these, without reading every instruction again (kPendingLocal: not resolved yet).
  static constexpr uint32_t kPendingLocal = UINT32_MAX;
  std::vector<uint32_t> operand_locals_;
  std::vector<uint32_t> operand_counts_;
  int64_t first_id_ = 0;               // the id of the computation's first instruction
  std::vector<uint32_t> user_counts_;  // per instruction of the computation, by local id
  std::vector<uint32_t> last_user_;    // its last user counted; then where its users start
  std::vector<PendingCall> pending_calls_;
  std::vector<std::pair<HloInstruction*, size_t>> pending_parameters_;  // and the number's offset
  std::vector<std::pair<HloInstruction*, size_t>> compact_elements_;    // and the operand's offset
  std::unordered_map<const Shape*, const Shape*> element_shapes_;   // tuple element -> pooled copy
  std::vector<std::pair<HloInstruction*, Opcode>> sugared_starts_;  // and the wrapped opcode
  int64_t next_id_ = 0;
  size_t computation_first_call_ = 0;  // pending_calls_ made by the computation being parsed
};

}  // namespace spmdsim::ir::parser_internal
