#include "passes/memory/allocation_timeline.h"

#include <algorithm>
#include <climits>

namespace spmdsim::passes {

bool AllocationTimeline::StrictlyOverlaps(const TimeBound& range) const {
  auto it = hull_.lower_bound({range.end, INT64_MIN});
  if (it == hull_.begin()) return false;
  --it;
  return it->second > range.start;
}

void AllocationTimeline::Add(int32_t value_id, const TimeBound& range) {
  starts_.emplace(range.start, value_id);
  ends_.emplace(range.end, value_id);
  if (range.start == range.end) {
    // A point inside an interval's interior adds nothing to the union's interior.
    if (StrictlyOverlaps(range)) return;
    hull_.insert({range.start, range.end});
    return;
  }
  int64_t start = range.start;
  int64_t end = range.end;
  auto it = hull_.lower_bound({start, INT64_MIN});
  if (it != hull_.begin()) {
    const auto before = std::prev(it);
    if (before->second > start) it = before;  // reaches into the new range
  }
  // Everything starting before the new end meets the new interior, but a point at its start.
  while (it != hull_.end() && it->first < end) {
    if (it->first == it->second && it->first == range.start && it->first == start) {
      ++it;
      continue;
    }
    start = std::min(start, it->first);
    end = std::max(end, it->second);
    it = hull_.erase(it);
  }
  hull_.insert({start, end});
}

}  // namespace spmdsim::passes
