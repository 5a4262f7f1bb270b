// The stage a dump's file name gives a module, handed to the passes as a hint, and the one
// "partitioned yet?" decision every command uses (passes/module_facts.h).
#pragma once

#include "dump/module_loader.h"
#include "passes/module_facts.h"

namespace spmdsim::analyzer {

inline passes::StageHint StageHintOf(const dump::ModuleInput& input) {
  if (input.stage == dump::ModuleStage::kBeforeOptimizations)
    return passes::StageHint::kBeforeOptimizations;
  if (input.stage == dump::ModuleStage::kAfterOptimizations)
    return passes::StageHint::kAfterOptimizations;
  return passes::StageHint::kUnknown;
}

inline bool IsUnpartitioned(const dump::ModuleInput& input) {
  return passes::IsUnpartitioned(*input.module, StageHintOf(input));
}

}  // namespace spmdsim::analyzer
