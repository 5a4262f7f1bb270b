// Writes the IR back as HLO text that XLA's parser and ours both accept. Typed attributes
// (sharding, replica_groups, source_target_pairs) are printed from their parsed form, the rest as
// written, so parse -> print -> parse yields the same IR.
#pragma once

#include <string>

#include "ir/hlo.h"

namespace spmdsim::ir {

std::string PrintModule(const HloModule& module);
std::string PrintInstruction(const HloInstruction& instruction);

}  // namespace spmdsim::ir
