// `spmdsim report`'s page: one self-contained HTML file (inline CSS and SVG, no script, no URL)
// rendering the ModuleReport of each module (analyzer/model/module_report.h), the same figures
// `analyze`, `collectives` and `rng sites` print. Per module:
//   summary      peak per device = argument + output - alias + temp, collectives and wire bytes
//                per step, RNG sites, findings
//   memory       spmdsim's terms beside XLA's (memory_analysis.json / buffer assignment), the
//                memory curve (svg_chart.h), the buffers live at the peak: the largest groups of
//                one size and shape, then up to `max_rows` buffers, the rest summarised
//   collectives  per kind, then per op (most traffic first)
//   rng          every bits site with its what-if per mode, findings, and a paragraph on tied
//                versus independent noise
// Every string from a dump goes through HtmlEscape (html_escape.h); exact byte counts sit in
// title attributes beside the human sizes. The output depends only on the reports: no time
// stamps, no pointer order.
//
// Sample (shortened):
//   <section class="module" id="module-1"><h2>jit_train_step <span class="stage">
//   after_optimizations</span></h2> ... <tr><th>peak per device</th><td><strong>2.84 MiB</strong>
//   <span class="exact">2979384 bytes</span> = argument 1.52 MiB + output ...
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "analyzer/model/module_report.h"

namespace spmdsim::analyzer {

struct HtmlReportOptions {
  // Rows of each long table (live buffers, collectives, RNG sites); the rest are summarised.
  size_t max_rows = 200;
  // Groups of the live-at-peak summary ("48 x 384.00 MiB u32[128,1024,768]").
  size_t max_groups = 16;
  // The topology collective times were estimated on; empty = none.
  std::string topology;
  // The trace written beside the report, named in the page; empty = none.
  std::string trace_path;
};

std::string RenderHtmlReport(const std::vector<ModuleReport>& reports,
                             const HtmlReportOptions& options);

}  // namespace spmdsim::analyzer
