// The in-memory IR of an HLO module: modules own computations, computations list instructions in
// text order (the schedule, for modules with is_scheduled=true).
//
// Names, attribute values and metadata strings are string_views into the module's SourceBuffer,
// which the module keeps alive: parsing copies no text, which is what makes it fast.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/arena.h"
#include "ir/call_graph.h"
#include "ir/opcode.h"
#include "ir/replica_groups.h"
#include "ir/shape.h"
#include "ir/sharding.h"
#include "ir/source.h"
#include "ir/stable_storage.h"

namespace spmdsim::ir {

class HloComputation;
class HloInstruction;
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

// One `name=value` attribute of an instruction or module header, exactly as written. Both views
// point into the module's source text (HloModule::SourceOffset gives the value's file offset).
struct Attribute {
  std::string_view name;
  std::string_view value;
};

// A computation an instruction calls, with the attribute that names it
// ("calls", "to_apply", "body", "condition", "branch_computations", ...).
struct CalledComputation {
  std::string_view role;
  HloComputation* computation = nullptr;
};

// The fields few instructions have, kept apart so the others do not pay for them (see the layout
// note on HloInstruction).
struct InstructionExtras {
  // The opcode as written when the table's spelling is not it: an unknown opcode, or XLA's
  // async syntax sugar ("all-to-all-start" for an async-start wrapping an all-to-all).
  std::string_view written_opcode_name;
  std::vector<HloInstruction*> control_predecessors;
  std::vector<CalledComputation> called_computations;
  std::unique_ptr<Sharding> sharding;
  std::unique_ptr<ReplicaGroups> replica_groups;
  std::unique_ptr<SourceTargetPairs> source_target_pairs;
  std::string_view custom_call_target;
  std::string_view backend_config;
  int64_t channel_id = -1;
  bool use_global_device_ids = false;
};

// Layout (memory): a large module has hundreds of thousands of instructions, so an instruction
// holds only what most of them have, 128 bytes plus its operand, user and attribute arrays:
//  - those arrays are spans into the module's Arena, allocated once at their final size;
//  - `shape` is a handle into the module's pool of distinct shapes, and metadata a pointer into
//    its pool of distinct metadata (dumps repeat both: 4k distinct metadata over 350k uses);
//  - fields that few instructions have (sharding, replica groups, called computations, control
//    predecessors, custom-call target, backend config, channel id...) live in one
//    InstructionExtras allocated on first use, read through the accessors below;
//  - the opcode's spelling comes from the opcode table, except for unknown opcodes;
//  - source offsets are not stored: names and attribute values are views into the source
//    (HloModule::SourceOffset).
// On a 104 MB module of 489k instructions that is ~290 bytes per instruction all in (it was ~740),
// and a peak RSS of 2.3x the file for `spmdsim stats` (docs/BENCHMARKS.md).
class HloInstruction {
 public:
  std::string_view name;
  ShapeRef shape;  // reads like a const Shape&
  // Arrays in the module's arena: read them as vectors, but they do not grow.
  std::span<HloInstruction*> operands;
  std::span<HloInstruction*> users;       // each user once, in text order
  std::span<const Attribute> attributes;  // every attribute in written order, typed ones included
  std::string_view payload;  // text inside the parens of constant(...) / parameter(...)
  HloComputation* parent = nullptr;
  int32_t id = 0;                 // unique in the module, in text order
  int32_t parameter_number = -1;  // parameter(N); the parser bounds N
  int32_t tuple_index = -1;       // get-tuple-element index=
  Opcode opcode = Opcode::kUnknown;
  bool is_root = false;
  // A get-tuple-element the text wrote as a compact operand, "%t#3" (XLA's
  // --xla_dump_compact_gte): the parser makes it, named "t#3", just before its first user, so
  // analyses see one form. The printer writes it back as the operand it was.
  bool implicit = false;

  // The opcode as written (the only record of an unknown opcode).
  std::string_view opcode_name() const;
  // metadata={...}; an empty Metadata when absent.
  const Metadata& metadata() const { return *metadata_; }
  // The typed attributes: nullptr / empty / -1 / false when absent.
  const Sharding* sharding() const { return extras_ ? extras_->sharding.get() : nullptr; }
  const ReplicaGroups* replica_groups() const {
    return extras_ ? extras_->replica_groups.get() : nullptr;
  }
  const SourceTargetPairs* source_target_pairs() const {
    return extras_ ? extras_->source_target_pairs.get() : nullptr;
  }
  std::string_view custom_call_target() const {
    return extras_ ? extras_->custom_call_target : std::string_view();
  }
  // Raw: a JSON object or the contents of a string.
  std::string_view backend_config() const {
    return extras_ ? extras_->backend_config : std::string_view();
  }
  int64_t channel_id() const { return extras_ ? extras_->channel_id : -1; }
  bool use_global_device_ids() const { return extras_ && extras_->use_global_device_ids; }
  const std::vector<HloInstruction*>& control_predecessors() const {
    return extras_ ? extras_->control_predecessors : kNoInstructions;
  }
  const std::vector<CalledComputation>& called_computations() const {
    return extras_ ? extras_->called_computations : kNoCalledComputations;
  }

