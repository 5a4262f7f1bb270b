// libFuzzer target over every analysis the commands run on a module, on modules parsed from
// fuzzed HLO text (tools/fuzz.sh --target analyses). Per module that parses:
//   - stats (passes::ComputeStats), as `stats` runs it;
//   - memory, piece by piece (buffer dataflow -> alias -> live ranges -> sharding sizes) and as
//     `analyze` runs it (AnalyzePeakMemory with the command's defaults: per device from the
//     shardings for a module not partitioned yet), then as written and with placements recorded;
//   - collectives with and without a two-level topology (`collectives`), the trip counts and
//     execution counts it derives, and for every module (the command predicts for any module it
//     reads from a before_optimizations file) sharding propagation, the predicted collectives and
//     their comparison with the collectives written in the module;
//   - RNG sites with the collectives (as module_report.cc runs them) and without (`rng sites`),
//     and the remat what-if of both (passes::EstimateRematSavings, as `rng sites` and
//     module_report.cc call it).
// Inputs that do not parse are rejected right after the parser; the work an accepted module
// costs is bounded by the fuzz input's size (tools/fuzz.sh: -max_len) and by kMaxInputBytes, and
// a module whose call sites expand past testing::kMaxCallSiteInstructions (slow by design: sharding
// propagation walks every call site, testing/fuzz_budget.h) is skipped.
//
// A finding is a sanitizer report (ASan/UBSan), a crash, a timeout or an OOM. Build and run with
// tools/fuzz.sh --target analyses; replay with `build-fuzz/passes/analyses_fuzzer FILE`.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ir/parser.h"
#include "passes/collectives/collective_analysis.h"
#include "passes/collectives/collective_prediction.h"
#include "passes/collectives/topology.h"
#include "passes/memory/buffer_alias_analysis.h"
#include "passes/memory/buffer_dataflow_analysis.h"
#include "passes/memory/live_range_analysis.h"
#include "passes/memory/memory_analysis.h"
#include "passes/memory/sharding_sizes.h"
#include "passes/module_facts.h"
#include "passes/rng/rng_remat_saving.h"
#include "passes/rng/rng_site_analysis.h"
#include "passes/sharding/mesh_sharding.h"
#include "passes/sharding/sharding_propagation.h"
#include "passes/stats_analysis.h"
#include "testing/fuzz_budget.h"

