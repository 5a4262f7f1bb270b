#include "analyzer/model/finding_scope.h"

#include <vector>

#include "passes/rng/rng_site_analysis.h"

namespace spmdsim::analyzer {
namespace {

// Splits at '/' outside parentheses: "jit(f)/a(b/c)/d" -> "jit(f)", "a(b/c)", "d".
std::vector<std::string_view> Components(std::string_view path) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '(') ++depth;
    if (path[i] == ')' && depth > 0) --depth;
    if (path[i] == '/' && depth == 0) {
      parts.push_back(path.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(path.substr(start));
  return parts;
}

}  // namespace

std::string FindingScope(std::string_view op_name) {
  if (op_name.empty()) return "";
  const std::string full = passes::RngScope(op_name);  // the parts below point into it
  const std::vector<std::string_view> parts = Components(full);
  // A transformation restarts the path below it: under remat the backward's op_name is
  // "transpose(jvp(M))/block_0/jvp(M)/block_0/checkpoint/rematted_computation/dropout", so the
  // scope is what follows the last transformation.
  size_t first = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].find('(') != std::string_view::npos) first = i + 1;
  }
  std::string scope;
  for (size_t i = first; i < parts.size(); ++i) {
    // jax.checkpoint's own name-stack entries (jax/_src/ad_checkpoint.py).
    if (parts[i].empty() || parts[i] == "checkpoint" || parts[i] == "rematted_computation") {
      continue;
    }
    scope += (scope.empty() ? "" : "/") + std::string(parts[i]);
  }
  return scope;
}

}  // namespace spmdsim::analyzer
