// The first line every text view prints for a module: its name, its stage and its file. A module
// before optimizations is said to be an estimate on that line, not only at the end: its sizes
// come from shardings before XLA's passes, while the after-optimizations module is what runs.
#pragma once

#include <string>
#include <string_view>

#include "dump/file_names.h"

namespace spmdsim::analyzer {

// "module jit_step, after optimizations  (dump/module_0000.jit_step.cpu_after_optimizations.txt)"
std::string ModuleHeading(std::string_view name, dump::ModuleStage stage, std::string_view path);

}  // namespace spmdsim::analyzer
