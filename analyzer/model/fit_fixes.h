// The fixes for a step that does not fit, ranked by the peak per device each gives: every fix is
// the module changed as the fix would change it and the same buffer assignment and heap packing
// run again (passes/memory/memory_analysis.h), never random-bit bytes added or subtracted.
//
//   remat-random-bits    recompute the random bits held from the forward into the backward
//                        (rng-key-residual findings) where the backward reads them: those buffers
//                        freed after their last forward read and live again from their first
//                        backward read (passes/rng/rng_remat_saving.h). Cost: the hash again.
//   offload-random-bits  the same buffers sent to host memory after the forward and back before
//                        the backward: the same device peak, paid in host-link traffic.
//   <mode>               another way of drawing the bits (jax_threefry_partitionable, the rbg
//                        PRNG, or on XLA:GPU a fused kernel of one's own: rng_whatif.h's "fused",
//                        not jax_threefry_gpu_kernel_lowering, which the model does not predict):
//                        each bits site's buffers take the size
//                        that lowering materializes, on the same schedule
//                        (passes/rng/rng_mode_peak.h). Cost: the collectives it would send; it
//                        also changes the random bits themselves.
//   mem-fraction         GPU: a larger XLA_PYTHON_CLIENT_MEM_FRACTION, when one up to 1 holds
//                        the peak as it is.
// Ranked: the fixes that fit first, then by the peak they give (lowest first); at equal peaks in
// the order above (recomputing before moving bytes to the host).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/model/device_memory.h"
#include "passes/memory/memory_analysis.h"
#include "passes/module_analyses.h"
#include "passes/rng/rng_site_analysis.h"

namespace spmdsim::analyzer {

struct FitFix {
  std::string fix;     // "remat-random-bits", "offload-random-bits", "replicated", ...
  std::string action;  // what the user changes, in words
  int64_t peak_bytes = 0;
  // The dearer lowering's peak where the model bounds the mode (rbg); = peak_bytes otherwise.
  int64_t peak_high_bytes = 0;
  std::optional<bool> fits;           // against the verdict's device; nullopt without one
  int64_t wire_bytes_per_device = 0;  // collectives the fix would send per step (modes)
  int64_t host_bytes_per_step = 0;    // offload: bytes over the host link per step
  std::string cost;                   // what it costs, in words
  std::string basis;                  // how the peak was obtained, and what it leaves out
};

// The ranked fixes, and how much of the peak the random bits are: where none of the fixes fits,
// the peak is made of something else.
struct FitFixes {
  std::vector<FitFix> ranked;
  int64_t peak_bytes = 0;
  // Bytes of the random-bits sites' buffers among those live at the peak (the baseline's
  // live_at_peak listing: complete when its limit is 0).
  int64_t random_bits_at_peak_bytes = 0;
};

struct FitFixInputs {
  const passes::RngSiteResult* rng = nullptr;
  const passes::PeakMemoryResult* baseline = nullptr;
  const passes::MemoryAnalysisOptions* memory = nullptr;  // the baseline's sizing
  bool gpu = false;  // the module runs on XLA:GPU (the threefry kernel lowering applies)
};

// Every fix that changes the peak or the device's share, ranked (header comment).
FitFixes RankFitFixes(passes::ModuleAnalyses& analyses, const FitVerdict& verdict,
                      const FitFixInputs& inputs);

}  // namespace spmdsim::analyzer
