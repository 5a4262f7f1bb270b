// The in-memory IR of an HLO module: modules own computations, computations list instructions in
// text order (the schedule, for modules with is_scheduled=true).
//
// Names, attribute values and metadata strings are string_views into the module's SourceBuffer,
// which the module keeps alive: parsing copies no text, which is what makes it fast.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/opcode.h"
#include "ir/replica_groups.h"
#include "ir/shape.h"
#include "ir/sharding.h"
#include "ir/source.h"
#include "ir/stable_storage.h"

namespace spmdsim::ir {

class HloComputation;
class HloModule;

// metadata={op_type="..." op_name="..." source_file="..." source_line=N ...}
struct Metadata {
  std::string_view op_type;
  std::string_view op_name;
  std::string_view source_file;
  int64_t source_line = 0;
  int64_t stack_frame_id = 0;  // newer XLA: source comes from the module's StackFrames table
  std::string_view raw;        // the whole "{...}" as written, for fields we do not interpret
  bool empty() const { return raw.empty(); }
  // "file.py:76", or empty when there is no source file.
  std::string Source() const;
};

// One `name=value` attribute of an instruction or module header, exactly as written.
struct Attribute {
  std::string_view name;
  std::string_view value;
  size_t offset = 0;  // of the value, in the source
};

// A computation an instruction calls, with the attribute that names it
// ("calls", "to_apply", "body", "condition", "branch_computations", ...).
struct CalledComputation {
  std::string_view role;
  HloComputation* computation = nullptr;
};

class HloInstruction {
 public:
  std::string_view name;
  Opcode opcode = Opcode::kUnknown;
  std::string_view opcode_name;  // as written; the only record of an unknown opcode
  Shape shape;
  bool is_root = false;
  std::vector<HloInstruction*> operands;
  std::vector<HloInstruction*> users;  // each user once, in text order
  std::vector<HloInstruction*> control_predecessors;
  std::vector<CalledComputation> called_computations;
  std::vector<Attribute> attributes;  // every attribute in written order, typed ones included
  Metadata metadata;
  std::unique_ptr<Sharding> sharding;             // null when there is no sharding attribute
  std::unique_ptr<ReplicaGroups> replica_groups;  // null when absent
  std::unique_ptr<SourceTargetPairs> source_target_pairs;  // null when absent
  std::string_view payload;  // text inside the parens of constant(...) / parameter(...)
  int64_t parameter_number = -1;
  int64_t tuple_index = -1;  // get-tuple-element index=
  int64_t channel_id = -1;
  bool use_global_device_ids = false;
  std::string_view custom_call_target;
  std::string_view backend_config;  // raw: a JSON object or the contents of a string
  HloComputation* parent = nullptr;
  int64_t id = 0;     // unique in the module, in text order
  size_t offset = 0;  // of the instruction's name in the source

  // The attribute's value as written, or empty when absent.
  std::string_view FindAttribute(std::string_view attr_name) const;
  bool HasAttribute(std::string_view attr_name) const;
  // The first called computation with that role, or nullptr.
  HloComputation* Called(std::string_view role) const;
};

struct ComputationParameter {
  std::string_view name;
  Shape shape;
};

class HloComputation {
 public:
  std::string_view name;
  bool is_entry = false;
  bool has_signature = false;
  std::vector<ComputationParameter> signature;
  Shape result_shape;
  std::vector<Attribute> attributes;          // e.g. execution_thread="..."
  std::vector<HloInstruction*> instructions;  // text order
  std::vector<HloInstruction*> parameters;    // indexed by parameter number (may hold nulls)
  HloInstruction* root = nullptr;
  std::vector<HloInstruction*> callers;  // instructions that call this computation
  HloModule* parent = nullptr;
  size_t offset = 0;

  bool IsFusionComputation() const;
};

// input_output_alias={ {0}: (1, {}, may-alias) }: output {0} may reuse parameter 1's buffer.
struct InputOutputAlias {
  std::vector<int64_t> output_index;
  int64_t parameter_number = 0;
  std::vector<int64_t> parameter_index;
  std::string_view kind;  // "may-alias" / "must-alias"
  bool operator==(const InputOutputAlias&) const = default;
};

// The stack-frame tables newer XLA prints after the module header (FileNames, FunctionNames,
// FileLocations, StackFrames); metadata then names a frame by stack_frame_id instead of carrying
// source_file/source_line. Ids are 1-based.
struct StackFrameIndex {
  struct FileLocation {
    int64_t file_name_id = 0;
    int64_t function_name_id = 0;
    int64_t line = 0;
  };
  struct Frame {
    int64_t file_location_id = 0;
    int64_t parent_frame_id = 0;
  };
  std::vector<std::string_view> file_names;
  std::vector<std::string_view> function_names;
  std::vector<FileLocation> file_locations;
  std::vector<Frame> frames;
  std::string_view raw;  // the tables as written, for the printer
  bool empty() const { return raw.empty(); }
  // The innermost frame's file and line; false when the id does not resolve.
  bool Resolve(int64_t stack_frame_id, std::string_view& file, int64_t& line) const;
};

class HloModule {
 public:
  std::string_view name;
  std::vector<Attribute> attributes;  // header attributes, as written
  bool is_scheduled = false;
  int64_t num_partitions = 1;
  int64_t replica_count = 1;
  std::vector<InputOutputAlias> input_output_alias;
  bool has_entry_layout = false;
  std::vector<Shape> entry_parameter_layouts;  // from entry_computation_layout
  Shape entry_result_layout;
  StackFrameIndex stack_frames;

  std::vector<HloComputation*> computations;  // text order
  HloComputation* entry = nullptr;
  std::shared_ptr<const SourceBuffer> source;
  size_t offset = 0;  // of "HloModule"

  // Warnings from parsing (unknown opcodes, ...), capped; `warning_count` counts them all.
  std::vector<Diagnostic> warnings;
  int64_t warning_count = 0;

  int64_t InstructionCount() const;
  HloComputation* FindComputation(std::string_view computation_name) const;

  // Storage; pointers into it are stable.
  HloComputation* NewComputation();
  HloInstruction* NewInstruction();

 private:
  StableStorage<HloComputation, 256> computation_storage_;
  StableStorage<HloInstruction, 1024> instruction_storage_;
};

}  // namespace spmdsim::ir