namespace spmdsim {
namespace {

// Larger inputs are not analysed: tools/fuzz.sh caps inputs at 16 KiB; this guards a corpus
// replayed with a larger -max_len from spending the time limit on one big module.
constexpr size_t kMaxInputBytes = 64 * 1024;

// Keeps a computed value alive without doing arithmetic on it (sizes may be near INT64_MAX).
void Use(int64_t value) {
  static volatile uint64_t sink = 0;
  sink = sink ^ static_cast<uint64_t>(value);
}
void Use(double value) {
  static volatile double sink = 0;
  sink = sink + value;
}

// Two link classes, so that collective times take both the intra- and the inter-node path.
const passes::Topology& TwoLevelTopology() {
  static const passes::Topology topology = [] {
    passes::Topology t;
    t.name = "fuzz-2-level";
    t.devices_per_node = 8;
    t.intra_node = {"nvlink", 3.0, 360.0};
    t.inter_node = passes::LinkClass{"ib", 10.0, 45.0};
    return t;
  }();
  return topology;
}

// The memory analysis's pieces, as AnalyzePeakMemory chains them (memory_analysis.cc).
void RunMemoryPieces(const ir::HloModule& module) {
  const passes::DataflowAnalysis dataflow = passes::DataflowAnalysis::Run(module);
  Use(static_cast<int64_t>(dataflow.values().size()));
  for (const passes::HloValue& value : dataflow.values()) {
    Use(static_cast<int64_t>(dataflow.ValueName(value).size()));
  }
  const passes::AliasAnalysis alias = passes::AliasAnalysis::Run(dataflow);
  Use(static_cast<int64_t>(alias.buffers().size()));
  const passes::LiveRangeAnalysis live = passes::LiveRangeAnalysis::Run(dataflow, alias);
  Use(live.EndTime());
  const passes::ShardingSizes sizes = passes::ShardingSizes::Compute(dataflow, live.sequence());
  for (const ir::HloInstruction* instruction : live.sequence()) {
    const int32_t slot = dataflow.FirstSlot(instruction);
    if (slot >= 0) Use(sizes.SlotBytes(slot));
  }
}

void Summarize(const passes::PeakMemoryResult& r) {
  Use(r.peak_bytes);
  Use(r.temp_bytes);
  Use(r.peak_time);
  Use(static_cast<int64_t>(r.live_at_peak.size() + r.timeline.size() + r.placements.size()));
}

void AnalyzeModule(const ir::HloModule& module) {
  Use(passes::ComputeStats(module).instruction_count);

  // Memory: the pieces, then as `analyze` runs it, then the other sizing and the placements.
  RunMemoryPieces(module);
  const bool unpartitioned = passes::IsUnpartitioned(module);
  passes::MemoryAnalysisOptions memory;
  memory.per_device_from_shardings = unpartitioned;
  const passes::PeakMemoryResult peak = passes::AnalyzePeakMemory(module, memory);
  Summarize(peak);
  passes::MemoryAnalysisOptions other = memory;
  other.per_device_from_shardings = !unpartitioned;
  other.record_placements = true;
  other.timeline_points = 1;
  other.live_at_peak_limit = 1;
  Summarize(passes::AnalyzePeakMemory(module, other));
  // Every platform's rules, and another memory space reported, on shared analyses.
  passes::ModuleAnalyses analyses(module);
  for (const passes::Platform platform :
       {passes::Platform::kCpu, passes::Platform::kGpu, passes::Platform::kTpu}) {
    passes::MemoryAnalysisOptions sized = memory;
    sized.platform = passes::PlatformProfile::For(platform);
    sized.timeline_points = 4;
    Summarize(passes::AnalyzePeakMemory(analyses, sized));
    sized.memory_space = 1;
    Summarize(passes::AnalyzePeakMemory(analyses, sized));
  }

  // Collectives, with and without a topology; the loop counts they derive.
  const passes::CollectiveResult plain = passes::AnalyzeCollectives(module);
  passes::CollectiveOptions timed;
  timed.topology = &TwoLevelTopology();
  const passes::CollectiveResult collectives = passes::AnalyzeCollectives(module, timed);
  Use(plain.total_wire_bytes_per_device);
  Use(collectives.est_time_us);
  for (const auto& [computation, count] : passes::ComputationExecutionCounts(module).runs) {
    Use(count);
  }
  for (const ir::HloComputation* computation : module.computations) {
    for (const ir::HloInstruction* instruction : computation->instructions) {
      if (instruction->opcode == ir::Opcode::kWhile) Use(passes::WhileTripCount(*instruction));
    }
  }

  // What the SPMD partitioner is predicted to insert (the command predicts for any module read
  // from a before_optimizations file), and the comparison with what is written.
  Use(passes::ModuleMesh(module).DeviceCount());
  const passes::ShardingPropagationResult propagation = passes::PropagateShardings(module);
  Use(static_cast<int64_t>(propagation.needs.size()));
  const passes::CollectivePrediction prediction = passes::PredictCollectives(module);
  const passes::PredictionComparison comparison = passes::ComparePrediction(prediction, plain);
  Use(comparison.predicted_total_wire_bytes);

  // RNG sites, with the collectives (module_report.cc) and without (`rng sites`), and the remat
  // what-if of each, as the two callers run it.
  passes::RngSiteOptions rng_options;
  rng_options.collectives = &collectives;
  passes::RngSiteResult rng = passes::AnalyzeRngSites(module, rng_options);
  Use(passes::EstimateRematSavings(module, peak, rng, memory).saving_bytes);
  passes::RngSiteResult sites = passes::AnalyzeRngSites(module);
  bool residuals = false;
  for (const passes::RngFinding& f : sites.findings)
    residuals |= f.kind == passes::FindingKind::kRngKeyResidual;
  if (residuals) {
    passes::MemoryAnalysisOptions remat;
    remat.per_device_from_shardings = unpartitioned;
    remat.timeline_points = 1;
    remat.live_at_peak_limit = 1;
    const passes::PeakMemoryResult baseline = passes::AnalyzePeakMemory(module, remat);
    Use(passes::EstimateRematSavings(module, baseline, sites, remat).saving_bytes);
  }
  Use(sites.totals.materialized_bytes);
}

}  // namespace
}  // namespace spmdsim

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > spmdsim::kMaxInputBytes) return -1;  // not added to the corpus
  auto source = std::make_shared<spmdsim::ir::SourceBuffer>(
      "fuzz.hlo", std::string(reinterpret_cast<const char*>(data), size));
  const spmdsim::ir::ParseResult parsed = spmdsim::ir::ParseHloText(source);
  if (!parsed.ok()) return -1;  // the parser fuzzer covers what does not parse
  for (const auto& module : parsed.modules) {
    // Slow by design (testing/fuzz_budget.h), not analysed.
    if (spmdsim::testing::CallSiteInstructionCount(*module) >
        spmdsim::testing::kMaxCallSiteInstructions) {
      return -1;
    }
  }
  for (const auto& module : parsed.modules) spmdsim::AnalyzeModule(*module);
  return 0;
}
