#include "passes/module_analyses.h"

#include "passes/memory/buffer_alias_analysis.h"
#include "passes/memory/buffer_dataflow_analysis.h"
#include "passes/memory/live_range_analysis.h"
#include "passes/module_facts.h"
#include "passes/rng/random_provenance.h"

namespace spmdsim::passes {

ModuleAnalyses::ModuleAnalyses(const ir::HloModule& module) : module_(module) {}
ModuleAnalyses::~ModuleAnalyses() = default;

const DataflowAnalysis& ModuleAnalyses::Dataflow() {
  if (!dataflow_) {
    dataflow_ = std::make_unique<const DataflowAnalysis>(DataflowAnalysis::Run(module_));
    ++constructions_.dataflow;
  }
  return *dataflow_;
}

const AliasAnalysis& ModuleAnalyses::Alias() {
  if (!alias_) {
    alias_ = std::make_unique<const AliasAnalysis>(AliasAnalysis::Run(Dataflow()));
    ++constructions_.alias;
  }
  return *alias_;
}

const LiveRangeAnalysis& ModuleAnalyses::LiveRanges() {
  if (!live_ranges_) {
    live_ranges_ =
        std::make_unique<const LiveRangeAnalysis>(LiveRangeAnalysis::Run(Dataflow(), Alias()));
    ++constructions_.live_ranges;
  }
  return *live_ranges_;
}

const RandomProvenance& ModuleAnalyses::Provenance() {
  if (!provenance_) {
    provenance_ = std::make_unique<const RandomProvenance>(RandomProvenance::Run(Dataflow()));
    ++constructions_.provenance;
  }
  return *provenance_;
}

bool ModuleAnalyses::HasGpuBackendMarks() {
  if (!gpu_backend_marks_) {
    gpu_backend_marks_ = passes::HasGpuBackendMarks(module_);
    ++constructions_.gpu_backend_marks;
  }
  return *gpu_backend_marks_;
}

const ComputationExecutions& ModuleAnalyses::Executions() {
  if (!executions_) {
    executions_ =
        std::make_unique<const ComputationExecutions>(ComputationExecutionCounts(module_));
    ++constructions_.executions;
  }
  return *executions_;
}

}  // namespace spmdsim::passes
