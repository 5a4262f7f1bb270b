#include "analyzer/views/module_heading.h"

#include <fmt/format.h>

namespace spmdsim::analyzer {

std::string ModuleHeading(std::string_view name, dump::ModuleStage stage, std::string_view path) {
  std::string_view what;
  if (stage == dump::ModuleStage::kAfterOptimizations) {
    what = ", after optimizations";
  } else if (stage == dump::ModuleStage::kBeforeOptimizations) {
    what =
        ", before optimizations: an estimate (per-device sizes from the shardings, before XLA's "
        "passes; the after-optimizations module is what runs)";
  }
  return fmt::format("module {}{}  ({})\n", name, what, path);
}

}  // namespace spmdsim::analyzer
