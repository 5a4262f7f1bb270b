// Pairs the modules of two runs: `check` pairs the modules analysed now with the baseline's,
// `diff` the modules of A with those of B. A dump directory holds a before_optimizations and an
// after_optimizations module of the same name, so modules are matched by (name, stage); when one
// side has several modules of the same (name, stage), the first pairs with the first, and so on.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace spmdsim::analyzer {

struct ModuleKey {
  std::string name;
  std::string stage;
};

// One module of A, of B, or of both.
struct ModulePair {
  std::optional<size_t> a;  // index into A
  std::optional<size_t> b;  // index into B
};

struct MatchOptions {
  // After matching by (name, stage), pair the modules still alone by name only (two single files
  // of different stages, e.g. a before_optimizations file against an after_optimizations one).
  bool fall_back_to_name = false;
};

// Every module of A in A's order (with its partner in B, if any), then B's modules left alone, in
// B's order.
std::vector<ModulePair> MatchModules(const std::vector<ModuleKey>& a,
                                     const std::vector<ModuleKey>& b,
                                     const MatchOptions& options = {});

}  // namespace spmdsim::analyzer
