#include "analyzer/views/trace_memory_tracks.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "analyzer/emit/human_units.h"
#include "analyzer/emit/utf8.h"
#include "analyzer/model/peak_groups.h"
#include "analyzer/model/random_bit_values.h"
#include "ir/checked_math.h"

namespace spmdsim::analyzer {
namespace {

constexpr size_t kCategories = std::size(kBufferCategories);
constexpr size_t kMaxTextChars = 512;

double Micros(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

std::string Cut(const std::string& text) {
  if (text.size() <= kMaxTextChars) return text;
  return std::string(Utf8Prefix(text, kMaxTextChars)) + "...";
}

size_t CategoryIndex(const std::string& category) {
  for (size_t c = 0; c < kCategories; ++c) {
    if (category == kBufferCategories[c]) return c;
  }
  return kCategories - 1;
}

// The time the walk reaches each position, never decreasing; one more entry: the step's end.
std::vector<int64_t> PositionTimes(const passes::PeakMemoryResult& m,
                                   const passes::StepTimeline& timeline) {
  std::vector<int64_t> times;
  times.reserve(m.schedule_instructions.size() + 1);
  int64_t last = 0;
  for (const auto& [name, opcode] : m.schedule_instructions) {
    const auto it = timeline.position_ns.find(name);
    if (it != timeline.position_ns.end()) last = std::max(last, it->second);
    times.push_back(last);
  }
  times.push_back(std::max(last, timeline.step_ns));
  return times;
}

// Interval tracks: each holds stays that do not overlap (by position).
class Lanes {
 public:
  // The first lane free over [first, last], or -1 when all kLanesPerCategory are taken there.
  int Place(int64_t first, int64_t last) {
    for (size_t k = 0; k < lanes_.size(); ++k) {
      std::map<int64_t, int64_t>& lane = lanes_[k];
      auto next = lane.lower_bound(first);
      if (next != lane.end() && next->first <= last) continue;
      if (next != lane.begin() && std::prev(next)->second >= first) continue;
      lane.emplace(first, last);
      return static_cast<int>(k);
    }
    if (lanes_.size() == static_cast<size_t>(kLanesPerCategory)) return -1;
    lanes_.emplace_back().emplace(first, last);
    return static_cast<int>(lanes_.size()) - 1;
  }

 private:
  std::vector<std::map<int64_t, int64_t>> lanes_;
};

int LaneTid(size_t category, int lane) { return 100 + static_cast<int>(category) * 100 + lane; }

nlohmann::ordered_json Meta(const char* name, int pid, int tid, nlohmann::ordered_json args) {
  return {{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

void RngTrack(const ModuleReport& report, const passes::StepTimeline& timeline,
              nlohmann::ordered_json& events) {
  std::map<std::string_view, int64_t> duration;
  for (const passes::StepSlice& slice : timeline.slices) {
    duration[slice.instruction->name] = slice.duration_ns;
  }
  bool any = false;
  for (const passes::RngSite& site : report.rng.sites) {
    if (site.purpose != passes::SitePurpose::kBits) continue;
    const auto at = timeline.position_ns.find(site.name);
    if (at == timeline.position_ns.end()) continue;
    const auto took = duration.find(site.name);
    any = true;
    events.push_back(
        {{"name", site.name},
         {"cat", "rng"},
         {"ph", "X"},
         {"ts", Micros(took == duration.end() ? at->second : at->second - took->second)},
         {"dur", Micros(took == duration.end() ? 0 : took->second)},
         {"pid", 1},
         {"tid", kTraceRngTid},
         {"args",
          {{"kind", passes::SiteKindName(site.kind)},
           {"mode", passes::SiteModeName(site.mode)},
           {"phase", passes::SitePhaseName(site.phase)},
           {"materialized_bytes", site.materialized_bytes},
           {"wire_bytes_per_device", site.wire_bytes_per_device},
           {"whatif_replicated_bytes", site.whatif.replicated.memory_bytes},
           {"whatif_partitionable_bytes", site.whatif.partitionable.memory_bytes},
           {"op_name", Cut(site.op_name)},
           {"source", site.source}}}});
  }
  if (any) {
    events.push_back(Meta("thread_name", 1, kTraceRngTid, {{"name", "rng sites"}}));
    events.push_back(Meta("thread_sort_index", 1, kTraceRngTid, {{"sort_index", 3}}));
  }
}

}  // namespace

void AddMemoryTracks(const ModuleReport& report, const passes::StepTimeline& timeline,
                     nlohmann::ordered_json& events, nlohmann::ordered_json& other_data) {
  RngTrack(report, timeline, events);
  const passes::PeakMemoryResult& m = report.memory.prediction;
  if (m.schedule_instructions.empty()) return;
  const std::vector<int64_t> times = PositionTimes(m, timeline);
  const auto positions = static_cast<int64_t>(m.schedule_instructions.size());
  const RandomBitValues random(report.rng);
  events.push_back(Meta("process_name", kTraceMemoryPid, 0,
                        {{"name", "memory (per device): buffers by category"}}));
  events.push_back(Meta("process_sort_index", kTraceMemoryPid, 0, {{"sort_index", 2}}));

  // Per category, the live bytes at every position (prefix sums over the stays).
  std::vector<std::vector<int64_t>> live(kCategories, std::vector<int64_t>(positions + 1, 0));
  struct Stay {
    const passes::BufferLifetime* stay;
    size_t category;
  };
  std::vector<Stay> temps;
  std::vector<int64_t> whole_bytes(kCategories, 0);
  std::vector<int64_t> whole_count(kCategories, 0);
  for (const passes::BufferLifetime& stay : m.lifetimes) {
    const size_t c = CategoryIndex(BufferCategory(stay.buffer, random));
    const int64_t first = std::clamp<int64_t>(stay.first, 0, positions - 1);
    const int64_t last = std::clamp<int64_t>(stay.last, first, positions - 1);
    live[c][first] = ir::SaturatingAdd(live[c][first], stay.buffer.size_bytes);
    live[c][last + 1] = ir::SaturatingSub(live[c][last + 1], stay.buffer.size_bytes);
    if (passes::IsTempKind(stay.buffer.kind)) {
      temps.push_back({&stay, c});
    } else {
      whole_bytes[c] = ir::SaturatingAdd(whole_bytes[c], stay.buffer.size_bytes);
      ++whole_count[c];
    }
  }
  const size_t other = CategoryIndex("other temp");
  for (size_t c = 0; c < kCategories; ++c) {
    int64_t running = 0;
    for (int64_t p = 0; p < positions; ++p) {
      running = ir::SaturatingAdd(running, live[c][static_cast<size_t>(p)]);
      live[c][static_cast<size_t>(p)] = running;
    }
  }
  // The counters, at the curve's points: tuple tables count as other temp (as on the page).
  for (const passes::TimelinePoint& point : m.timeline) {
    if (point.time < 0 || point.time >= positions) continue;
    for (size_t c = 0; c < kCategories; ++c) {
      int64_t bytes = live[c][static_cast<size_t>(point.time)];
      if (c == other) bytes = ir::SaturatingAdd(bytes, m.tuple_table_bytes);
      events.push_back({{"name", std::string("memory: ") + kBufferCategories[c]},
                        {"ph", "C"},
                        {"ts", Micros(times[static_cast<size_t>(point.time)])},
                        {"pid", kTraceMemoryPid},
                        {"tid", 0},
                        {"args", {{"bytes", bytes}}}});
    }
  }
  // Parameters and outputs: live all along, one slice each.
  for (size_t c = 0; c < kCategories; ++c) {
    if (whole_count[c] == 0) continue;
    const int tid = LaneTid(c, 0);
    events.push_back(Meta("thread_name", kTraceMemoryPid, tid, {{"name", kBufferCategories[c]}}));
    events.push_back(Meta("thread_sort_index", kTraceMemoryPid, tid, {{"sort_index", tid}}));
    events.push_back({{"name", fmt::format("{} {}, {}", whole_count[c], kBufferCategories[c],
                                           HumanBytes(whole_bytes[c]))},
                      {"cat", kBufferCategories[c]},
                      {"ph", "X"},
                      {"ts", 0.0},
                      {"dur", Micros(times.back())},
                      {"pid", kTraceMemoryPid},
                      {"tid", tid},
                      {"args", {{"bytes", whole_bytes[c]}, {"buffers", whole_count[c]}}}});
  }
  // Temporaries: the largest placed first, each on the first track of its category free.
  std::stable_sort(temps.begin(), temps.end(), [](const Stay& a, const Stay& b) {
    return a.stay->buffer.size_bytes > b.stay->buffer.size_bytes;
  });
  std::vector<Lanes> lanes(kCategories);
  std::vector<int> lanes_named(kCategories, 0);
  int64_t drawn = 0;
  int64_t not_drawn = 0;
  for (const Stay& t : temps) {
    const passes::BufferLifetime& stay = *t.stay;
    const int lane = lanes[t.category].Place(stay.first, stay.last);
    if (lane < 0) {
      ++not_drawn;
      continue;
    }
    ++drawn;
    const int tid = LaneTid(t.category, 1 + lane);
    while (lanes_named[t.category] <= lane) {
      const int named = LaneTid(t.category, 1 + lanes_named[t.category]++);
      events.push_back(Meta("thread_name", kTraceMemoryPid, named,
                            {{"name", fmt::format("{} {}", kBufferCategories[t.category],
                                                  lanes_named[t.category])}}));
      events.push_back(Meta("thread_sort_index", kTraceMemoryPid, named, {{"sort_index", named}}));
    }
    const passes::LiveBuffer& b = stay.buffer;
    const int64_t start = times[static_cast<size_t>(stay.first)];
    const int64_t end = times[static_cast<size_t>(std::min(stay.last + 1, positions))];
    events.push_back({{"name", fmt::format("{} {}", b.shape, HumanBytes(b.size_bytes))},
                      {"cat", kBufferCategories[t.category]},
                      {"ph", "X"},
                      {"ts", Micros(start)},
                      {"dur", Micros(std::max<int64_t>(0, end - start))},
                      {"pid", kTraceMemoryPid},
                      {"tid", tid},
                      {"args",
                       {{"bytes", b.size_bytes},
                        {"instruction", b.instruction + (b.index == "{}" ? "" : b.index)},
                        {"first_position", stay.first},
                        {"last_position", stay.last},
                        {"kind", passes::LiveBufferKindName(b.kind)},
                        {"op_name", Cut(b.op_name)},
                        {"source", b.source}}}});
  }
  other_data["memory_slices"] = drawn;
  other_data["memory_slices_not_drawn"] = not_drawn;
}

}  // namespace spmdsim::analyzer
