// The bits sites of a module grouped by draw pattern, for the report: sites whose op_names differ
// only in their numbers (the block and layer indices of one dropout repeated per block) and that
// agree in kind, mode, phase and per-device shape are one group, named with each varying number
// as its range: ".../Block_0/Dropout_0/..." .. ".../Block_11/Dropout_0/..." ->
// ".../Block_0-11/Dropout_0/...".
#pragma once

#include <string>
#include <vector>

#include "passes/rng/rng_site_analysis.h"

namespace spmdsim::analyzer {

struct RngSiteGroup {
  std::string name;                           // the op_name with its varying numbers as ranges
  std::vector<const passes::RngSite*> sites;  // in the result's order
};

// Bits sites only (SitePurpose::kBits), groups in the order of their first site. The result must
// outlive the groups.
std::vector<RngSiteGroup> GroupRngSites(const passes::RngSiteResult& result);

// "0-11", "0,2,5", "3": the distinct numbers, ascending, runs of consecutive ones as ranges.
std::string NumberRanges(std::vector<long long> numbers);

}  // namespace spmdsim::analyzer
