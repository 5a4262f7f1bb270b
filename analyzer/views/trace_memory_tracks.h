// The memory side of `report --trace` (trace_writer.h): a second trace process, "memory (per
// device)", with
//   - one counter per category (peak_groups.h's kBufferCategories), the live bytes of that
//     category at every point of the memory curve: Perfetto draws them as stacked-area tracks;
//   - every temporary's stay (passes/memory/memory_analysis.h's BufferLifetime) as a slice on a
//     track of its category, "random bits 1", "random bits 2", ...: a buffer on the first track
//     free over its whole stay, the largest buffers placed first, at most kLanesPerCategory
//     tracks a category (the buffers left over are counted in otherData, not drawn); parameters
//     and outputs, live all along, as one slice each category;
// and, on the device's process, the RNG sites on a track of their own: a slice per bits site at
// its anchor instruction, with its bytes and what-ifs.
// Schedule positions become times through the simulated step (StepTimeline::position_ns).
#pragma once

#include <nlohmann/json.hpp>

#include "analyzer/model/module_report.h"
#include "passes/timeline/step_timeline.h"

namespace spmdsim::analyzer {

inline constexpr int kTraceMemoryPid = 2;
inline constexpr int kTraceRngTid = 3;
inline constexpr int kLanesPerCategory = 96;

// Appends the events to `events` and the figures of what was drawn to `other_data`
// ("memory_slices", "memory_slices_not_drawn"). Needs lifetimes (record_lifetimes); without
// them only the RNG track is added.
void AddMemoryTracks(const ModuleReport& report, const passes::StepTimeline& timeline,
                     nlohmann::ordered_json& events, nlohmann::ordered_json& other_data);

}  // namespace spmdsim::analyzer