  // The attribute's value as written, or empty when absent.
  std::string_view FindAttribute(std::string_view attr_name) const;
  bool HasAttribute(std::string_view attr_name) const;
  // The first called computation with that role, or nullptr. Inline: the passes ask it of
  // every loop and fusion, and a literal role then compares without a call to memcmp.
  HloComputation* Called(std::string_view role) const {
    for (const CalledComputation& called : called_computations()) {
      if (called.role == role) return called.computation;
    }
    return nullptr;
  }

  // Writers, for the parser. `metadata` must outlive the instruction (the module's pool).
  void set_metadata(const Metadata* metadata) { metadata_ = metadata; }
  InstructionExtras& mutable_extras() {
    if (!extras_) extras_ = std::make_unique<InstructionExtras>();
    return *extras_;
  }

 private:
  static const Metadata kNoMetadata;
  static const std::vector<HloInstruction*> kNoInstructions;
  static const std::vector<CalledComputation> kNoCalledComputations;

  const Metadata* metadata_ = &kNoMetadata;
  std::unique_ptr<InstructionExtras> extras_;
};

struct ComputationParameter {
  std::string_view name;
  ShapeRef shape;  // pooled in the module, as instruction shapes are
};

class HloComputation {
 public:
  std::string_view name;
  bool is_entry = false;
  bool has_signature = false;
  std::vector<ComputationParameter> signature;
  ShapeRef result_shape;
  std::vector<Attribute> attributes;          // e.g. execution_thread="..."
  std::vector<HloInstruction*> instructions;  // text order
  std::vector<HloInstruction*> parameters;    // indexed by parameter number (may hold nulls)
  HloInstruction* root = nullptr;
  std::vector<HloInstruction*> callers;  // instructions that call this computation
  HloModule* parent = nullptr;
  size_t offset = 0;
  // Made by the parser for XLA's async syntax sugar ("X-start(...)" with no calls=): the
  // computation that async-start wraps, holding X. Not printed.
  bool implicit = false;

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
    int64_t parent_frame_id = 0;  // XLA's proto field: 1-based, 0 for a root frame
  };
  std::vector<std::string_view> file_names;
  std::vector<std::string_view> function_names;
  std::vector<FileLocation> file_locations;
  std::vector<Frame> frames;
  std::string_view raw;  // the tables as written, for the printer
  bool empty() const { return raw.empty(); }
  // The innermost frame's file and line; false when the id does not resolve.
  bool Resolve(int64_t stack_frame_id, std::string_view& file, int64_t& line) const;
  // Every frame of the stack, innermost first, as "file:line"; empty when the id does not
  // resolve. A parent chain that loops or leaves the table ends the stack there.
  std::vector<std::string> Stack(int64_t stack_frame_id) const;
};

class HloModule {
 public:
  std::string_view name;
  std::vector<Attribute> attributes;  // header attributes, as written
  bool is_scheduled = false;
  int64_t num_partitions = 1;
  int64_t replica_count = 1;
  // The largest device id the collectives name, plus one (ir/device_count.h); set by the parser.
  int64_t devices_named_by_collectives = 0;
  std::vector<InputOutputAlias> input_output_alias;
  bool has_entry_layout = false;
  std::vector<Shape> entry_parameter_layouts;  // from entry_computation_layout
  Shape entry_result_layout;
  StackFrameIndex stack_frames;

  std::vector<HloComputation*> computations;  // text order
  CallGraph call_graph;                       // built and checked by the parser
  HloComputation* entry = nullptr;
  std::shared_ptr<const SourceBuffer> source;
  size_t offset = 0;  // of "HloModule"

  // Warnings from parsing (unknown opcodes, ...), capped; `warning_count` counts them all.
  std::vector<Diagnostic> warnings;
  int64_t warning_count = 0;

  // One past the largest instruction id (the parser, which makes every module, numbers the
  // instructions 0, 1, ...): the size of an array by instruction id.
  size_t instruction_id_bound = 0;

  int64_t InstructionCount() const;
  HloComputation* FindComputation(std::string_view computation_name) const;

  // File offset of a view into this module's source text (a name, an attribute value).
  size_t SourceOffset(std::string_view text) const;

  // Storage; pointers into it are stable.
  HloComputation* NewComputation();
  HloInstruction* NewInstruction();
  // Pools of the distinct shapes and metadata that instructions point to (the parser looks up
  // repeats and adds each distinct one once).
  const Shape* AddShape(Shape shape);
  const Metadata* AddMetadata(const Metadata& metadata);
  // Where the instructions' operand, user and attribute arrays live.
  Arena& arena() { return arena_; }

 private:
  StableStorage<HloComputation, 256> computation_storage_;
  StableStorage<HloInstruction, 1024> instruction_storage_;
  StableStorage<Shape, 256> shape_pool_;
  StableStorage<Metadata, 256> metadata_pool_;
  Arena arena_;
};

}  // namespace spmdsim::ir
