#include "ir/hlo.h"

namespace spmdsim::ir {

// The budget the layout note in hlo.h describes; growing it costs every instruction of a module.
static_assert(sizeof(void*) != 8 || sizeof(HloInstruction) <= 128);

std::string Metadata::Source() const {
  if (source_file.empty()) return {};
  std::string out(source_file);
  if (source_line > 0) out += ":" + std::to_string(source_line);
  return out;
}

bool StackFrameIndex::Resolve(int64_t stack_frame_id, std::string_view& file, int64_t& line) const {
  if (stack_frame_id < 1 || stack_frame_id > static_cast<int64_t>(frames.size())) return false;
  const int64_t location_id = frames[static_cast<size_t>(stack_frame_id - 1)].file_location_id;
  if (location_id < 1 || location_id > static_cast<int64_t>(file_locations.size())) return false;
  const FileLocation& location = file_locations[static_cast<size_t>(location_id - 1)];
  if (location.file_name_id < 1 ||
      location.file_name_id > static_cast<int64_t>(file_names.size())) {
    return false;
  }
  file = file_names[static_cast<size_t>(location.file_name_id - 1)];
  line = location.line;
  return true;
}

std::vector<std::string> StackFrameIndex::Stack(int64_t stack_frame_id) const {
  std::vector<std::string> stack;
  // Each step moves to a parent; more steps than frames means the chain loops.
  for (int64_t id = stack_frame_id; id > 0 && stack.size() < frames.size();
       id = frames[static_cast<size_t>(id - 1)].parent_frame_id) {
    std::string_view file;
    int64_t line = 0;
    if (!Resolve(id, file, line)) break;
    stack.push_back(std::string(file) + ":" + std::to_string(line));
  }
  return stack;
}

const Metadata HloInstruction::kNoMetadata;
const std::vector<HloInstruction*> HloInstruction::kNoInstructions;
const std::vector<CalledComputation> HloInstruction::kNoCalledComputations;

std::string_view HloInstruction::opcode_name() const {
  if (extras_ && !extras_->written_opcode_name.empty()) return extras_->written_opcode_name;
  return OpcodeName(opcode);
}

std::string_view HloInstruction::FindAttribute(std::string_view attr_name) const {
  for (const Attribute& attr : attributes) {
    if (attr.name == attr_name) return attr.value;
  }
  return {};
}

bool HloInstruction::HasAttribute(std::string_view attr_name) const {
  for (const Attribute& attr : attributes) {
    if (attr.name == attr_name) return true;
  }
  return false;
}

bool HloComputation::IsFusionComputation() const {
  for (const HloInstruction* caller : callers) {
    if (caller->opcode == Opcode::kFusion) return true;
  }
  return false;
}

int64_t HloModule::InstructionCount() const {
  int64_t count = 0;
  for (const HloComputation* computation : computations) {
    count += static_cast<int64_t>(computation->instructions.size());
  }
  return count;
}

HloComputation* HloModule::FindComputation(std::string_view computation_name) const {
  for (HloComputation* computation : computations) {
    if (computation->name == computation_name) return computation;
  }
  return nullptr;
}

HloComputation* HloModule::NewComputation() {
  HloComputation& computation = computation_storage_.Emplace();
  computation.parent = this;
  return &computation;
}

HloInstruction* HloModule::NewInstruction() { return &instruction_storage_.Emplace(); }

const Shape* HloModule::AddShape(Shape shape) {
  Shape& slot = shape_pool_.Emplace();
  slot = std::move(shape);
  return &slot;
}

const Metadata* HloModule::AddMetadata(const Metadata& metadata) {
  Metadata& slot = metadata_pool_.Emplace();
  slot = metadata;
  return &slot;
}

size_t HloModule::SourceOffset(std::string_view text) const {
  return static_cast<size_t>(text.data() - source->text().data());
}

}  // namespace spmdsim::ir
