// Buffers grouped by size and shape, the view model the text and HTML memory views share for
// "48 x 384.00 MiB u32[128,1024,768]" summaries and the HTML group table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "passes/memory/memory_analysis.h"

namespace spmdsim::analyzer {

struct BufferGroup {
  int64_t size_bytes = 0;
  std::string shape;
  int64_t count = 0;
  std::set<std::string> op_names;
};

// The groups that add up to most first (saturating), ties by larger buffers, then by shape.
std::vector<BufferGroup> GroupBuffers(const std::vector<passes::LiveBuffer>& buffers);

// "3 x 1.00 MiB f32[512,512], 2 x ...": the first `limit` groups, ", ..." when there are more.
// Not escaped.
std::string GroupSummary(const std::vector<BufferGroup>& groups, size_t limit);

}  // namespace spmdsim::analyzer
