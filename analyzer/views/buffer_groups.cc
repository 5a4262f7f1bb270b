#include "analyzer/views/buffer_groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "analyzer/emit/human_units.h"
#include "ir/checked_math.h"

namespace spmdsim::analyzer {

std::vector<BufferGroup> GroupBuffers(const std::vector<passes::LiveBuffer>& buffers) {
  // Keyed by (size, shape): the map's order makes the final tie-break the shape.
  std::map<std::pair<int64_t, std::string>, BufferGroup> groups;
  for (const passes::LiveBuffer& b : buffers) {
    BufferGroup& g = groups[{b.size_bytes, b.shape}];
    g.size_bytes = b.size_bytes;
    g.shape = b.shape;
    ++g.count;
    g.op_names.insert(b.op_name);
  }
  std::vector<BufferGroup> sorted;
  sorted.reserve(groups.size());
  for (auto& [key, group] : groups) sorted.push_back(std::move(group));
  std::stable_sort(sorted.begin(), sorted.end(), [](const BufferGroup& a, const BufferGroup& b) {
    const int64_t ta = ir::SaturatingMul(a.size_bytes, a.count);
    const int64_t tb = ir::SaturatingMul(b.size_bytes, b.count);
    if (ta != tb) return ta > tb;
    return a.size_bytes > b.size_bytes;
  });
  return sorted;
}

std::string GroupSummary(const std::vector<BufferGroup>& groups, size_t limit) {
  std::string out;
  for (size_t i = 0; i < groups.size() && i < limit; ++i) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} x {} {}", groups[i].count, HumanBytes(groups[i].size_bytes),
                       groups[i].shape);
  }
  if (groups.size() > limit) out += ", ...";
  return out;
}

}  // namespace spmdsim::analyzer
