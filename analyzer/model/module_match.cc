#include "analyzer/model/module_match.h"

namespace spmdsim::analyzer {
namespace {

// Pairs each unpaired module of A with the first unpaired module of B for which `same` holds.
template <typename Same>
void PairUp(const std::vector<ModuleKey>& a, const std::vector<ModuleKey>& b,
            std::vector<std::optional<size_t>>& partner_of_a, std::vector<bool>& b_taken,
            Same same) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (partner_of_a[i]) continue;
    for (size_t j = 0; j < b.size(); ++j) {
      if (b_taken[j] || !same(a[i], b[j])) continue;
      partner_of_a[i] = j;
      b_taken[j] = true;
      break;
    }
  }
}

}  // namespace

std::vector<ModulePair> MatchModules(const std::vector<ModuleKey>& a,
                                     const std::vector<ModuleKey>& b, const MatchOptions& options) {
  std::vector<std::optional<size_t>> partner_of_a(a.size());
  std::vector<bool> b_taken(b.size(), false);
  PairUp(a, b, partner_of_a, b_taken, [](const ModuleKey& x, const ModuleKey& y) {
    return x.name == y.name && x.stage == y.stage;
  });
  if (options.fall_back_to_name) {
    PairUp(a, b, partner_of_a, b_taken,
           [](const ModuleKey& x, const ModuleKey& y) { return x.name == y.name; });
  }
  std::vector<ModulePair> pairs;
  for (size_t i = 0; i < a.size(); ++i) pairs.push_back({i, partner_of_a[i]});
  for (size_t j = 0; j < b.size(); ++j) {
    if (!b_taken[j]) pairs.push_back({std::nullopt, j});
  }
  return pairs;
}

}  // namespace spmdsim::analyzer
