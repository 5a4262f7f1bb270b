// The platform a module was compiled for, as far as its dump tells:
//   - XLA:TPU writes tiled layouts into the entry computation's layout
//     (`entry_computation_layout={(f32[64,256]{0,1:T(8,128)}, ...`), before and after
//     optimizations (its files are named `module_NNNN.NAME.cl_NNN.after_optimizations.txt`); a
//     `*tpu_after_optimizations*` file name is taken as TPU too;
//   - XLA:GPU and XLA:CPU name their after-optimizations files
//     `module_NNNN.NAME.sm_9.0a_gpu_after_optimizations.txt` (the compute capability) and
//     `module_NNNN.NAME.cpu_after_optimizations.txt`.
// A GPU or CPU module before optimizations (`NAME.before_optimizations.txt`), or a file the user
// renamed, says nothing: kUnknown.
#pragma once

#include <string>

#include "dump/module_loader.h"

namespace spmdsim::analyzer {

enum class PlatformKind { kUnknown, kCpu, kGpu, kTpu };

struct ModulePlatform {
  PlatformKind kind = PlatformKind::kUnknown;
  // The GPU's compute capability as the file name writes it ("9.0a", "8.0"); empty when not named.
  std::string gpu_arch;
  // "XLA:GPU (sm_9.0a)", "XLA:TPU", "XLA:CPU" or "platform not named by the dump".
  std::string Describe() const;
};

ModulePlatform PlatformOf(const dump::ModuleInput& input);

}  // namespace spmdsim::analyzer
