// The peak per device another way of generating the random bits would give: each random-bits
// site's buffers take the size that lowering materializes for them (passes/rng/rng_whatif.h, the
// model `rng sites` prints per site), and the memory analysis packs the temporaries again on the
// same schedule and live ranges (MemoryAnalysisOptions::resized_values). The peak is XLA's sum,
// argument + output - alias + temp, with the heap re-packed: not random-bit bytes subtracted.
//
// What it does not model: a lowering's different schedule and fusion (the buffers keep the
// compile's live ranges), and buffers the other lowering would add where this compile has none
// (a site fused into its consumers materializes 0 B here: its buffers cannot grow, and
// `sites_not_sized` counts such sites; the peak is then a lower bound).
#pragma once

#include <cstdint>
#include <string>

#include "passes/memory/memory_analysis.h"
#include "passes/module_analyses.h"
#include "passes/rng/rng_site_analysis.h"

namespace spmdsim::passes {

struct ModePeakWhatIf {
  std::string mode;  // "replicated" | "partitionable" | "rbg" | "fused" (rng_whatif.h's names)
  bool ran = false;  // false: no bits site is drawn another way now
  int64_t peak_bytes = 0;       // with each site at its cheaper lowering's bytes
  int64_t peak_high_bytes = 0;  // with the bounded sites at the dearer one's (= peak_bytes else)
  int64_t sites_resized = 0;
  int64_t sites_not_sized = 0;  // sites with no buffer here that the mode would materialize
  int64_t bits_bytes_now = 0;   // what the resized sites materialize as compiled
  int64_t bits_bytes_after = 0;
  int64_t wire_bytes_per_device = 0;  // what the sites would send under the mode, per step
};

// `options`: the baseline's memory options (platform, sizes). `mode` one of the four names.
ModePeakWhatIf EstimateModePeak(ModuleAnalyses& analyses, const RngSiteResult& rng,
                                const MemoryAnalysisOptions& options, const std::string& mode);

}  // namespace spmdsim::passes
