// Counts what a module contains: computations, instructions by opcode (fused computations
// included), collectives by kind, custom-call targets, parameter and output bytes.
//
// Collectives count once per operation: an X-start/X-done pair counts as one X, and an
// async-start wrapping a collective counts under the wrapped collective's kind (the wrapped
// computation's own instruction is not counted again).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/hlo.h"

namespace spmdsim::passes {

struct StatsOptions {};

struct StatsResult {
  std::string name;
  int64_t computation_count = 0;
  int64_t instruction_count = 0;  // every instruction of every computation
  std::map<std::string, int64_t> instructions_by_opcode;
  std::map<std::string, int64_t> collectives;          // base kind -> count
  std::map<std::string, int64_t> custom_call_targets;  // target -> count
  int64_t parameter_count = 0;
  int64_t parameter_bytes = 0;  // entry parameters, array leaves
  int64_t output_bytes = 0;     // entry root, array leaves
  bool is_scheduled = false;
  int64_t num_partitions = 1;
  int64_t replica_count = 1;
  int64_t devices = 1;                    // ir::DeviceCount
  bool devices_from_collectives = false;  // ir::DevicesFromCollectives
  int64_t warning_count = 0;              // parse warnings (unknown opcodes, ...)
};

StatsResult ComputeStats(const ir::HloModule& module, const StatsOptions& options = {});

// The collective an instruction starts, counted the way StatsResult counts: kAllReduce for
// all-reduce and all-reduce-start, the wrapped kind for async-start, kNone for -done halves and
// non-collectives.
ir::CollectiveKind CollectiveStarted(const ir::HloInstruction& instruction);

}  // namespace spmdsim::passes
