// The memory curve of the HTML report as an inline SVG: live bytes per device over the positions
// of the flattened schedule (PeakMemoryResult::timeline, each point the maximum of its stretch),
// drawn as a filled step line, with the position where the curve is highest marked and a dashed
// line at the predicted peak (which adds what heap packing loses, so it can sit above the curve).
//
// Sample output (shortened):
//   <svg class="curve" viewBox="0 0 860 260" width="860" height="260" role="img"
//        aria-label="memory curve: ...">
//     <path class="area" d="M70.0,230.0 L70.0,118.2 ..."/>
//     <line class="peak" .../><text ...>peak 2.84 MiB</text>
//     <circle class="max" .../><text ...>max 2.71 MiB at 1530: fusion.12</text>
//     <text ...>0</text> ... (axis labels)
//   </svg>
// Instruction names come from the dump and go through HtmlEscape. No xmlns: the SVG is inline in
// HTML, which needs none, and the page stays free of URLs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "passes/memory/memory_analysis.h"

namespace spmdsim::analyzer {

struct MemoryCurveOptions {
  int width = 860;   // pixels, axes included
  int height = 260;  // pixels, axes included
  // The predicted peak (argument + output - alias + temp), drawn as a dashed line; 0 = none.
  int64_t peak_bytes = 0;
  // Positions of the schedule: the x axis runs over 0..schedule_length-1.
  int64_t schedule_length = 0;
};

// An empty string for an empty timeline.
std::string MemoryCurveSvg(const std::vector<passes::TimelinePoint>& timeline,
                           const MemoryCurveOptions& options);

}  // namespace spmdsim::analyzer
