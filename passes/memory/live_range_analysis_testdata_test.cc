// The flattened schedule and every value's live range against XLA's own HloLiveRange, which
// XLA wrote beside each after_optimizations dump (*-live-range.txt).
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "passes/memory/live_range_analysis.h"
#include "testing/corpus_files.h"
#include "testing/corpus_test.h"

namespace spmdsim::passes {
namespace {

// A compact dump (`%t#3`, XLA's default since JAX 0.12) does not print its get-tuple-elements,
// so where XLA scheduled them is not in the text: positions are compared as ranks among the
// instructions both sequences hold, and tuple-shaped values (whose ends are get-tuple-element
// reads) only where the dump prints every instruction.
SPMDSIM_CORPUS_TEST("live ranges equal XLA's HloLiveRange on every dump", program) {
  const std::string name = program.at("name");
  // The ground truth is XLA's live-range file (JAX 0.4's XLA writes none).
  const bool has_live_range_file = program.at("files").at("live_range").is_string();
  REQUIRE(has_live_range_file);
  const std::unique_ptr<ir::HloModule> loaded =
      testing::LoadCorpusModule(program.at("files").at("after"));
  const ir::HloModule& module = *loaded;
  const dump::XlaLiveRange xla = testing::LoadCorpusLiveRange(program.at("files").at("live_range"));

  const DataflowAnalysis df = DataflowAnalysis::Run(module);
  const AliasAnalysis alias = AliasAnalysis::Run(df);
  const LiveRangeAnalysis lr = LiveRangeAnalysis::Run(df, alias);
  CHECK(lr.EndTime() == xla.max_time);
  REQUIRE(lr.sequence().size() == xla.sequence.size());
  std::map<std::string, bool> named;  // ours, by name: printed (true) or an implicit gte
  bool compact = false;
  for (const ir::HloInstruction* instr : lr.sequence()) {
    named[std::string(instr->name)] = !instr->implicit;
    compact |= instr->implicit;
  }
  // Rank of each position among the instructions printed on both sides; the end is one past.
  const auto ranks = [&](const auto& names_at) {
    std::vector<int64_t> rank(names_at.size() + 1, 0);
    int64_t k = 0;
    for (size_t t = 0; t < names_at.size(); ++t) {
      rank[t] = k;
      const auto it = named.find(names_at[t]);
      if (it != named.end() && it->second) ++k;
    }
    rank[names_at.size()] = k;
    return rank;
  };
  std::vector<std::string> ours_names;
  for (const ir::HloInstruction* instr : lr.sequence()) ours_names.emplace_back(instr->name);
  const std::vector<int64_t> xla_rank = ranks(xla.sequence);
  const std::vector<int64_t> ours_rank = ranks(ours_names);
  // The printed instructions come in XLA's order.
  std::vector<std::string> xla_printed;
  std::vector<std::string> ours_printed;
  for (const std::string& n : xla.sequence) {
    const auto it = named.find(n);
    if (it != named.end() && it->second) xla_printed.push_back(n);
  }
  for (const ir::HloInstruction* instr : lr.sequence()) {
    if (!instr->implicit) ours_printed.emplace_back(instr->name);
  }
  CHECK(ours_printed == xla_printed);
  const auto rank_at = [](const std::vector<int64_t>& rank, int64_t t) {
    return t >= 0 && static_cast<size_t>(t) < rank.size() ? rank[static_cast<size_t>(t)] : -1;
  };
  int mismatches = 0;
  int compared = 0;
  for (const HloValue& value : df.values()) {
    if (!lr.HasRange(value.id)) continue;
    if (compact && df.SlotShape(value.slot).IsTuple()) continue;
    const std::string key =
        std::string(value.instruction->name) + ShapeIndexToString(df.SlotIndex(value.slot));
    const auto it = xla.ranges.find(key);
    if (it == xla.ranges.end()) {
      if (++mismatches <= 5) FAIL_CHECK("value " << key << " is not in XLA's file");
      continue;
    }
    ++compared;
    const TimeBound& ours = lr.Range(value.id);
    if (rank_at(ours_rank, ours.start) != rank_at(xla_rank, it->second.start) ||
        rank_at(ours_rank, ours.end) != rank_at(xla_rank, it->second.end)) {
      if (++mismatches <= 5) {
        FAIL_CHECK("value " << key << ": ours [" << ours.start << ", " << ours.end << "], XLA's ["
                            << it->second.start << ", " << it->second.end << "]");
      }
    }
  }
  CHECK(compared > 0);
  if (!compact) CHECK(static_cast<size_t>(compared) == xla.ranges.size());
  CHECK(mismatches == 0);
}

}  // namespace
}  // namespace spmdsim::passes
