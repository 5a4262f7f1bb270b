#include "ir/printer.h"

namespace spmdsim::ir {
namespace {

void AppendAttributes(const std::vector<Attribute>& attributes, std::string& out) {
  for (const Attribute& attr : attributes) {
    out += ", ";
    out += attr.name;
    out += '=';
    out += attr.value;
  }
}

void AppendInstruction(const HloInstruction& instr, std::string& out) {
  if (instr.is_root) out += "ROOT ";
  out += '%';
  out += instr.name;
  out += " = ";
  out += instr.shape.ToString();
  out += ' ';
  out += instr.opcode_name();
  out += '(';
  if (instr.opcode == Opcode::kConstant || instr.opcode == Opcode::kParameter) {
    out += instr.payload;
  } else {
    for (size_t i = 0; i < instr.operands.size(); ++i) {
      if (i) out += ", ";
      out += '%';
      out += instr.operands[i]->name;
    }
  }
  out += ')';
  for (const Attribute& attr : instr.attributes) {
    out += ", ";
    out += attr.name;
    out += '=';
    if (attr.name == "sharding" && instr.sharding()) {
      out += instr.sharding()->ToString();
    } else if (attr.name == "replica_groups" && instr.replica_groups()) {
      out += instr.replica_groups()->ToString();
    } else if (attr.name == "source_target_pairs" && instr.source_target_pairs()) {
      const SourceTargetPairs& pairs = *instr.source_target_pairs();
      out += '{';
      for (size_t i = 0; i < pairs.size(); ++i) {
        if (i) out += ',';
        const auto& [source, target] = pairs[i];
        out += '{' + std::to_string(source) + ',' + std::to_string(target) + '}';
      }
      out += '}';
    } else {
      out += attr.value;
    }
  }
}

void AppendComputation(const HloComputation& computation, std::string& out) {
  if (computation.is_entry) out += "ENTRY ";
  out += '%';
  out += computation.name;
  if (computation.has_signature) {
    out += " (";
    for (size_t i = 0; i < computation.signature.size(); ++i) {
      if (i) out += ", ";
      out += computation.signature[i].name;
      out += ": ";
      out += computation.signature[i].shape.ToString();
    }
    out += ") -> ";
    out += computation.result_shape.ToString();
  }
  AppendAttributes(computation.attributes, out);
  out += " {\n";
  for (const HloInstruction* instr : computation.instructions) {
    if (instr->implicit) continue;  // printed as its users' "%t#3" operand
    out += "  ";
    AppendInstruction(*instr, out);
    out += '\n';
  }
  out += "}\n";
}

}  // namespace

std::string PrintInstruction(const HloInstruction& instruction) {
  std::string out;
  AppendInstruction(instruction, out);
  return out;
}

std::string PrintModule(const HloModule& module) {
  std::string out = "HloModule ";
  out += module.name;
  AppendAttributes(module.attributes, out);
  out += "\n\n";
  if (!module.stack_frames.empty()) {
    out += module.stack_frames.raw;
    out += "\n\n";
  }
  for (const HloComputation* computation : module.computations) {
    if (computation->implicit) continue;  // written as its "X-start" instruction
    AppendComputation(*computation, out);
    out += '\n';
  }
  return out;
}

}  // namespace spmdsim::ir
