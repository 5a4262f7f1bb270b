// The platform a module was compiled for, as far as its dump tells:
//   - XLA:TPU writes tiled layouts into the entry computation's layout
//     (`entry_computation_layout={(f32[64,256]{0,1:T(8,128)}, ...`), before and after
//     optimizations (its files are named `module_NNNN.NAME.cl_NNN.after_optimizations.txt`); a
//     `*tpu_after_optimizations*` file name is taken as TPU too;
//     libtpu writes the TPU generation into the compile's target arguments beside the module
//     (dump/tpu_target.h);
//   - XLA:GPU and XLA:CPU name their after-optimizations files
//     `module_NNNN.NAME.sm_9.0a_gpu_after_optimizations.txt` (the compute capability) and
//     `module_NNNN.NAME.cpu_after_optimizations.txt`.
//   - without a telling file name, XLA:GPU's own marks in the module (passes/module_facts.h:
//     HasGpuBackendMarks).
// A module before optimizations (`NAME.before_optimizations.txt`) takes the platform its
// optimized files beside it name; alone, or in a file the user renamed, it says nothing: kUnknown.
#pragma once

#include <string>

#include "dump/module_loader.h"
#include "passes/memory/platform_profile.h"
#include "passes/module_analyses.h"

namespace spmdsim::analyzer {

enum class PlatformKind { kUnknown, kCpu, kGpu, kTpu };

struct ModulePlatform {
  PlatformKind kind = PlatformKind::kUnknown;
  // The GPU's compute capability as the file name writes it ("9.0a", "8.0"); empty when not named.
  std::string gpu_arch;
  // The TPU generation its target arguments name ("v5e", "v5p"; dump/tpu_target.h); empty when
  // the dump has no such file (a corpus dump keeps only the module and its companions).
  std::string tpu_generation;
  // "XLA:GPU (sm_9.0a)", "XLA:TPU (v5e)", "XLA:CPU" or "platform not named by the dump".
  std::string Describe() const;
};

// `analyses`: the module's shared analyses, which keep the scan for XLA:GPU's marks (null: scan).
ModulePlatform PlatformOf(const dump::ModuleInput& input,
                          passes::ModuleAnalyses* analyses = nullptr);

// The buffer-assignment rules memory is sized by: the platform the user named (--platform), else
// the one the dump names, else XLA:CPU's (said so in `decided_by`).
passes::PlatformProfile MemoryProfileOf(const dump::ModuleInput& input,
                                        passes::ModuleAnalyses* analyses = nullptr);

}  // namespace spmdsim::analyzer
