// How every view names one collective op: its kind, and "xN" when XLA combined N operands into
// it (a variadic all-reduce, all-gather, permute...), so text and HTML label the same op alike.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "ir/opcode.h"

namespace spmdsim::analyzer {

// "all-reduce x31", "all-gather".
inline std::string CollectiveLabel(ir::CollectiveKind kind, int64_t combined_operands) {
  const std::string_view name = ir::CollectiveKindName(kind);
  return combined_operands > 1 ? fmt::format("{} x{}", name, combined_operands) : std::string(name);
}

}  // namespace spmdsim::analyzer
