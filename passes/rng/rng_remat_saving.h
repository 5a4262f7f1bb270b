// What recomputing the random values held across the forward/backward boundary would save at
// the peak. The rng-key-residual findings of passes/rng/rng_site_analysis.h name the buffers that
// are computed from the key before the backward pass starts and read after it; this pass runs
// the memory analysis again with those buffers freed after their last read before the boundary
// and live again only from their first read after it (MemoryAnalysisOptions::recompute_values),
// as if each were recomputed from the key where the backward needs it.
//
//   peak saving (module)   peak as compiled - peak with every residual recomputed
//   saving_bytes (finding) bytes of its buffers live at the compiled peak that the recompute
//                          frees there (freed before the peak's position, recomputed after it)
//
// The recomputation's own transient buffers (the hash's loop state) are not added at the late
// read: the what-if is the ideal remat of the bits, an upper bound of what fixing it saves.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/hlo.h"
#include "passes/memory/memory_analysis.h"
#include "passes/rng/rng_site_analysis.h"

namespace spmdsim::passes {

struct RematSavingResult {
  bool ran = false;        // false: no rng-key-residual finding, nothing to recompute
  int64_t peak_bytes = 0;  // as compiled (the baseline passed in)
  int64_t peak_bytes_recomputed = 0;
  int64_t saving_bytes = 0;  // peak_bytes - peak_bytes_recomputed (>= 0)
  // The fall of the largest sum of live temporaries (no fragmentation): at most what the
  // findings free at the compiled peak's position, where the packed heap's fall may exceed it.
  int64_t live_temp_saving_bytes = 0;
  int64_t peak_time_recomputed = -1;
  std::string peak_instruction_recomputed;
  std::vector<PeakMemoryResult::Recomputed> recomputed;  // the buffers the what-if moved
};

// Updates each rng-key-residual finding's saving_bytes and `rng.remat` in `rng`, and returns the
// module's saving with the buffers it moved.
// `baseline` is AnalyzePeakMemory(module, options) (its live_at_peak need not be complete).
// The what-if re-runs the memory analysis on the same buffers and live ranges (`analyses`).
RematSavingResult EstimateRematSavings(ModuleAnalyses& analyses, const PeakMemoryResult& baseline,
                                       RngSiteResult& rng,
                                       const MemoryAnalysisOptions& options = {});
RematSavingResult EstimateRematSavings(const ir::HloModule& module,
                                       const PeakMemoryResult& baseline, RngSiteResult& rng,
                                       const MemoryAnalysisOptions& options = {});

}  // namespace spmdsim::passes
