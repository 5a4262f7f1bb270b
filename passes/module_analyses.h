// One module's shared analyses, each built on first use and kept for the rest of the module's
// commands (as XLA's BufferAssignment owns its alias analysis and live ranges, or MLIR's analysis
// manager caches per operation): the dataflow, the buffers after aliasing and the live ranges
// that the memory analysis, the RNG sites and the remat what-if all read. A pass given a
// ModuleAnalyses takes them from it instead of building its own; the overloads that take a bare
// module make a ModuleAnalyses of their own.
//
//   passes::ModuleAnalyses analyses(module);
//   const PeakMemoryResult memory = AnalyzePeakMemory(analyses, options);
//   const RngSiteResult rng = AnalyzeRngSites(analyses, rng_options);  // same dataflow
//   EstimateRematSavings(analyses, memory, rng, options);              // same buffers, ranges
//
// constructions() counts what was built, so a test can hold the pipeline to one of each.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "ir/hlo.h"
#include "passes/loop_trip_count.h"

namespace spmdsim::passes {

// Kept here by type; declared by the subjects that build them (the context holds them, it does
// not know them: passes/memory/ and passes/rng/ include this header, not the other way).
class AliasAnalysis;
class DataflowAnalysis;
class LiveRangeAnalysis;
class RandomProvenance;

class ModuleAnalyses {
 public:
  explicit ModuleAnalyses(const ir::HloModule& module);
  ~ModuleAnalyses();
  ModuleAnalyses(const ModuleAnalyses&) = delete;
  ModuleAnalyses& operator=(const ModuleAnalyses&) = delete;

  const ir::HloModule& module() const { return module_; }
  const DataflowAnalysis& Dataflow();
  const AliasAnalysis& Alias();
  const LiveRangeAnalysis& LiveRanges();
  // Which values hold random bits and which draw made them (passes/rng/random_provenance.h).
  const RandomProvenance& Provenance();
  // HasGpuBackendMarks (module_facts.h), scanned once: every command asks for the platform.
  bool HasGpuBackendMarks();
  // How many times each computation runs per step (ComputationExecutionCounts), for the
  // collectives and the RNG sites.
  const ComputationExecutions& Executions();

  // The memory analysis' allocation decisions (which buffers are arguments, outputs, temps, and
  // which temporaries XLA places in argument or output allocations), kept for later runs with the
  // same platform and sizes: the remat what-if changes only the heap, so it re-runs only the
  // heap's simulation and packing. Opaque here; passes/memory/memory_allocations.cc owns it.
  struct MemoryAssignmentKey {
    int platform = -1;
    bool per_device_from_shardings = false;
    bool operator==(const MemoryAssignmentKey& o) const {
      return platform == o.platform && per_device_from_shardings == o.per_device_from_shardings;
    }
  };
  const void* MemoryAssignment(const MemoryAssignmentKey& key) const {
    return memory_assignment_ && memory_assignment_key_ == key ? memory_assignment_.get() : nullptr;
  }
  void KeepMemoryAssignment(const MemoryAssignmentKey& key, std::shared_ptr<const void> state) {
    memory_assignment_key_ = key;
    memory_assignment_ = std::move(state);
    ++constructions_.memory_assignment;
  }

  struct Constructions {
    int dataflow = 0;
    int alias = 0;
    int live_ranges = 0;
    int provenance = 0;
    int memory_assignment = 0;
    int gpu_backend_marks = 0;  // scans for them
    int executions = 0;
  };
  const Constructions& constructions() const { return constructions_; }

 private:
  const ir::HloModule& module_;
  // Held by pointer: each refers to the ones before it, so none may move.
  std::unique_ptr<const DataflowAnalysis> dataflow_;
  std::unique_ptr<const AliasAnalysis> alias_;
  std::unique_ptr<const LiveRangeAnalysis> live_ranges_;
  std::unique_ptr<const RandomProvenance> provenance_;
  std::optional<bool> gpu_backend_marks_;
  std::unique_ptr<const ComputationExecutions> executions_;
  MemoryAssignmentKey memory_assignment_key_;
  std::shared_ptr<const void> memory_assignment_;
  Constructions constructions_;
};

}  // namespace spmdsim::passes
