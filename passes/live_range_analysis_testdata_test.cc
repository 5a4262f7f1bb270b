// The flattened schedule and every value's live range against XLA's own HloLiveRange, which
// XLA wrote beside each after_optimizations dump (*-live-range.txt).
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "passes/live_range_analysis.h"
#include "testing/corpus_files.h"
#include "testing/corpus_test.h"

namespace spmdsim::passes {
namespace {

SPMDSIM_CORPUS_TEST("live ranges equal XLA's HloLiveRange on every dump", program) {
  const std::string name = program.at("name");
  const std::unique_ptr<ir::HloModule> loaded =
      testing::LoadCorpusModule(program.at("files").at("after"));
  const ir::HloModule& module = *loaded;
  const dump::XlaLiveRange xla = testing::LoadCorpusLiveRange(program.at("files").at("live_range"));

  const DataflowAnalysis df = DataflowAnalysis::Run(module);
  const AliasAnalysis alias = AliasAnalysis::Run(df);
  const LiveRangeAnalysis lr = LiveRangeAnalysis::Run(df, alias);
  CHECK(lr.EndTime() == xla.max_time);
  REQUIRE(lr.sequence().size() == xla.sequence.size());
  for (size_t t = 0; t < xla.sequence.size(); ++t) {
    const ir::HloInstruction& at = *lr.sequence()[t];
    // A compact dump ("%t#3") does not print its get-tuple-elements' names; XLA's file does.
    if (at.implicit && xla.sequence[t].starts_with("get-tuple-element")) continue;
    if (at.name != xla.sequence[t]) {
      FAIL_CHECK("position " << t << ": " << lr.sequence()[t]->name << " vs XLA's "
                             << xla.sequence[t]);
      break;
    }
  }
  std::map<std::string, dump::XlaLiveRange::Range> ours;
  for (const HloValue& value : df.values()) {
    if (!lr.HasRange(value.id)) continue;
    const std::string key =
        std::string(value.instruction->name) + ShapeIndexToString(df.SlotIndex(value.slot));
    ours[key] = {lr.Range(value.id).start, lr.Range(value.id).end};
  }
  CHECK(ours.size() == xla.ranges.size());
  int mismatches = 0;
  for (const auto& [key, range] : xla.ranges) {
    auto it = ours.find(key);
    if (it == ours.end() || it->second.start != range.start || it->second.end != range.end) {
      if (++mismatches <= 5) FAIL_CHECK("value " << key << " differs from XLA's");
    }
  }
  CHECK(mismatches == 0);
}

}  // namespace
}  // namespace spmdsim::passes
