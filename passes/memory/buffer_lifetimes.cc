// What is live at every schedule position: the heap recorder's intervals mapped onto the
// positions of the curve's snapshots, one stay per value holding a buffer's space.
#include <algorithm>
#include <map>
#include <queue>
#include <tuple>

#include "passes/memory/memory_analysis.h"
#include "passes/memory/peak_memory_builder.h"

namespace spmdsim::passes {
namespace memory_internal {
namespace {

// One recorder interval over positions: live at the snapshots first..last.
struct Stay {
  int64_t first = 0;
  int64_t last = 0;
  int64_t start_tick = 0;  // the later start holds the space (as at the peak)
  int32_t interval = 0;
};

// The holder of one space over its positions: at each position, the live stay started last.
// Returns (first, last, interval) runs, consecutive runs of one holder merged.
std::vector<std::tuple<int64_t, int64_t, int32_t>> Holders(std::vector<Stay> stays) {
  std::vector<std::tuple<int64_t, int64_t, int32_t>> runs;
  std::sort(stays.begin(), stays.end(),
            [](const Stay& a, const Stay& b) { return a.first < b.first; });
  std::vector<int64_t> bounds;
  for (const Stay& s : stays) {
    bounds.push_back(s.first);
    bounds.push_back(s.last + 1);
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  const auto later = [&](size_t a, size_t b) { return stays[a].start_tick < stays[b].start_tick; };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> live(later);
  size_t next = 0;
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {
    const int64_t at = bounds[k];
    while (next < stays.size() && stays[next].first <= at) live.push(next++);
    while (!live.empty() && stays[live.top()].last < at) live.pop();
    if (live.empty()) continue;
    const int32_t holder = stays[live.top()].interval;
    const int64_t end = bounds[k + 1] - 1;
    if (!runs.empty() && std::get<2>(runs.back()) == holder && std::get<1>(runs.back()) + 1 == at) {
      std::get<1>(runs.back()) = end;
    } else {
      runs.emplace_back(at, end, holder);
    }
  }
  return runs;
}

}  // namespace

void PeakMemoryBuilder::RecordLifetimes() {
  const int64_t length = lr_.EndTime();
  if (length <= 0 || static_cast<int64_t>(snapshot_tick_.size()) < length) return;
  result_.schedule_instructions.reserve(static_cast<size_t>(length));
  for (int64_t p = 0; p < length; ++p) {
    const HloInstruction* at = lr_.sequence()[static_cast<size_t>(p)];
    result_.schedule_instructions.emplace_back(std::string(at->name),
                                               std::string(at->opcode_name()));
  }
  const auto snapshots_begin = snapshot_tick_.begin();
  const auto snapshots_end = snapshot_tick_.begin() + length;
  std::map<int32_t, std::vector<Stay>> by_space;  // canonical interval -> its stays
  const auto& intervals = recorder_.intervals();
  for (size_t i = 0; i < intervals.size(); ++i) {
    const HeapInterval& interval = intervals[i];
    // Live at a snapshot taken at tick count T when start < T and (end < 0 or end >= T).
    const int64_t first =
        std::upper_bound(snapshots_begin, snapshots_end, interval.start) - snapshots_begin;
    const int64_t last =
        interval.end < 0
            ? length - 1
            : (std::upper_bound(snapshots_begin, snapshots_end, interval.end) - snapshots_begin) -
                  1;
    if (first > last) continue;
    const int32_t canonical = recorder_.CanonicalOf(static_cast<int32_t>(i));
    by_space[canonical].push_back(Stay{first, last, interval.start, static_cast<int32_t>(i)});
  }
  const auto values = static_cast<int32_t>(df_.values().size());
  for (auto& [canonical, stays] : by_space) {
    const int64_t size = intervals[static_cast<size_t>(canonical)].size;
    for (const auto& [first, last, holder] : Holders(std::move(stays))) {
      const int32_t id = intervals[static_cast<size_t>(holder)].buffer;
      result_.lifetimes.push_back(BufferLifetime{
          Describe(id >= values ? id - values : id, size,
                   id >= values ? LiveBufferKind::kTempRecomputed : LiveBufferKind::kTemp),
          first, last});
    }
  }
  // Arguments and outputs are live over the whole schedule.
  for (LiveBuffer& buffer : WholeProgramBuffers()) {
    result_.lifetimes.push_back(BufferLifetime{std::move(buffer), 0, length - 1});
  }
  std::stable_sort(result_.lifetimes.begin(), result_.lifetimes.end(),
                   [](const BufferLifetime& a, const BufferLifetime& b) {
                     if (a.first != b.first) return a.first < b.first;
                     if (a.buffer.size_bytes != b.buffer.size_bytes) {
                       return a.buffer.size_bytes > b.buffer.size_bytes;
                     }
                     return std::tie(a.buffer.instruction, a.buffer.index) <
                            std::tie(b.buffer.instruction, b.buffer.index);
                   });
}

}  // namespace memory_internal

LiveAtPosition LiveAt(const PeakMemoryResult& result, int64_t position) {
  LiveAtPosition out;
  out.position = position;
  if (position >= 0 && static_cast<size_t>(position) < result.schedule_instructions.size()) {
    out.instruction = result.schedule_instructions[static_cast<size_t>(position)].first;
    out.opcode = result.schedule_instructions[static_cast<size_t>(position)].second;
  }
  ir::WideTotal live;
  live.Add(result.argument_bytes);
  live.Add(result.output_bytes);
  live.Subtract(result.alias_bytes);
  live.Add(result.tuple_table_bytes);
  for (const BufferLifetime& stay : result.lifetimes) {
    if (stay.first > position) break;  // sorted by first position
    if (stay.last < position) continue;
    out.buffers.push_back(stay.buffer);
    if (IsTempKind(stay.buffer.kind)) live.Add(stay.buffer.size_bytes);
  }
  out.live_bytes = live.Value();
  std::stable_sort(out.buffers.begin(), out.buffers.end(),
                   [](const LiveBuffer& a, const LiveBuffer& b) {
                     if (a.size_bytes != b.size_bytes) return a.size_bytes > b.size_bytes;
                     return std::tie(a.instruction, a.index) < std::tie(b.instruction, b.index);
                   });
  return out;
}

}  // namespace spmdsim::passes
