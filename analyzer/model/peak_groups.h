// The buffers live at a module's peak, grouped so that two compiles of one program can be compared
// (the baseline of `check`): by category, op_name and shape, because instruction names change
// between compiles while what a buffer holds and where it comes from do not (as module_diff.h
// groups them).
//
// Categories: "random bits" (a value an RNG site's buffers hold: counters, bits, masks made with
// the hash; random_bit_values.h), "parameters" (entry parameters, donated or not), "outputs",
// "collective buffers" (a collective's result), "other temp" (the rest: activations, gradients,
// optimizer temporaries).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "passes/memory/memory_analysis.h"
#include "passes/rng/rng_site_analysis.h"

namespace spmdsim::analyzer {

// The categories, in the order the report stacks them.
inline constexpr const char* kBufferCategories[] = {"parameters", "outputs", "collective buffers",
                                                    "other temp", "random bits"};

class RandomBitValues;
// The category of one listed buffer (the module's random-bit values from random_bit_values.h).
std::string BufferCategory(const passes::LiveBuffer& buffer, const RandomBitValues& random);

struct PeakGroup {
  std::string category;
  std::string op_name;
  std::string shape;
  std::string source;  // "file.py:76" of the group's largest buffer; "" when unknown
  int64_t buffers = 0;
  int64_t bytes = 0;
};

struct PeakComposition {
  std::map<std::string, int64_t> bytes_by_category;  // every buffer live at the peak
  std::vector<PeakGroup> groups;                     // largest first, at most kPeakGroupsKept
};

// Groups a baseline keeps per module: the largest, which hold any growth that matters.
inline constexpr size_t kPeakGroupsKept = 64;

// `memory.live_at_peak` must be the whole listing (live_at_peak_limit 0) for the totals to be.
PeakComposition ComposePeak(const passes::PeakMemoryResult& memory,
                            const passes::RngSiteResult& rng);

// What grew at the peak from `before` to `now`, largest growth first: one line per group that
// grew, "random bits +48.00 MiB: 12 new u32[8,256,256] (op_name)", with the group's source.
struct PeakGrowth {
  std::string category;
  int64_t category_change = 0;  // of the whole category
  PeakGroup group;              // now's group (or the baseline's, when it only shrank: never)
  int64_t change_bytes = 0;     // of the group
  int64_t new_buffers = 0;      // buffers now less buffers before (>= 0 when it grew by count)
  std::string Text() const;
};
std::vector<PeakGrowth> PeakGrowthOf(const PeakComposition& before, const PeakComposition& now,
                                     size_t limit = 3);

}  // namespace spmdsim::analyzer
