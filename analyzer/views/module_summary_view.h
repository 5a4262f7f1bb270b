// The one-screen summary `analyze` prints before the details when it reads several modules (a
// dump folder): each module's peak, whether it fits its device, the best fix where it does not,
// and the largest buffer live at its peak; the module with the largest peak is marked.
//
// Sample (testdata/dumps/jax012_gpu8_seed_flax_dp_partitionable_kernel_remat, columns trimmed):
//   3 modules; the largest peak is jit_train_step's (after optimizations): 114.17 GiB per device
//       module          stage    peak/device  fits                            best fix
//     * jit_train_step  after     114.17 GiB  no: over 54.43 GiB (H100 80GB)  fused -> 113.41 GiB
//       jit_train_step  unknown   114.67 GiB  no verdict                      -
//       jit_train_step  before    167.15 GiB  no: over 107.42 GiB (H100 80GB) replicated -> ...
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/model/device_memory.h"
#include "analyzer/model/fit_fixes.h"

namespace spmdsim::analyzer {

struct ModuleSummaryRow {
  std::string module;
  std::string stage;  // dump::ModuleStageName
  int64_t peak_bytes = 0;
  std::optional<FitVerdict> fit;   // nullopt: not judged (another memory space)
  std::optional<FitFix> best_fix;  // the first ranked fix, for a step that does not fit
  std::string largest_shape;       // the largest buffer live at the peak ("" if none)
  int64_t largest_bytes = 0;
};

// Nothing for fewer than two rows.
void PrintModuleSummary(const std::vector<ModuleSummaryRow>& rows, std::ostream& out);

}  // namespace spmdsim::analyzer
