#include "analyzer/views/module_heading.h"

#include <fmt/format.h>

namespace spmdsim::analyzer {

std::string ModuleHeading(std::string_view name, std::string_view stage, std::string_view path) {
  std::string_view what;
  if (stage == "after_optimizations") {
    what = ", after optimizations";
  } else if (stage == "before_optimizations") {
    what =
        ", before optimizations: an estimate (per-device sizes from the shardings, before XLA's "
        "passes; the after-optimizations module is what runs)";
  }
  return fmt::format("module {}{}  ({})\n", name, what, path);
}

}  // namespace spmdsim::analyzer
