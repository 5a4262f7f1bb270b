// Exact sizes and categories of the buffers of an OOM listing (analyzer/model/oom_report.h).
//
// XLA prints sizes through HumanReadableNumBytes: whole units truncated, then two decimals
// ("4.89GiB", one for KiB: "38.7KiB"); XLA:TPU the same figures with "G", "M", "K". A figure is
// therefore only good to half its last digit plus one unit of the truncation below it, e.g.
// "4.89GiB" is 5,250,597,519 B +- 6.4 MB, while f32[5104,257152] is exactly 5,250,015,232 B.
#pragma once

#include <cstdint>
#include <string_view>

#include "analyzer/model/oom_report.h"

namespace spmdsim::analyzer {

// How far the exact size may be from what the rounded `text` reads as (0 for whole bytes, "16B").
int64_t RoundingSlack(std::string_view text);

// Sets each buffer's listed_size_bytes, shape_bytes, size_bytes and size_from, and the report's
// total_bytes: the shape's exact bytes where they agree with the listed size within its rounding.
void ResolveOomSizes(OomReport& report);

// Sets each buffer's category and the report's categories (after ClassifyOomRandomBuffers).
// Outputs are told from temporaries by the stats' "maybe_live_out allocation": the fewest
// non-parameter buffers whose exact sizes add up to it within its rounding (XLA:TPU: its
// "Allocation type"; an "Output size 0B" says none is an output).
void CategorizeOomBuffers(OomReport& report);

}  // namespace spmdsim::analyzer
