#include "passes/rng/rng_remat_saving.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "ir/checked_math.h"

namespace spmdsim::passes {

namespace {

// Instructions that read after the backward pass started: at or after each computation's
// backward_start in a scheduled module, else backward-pass instructions by op_name.
std::unordered_set<const ir::HloInstruction*> LateReaders(const ir::HloModule& module,
                                                          const RngSiteResult& rng) {
  std::unordered_set<const ir::HloInstruction*> late;
  for (const ir::HloComputation* computation : module.computations) {
    const auto start = rng.backward_start.find(std::string(computation->name));
    bool after = false;
    for (const ir::HloInstruction* instr : computation->instructions) {
      if (start != rng.backward_start.end()) {
        after |= instr->name == start->second;
      } else if (!module.is_scheduled) {
        after = RngPhase(instr->metadata().op_name) == SitePhase::kBackward;
      }
      if (after) late.insert(instr);
    }
  }
  return late;
}

}  // namespace

RematSavingResult EstimateRematSavings(const ir::HloModule& module,
                                       const PeakMemoryResult& baseline, RngSiteResult& rng,
                                       const MemoryAnalysisOptions& options) {
  ModuleAnalyses analyses(module);
  return EstimateRematSavings(analyses, baseline, rng, options);
}

RematSavingResult EstimateRematSavings(ModuleAnalyses& analyses, const PeakMemoryResult& baseline,
                                       RngSiteResult& rng, const MemoryAnalysisOptions& options) {
  const ir::HloModule& module = analyses.module();
  RematSavingResult result;
  result.peak_bytes = baseline.peak_bytes;
  result.peak_bytes_recomputed = baseline.peak_bytes;
  MemoryAnalysisOptions whatif = options;
  whatif.live_at_peak_limit = 1;
  whatif.timeline_points = 1;
  whatif.record_placements = false;
  for (const RngFinding& f : rng.findings) {
    if (f.kind == FindingKind::kRngKeyResidual)
      whatif.recompute_values.insert(f.values.begin(), f.values.end());
  }
  if (whatif.recompute_values.empty()) return result;
  const std::unordered_set<const ir::HloInstruction*> late = LateReaders(module, rng);
  whatif.late_reader = [&late](const ir::HloInstruction& instr) { return late.count(&instr) != 0; };
  const PeakMemoryResult recomputed = AnalyzePeakMemory(analyses, whatif);
  result.ran = true;
  result.peak_bytes_recomputed = recomputed.peak_bytes;
  result.saving_bytes = std::max<int64_t>(0, baseline.peak_bytes - recomputed.peak_bytes);
  result.live_temp_saving_bytes =
      std::max<int64_t>(0, baseline.max_live_temp_bytes - recomputed.max_live_temp_bytes);
  result.peak_time_recomputed = recomputed.peak_time;
  result.peak_instruction_recomputed = recomputed.peak_instruction;
  result.recomputed = recomputed.recomputed;

  rng.remat.ran = true;
  rng.remat.peak_bytes = result.peak_bytes;
  rng.remat.peak_bytes_recomputed = result.peak_bytes_recomputed;
  rng.remat.saving_bytes = result.saving_bytes;
  rng.remat.buffers = static_cast<int64_t>(result.recomputed.size());
  rng.remat.peak_instruction_recomputed = result.peak_instruction_recomputed;

  // Per finding: its buffers that the recompute frees at the compiled peak's position.
  std::map<std::string, int64_t> freed_at_peak;
  for (const PeakMemoryResult::Recomputed& r : result.recomputed) {
    if (r.freed_after < baseline.peak_time && baseline.peak_time < r.recomputed_at) {
      freed_at_peak[r.value] = ir::SaturatingAdd(freed_at_peak[r.value], r.bytes);
    }
  }
  for (RngFinding& f : rng.findings) {
    if (f.kind != FindingKind::kRngKeyResidual) continue;
    f.saving_bytes = 0;
    for (const std::string& value : f.values) {
      const auto it = freed_at_peak.find(value);
      if (it != freed_at_peak.end()) f.saving_bytes = ir::SaturatingAdd(f.saving_bytes, it->second);
    }
  }
  return result;
}

}  // namespace spmdsim::passes
