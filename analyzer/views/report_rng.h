// The report page's RNG sections (docs/REPORT_PAGE.md): the bits sites grouped by draw pattern
// (analyzer/model/rng_site_groups.h), one sortable, filterable row per group that opens onto its
// sites, each with its what-if per mode; and the findings, each a closed <details> that opens
// onto its message, site, source line and a link to where its buffers are live on the memory
// curve.
#pragma once

#include <cstddef>
#include <string>

#include "passes/memory/memory_analysis.h"
#include "passes/rng/rng_site_analysis.h"

namespace spmdsim::analyzer {

void RngSitesHtml(const passes::RngSiteResult& rng, size_t module_number, size_t max_rows,
                  std::string& out);
// `memory` recorded with record_lifetimes: a finding's values are found there for its link.
void FindingsHtml(const passes::RngSiteResult& rng, const passes::PeakMemoryResult& memory,
                  size_t module_number, size_t max_rows, std::string& out);

}  // namespace spmdsim::analyzer
