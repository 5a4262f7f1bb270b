// What is live at any schedule position (`analyze --at`, the report's memory view) against
// XLA's own files, on every after_optimizations dump of testdata/manifest.json:
//  - the live bytes at each point of the memory curve are the curve's (one model, two readings);
//  - at the peak position, the listing is the peak listing, buffer for buffer;
//  - every temporary listed at a position holds a value XLA's live-range file has live there
//    (start <= position <= end), wherever both sides number the schedule alike.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "analyzer/model/module_platform.h"
#include "dump/module_loader.h"
#include "dump/xla_memory_files.h"
#include "passes/memory/memory_analysis.h"
#include "testing/corpus_files.h"
#include "testing/corpus_test.h"

namespace spmdsim::analyzer {
namespace {

std::vector<std::tuple<int64_t, std::string, std::string>> Keys(
    const std::vector<passes::LiveBuffer>& buffers) {
  std::vector<std::tuple<int64_t, std::string, std::string>> keys;
  for (const passes::LiveBuffer& b : buffers)
    keys.emplace_back(b.size_bytes, b.instruction, b.index);
  return keys;
}

SPMDSIM_CORPUS_TEST("what is live at each position is the curve's and XLA's live ranges'",
                    program) {
  const std::string path =
      std::string(SPMDSIM_TESTDATA_DIR) + "/" + program.at("files").at("after").get<std::string>();
  dump::LoadOutcome outcome = dump::LoadInputs(path);
  REQUIRE_FALSE(outcome.failure);
  REQUIRE(outcome.inputs.modules.size() == 1);
  const dump::ModuleInput& input = outcome.inputs.modules[0];
  passes::MemoryAnalysisOptions options;
  options.platform = MemoryProfileOf(input);
  options.record_lifetimes = true;
  const passes::PeakMemoryResult r = passes::AnalyzePeakMemory(*input.module, options);
  REQUIRE(static_cast<int64_t>(r.schedule_instructions.size()) == r.schedule_length);
  REQUIRE_FALSE(r.timeline.empty());
  for (const passes::TimelinePoint& point : r.timeline) {
    const passes::LiveAtPosition at = passes::LiveAt(r, point.time);
    INFO("position " << point.time);
    CHECK(at.live_bytes == point.live_bytes);
    CHECK(at.instruction == point.instruction);
  }
  if (r.peak_time >= 0) {
    CHECK(Keys(passes::LiveAt(r, r.peak_time).buffers) == Keys(r.live_at_peak));
  }
  const nlohmann::json& live_range_file = program.at("files").at("live_range");
  if (!live_range_file.is_string()) return;  // JAX 0.4's XLA writes none
  const dump::XlaLiveRange xla = testing::LoadCorpusLiveRange(live_range_file);
  std::vector<std::string> ours;
  for (const auto& [name, opcode] : r.schedule_instructions) ours.push_back(name);
  if (ours != xla.sequence) return;  // compact dumps: positions not comparable one to one
  int64_t checked = 0;
  for (const passes::TimelinePoint& point : r.timeline) {
    for (const passes::LiveBuffer& b : passes::LiveAt(r, point.time).buffers) {
      if (b.kind != passes::LiveBufferKind::kTemp) continue;
      const auto it = xla.ranges.find(b.instruction + b.index);
      if (it == xla.ranges.end()) continue;
      INFO(b.instruction << b.index << " at position " << point.time << ", XLA's range ["
                         << it->second.start << ", " << it->second.end << "]");
      CHECK(it->second.start <= point.time);
      CHECK(point.time <= it->second.end);
      ++checked;
    }
  }
  CHECK(checked > 0);
}

}  // namespace
}  // namespace spmdsim::analyzer
