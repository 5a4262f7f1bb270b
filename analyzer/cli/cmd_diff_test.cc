// Runs the built `spmdsim diff` (SPMDSIM_BINARY) on the partitionable and replicated threefry
// dumps of the same program: the collective bytes by kind against `spmdsim collectives`, the peak
// against XLA's memory_analysis.json, the RNG sites and findings against `spmdsim rng sites`, the
// live-at-peak groups against `spmdsim analyze`.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "analyzer/test_support.h"

namespace spmdsim::analyzer {
namespace {

using nlohmann::json;
using test::RunOutput;
using test::RunSpmdsim;

const std::string kDumps = std::string(SPMDSIM_TESTDATA_DIR) + "/dumps/";
const std::string kPartitionable = kDumps + "dp8_partitionable_remat";
const std::string kReplicated = kDumps + "dp8_replicated_remat";

json RunJson(const std::string& args) {
  const RunOutput run = RunSpmdsim(args);
  REQUIRE(run.exit_code == 0);
  return json::parse(run.out);
}

json ModuleOfStage(const json& out, const std::string& stage) {
  for (const json& m : out.at("modules")) {
    if (m.at("stage") == stage) return m;
  }
  FAIL("no module of stage " << stage);
  return json();
}

json DiffOfStage(const json& out, const std::string& stage) {
  for (const json& m : out.at("modules")) {
    if (m.at("a").at("stage") == stage) return m;
  }
  FAIL("no diff of stage " << stage);
  return json();
}

// XLA's peak, argument + output - alias + temp, from memory_analysis.json.
int64_t XlaPeak(const std::string& dump) {
  std::ifstream in(dump + "/memory_analysis.json");
  REQUIRE(in.good());
  const json m = json::parse(in);
  return m.at("argument_size_in_bytes").get<int64_t>() +
         m.at("output_size_in_bytes").get<int64_t>() - m.at("alias_size_in_bytes").get<int64_t>() +
         m.at("temp_size_in_bytes").get<int64_t>();
}

// Two string fields of a JSON object, as a map key.
std::pair<std::string, std::string> Key(const json& j, const char* first, const char* second) {
  return {j.at(first).get<std::string>(), j.at(second).get<std::string>()};
}

void CheckDelta(const json& delta, int64_t a, int64_t b) {
  CHECK(delta.at("a") == a);
  CHECK(delta.at("b") == b);
  CHECK(delta.at("change") == b - a);
}

TEST_CASE("diff partitionable -> replicated threefry: memory and collectives") {
  const json out = RunJson("diff " + kPartitionable + " " + kReplicated + " --format json");
  CHECK(out.at("schema_version") == 1);
  REQUIRE(out.at("modules").size() == 2);  // a dump directory: both stages, paired by stage
  for (const json& m : out.at("modules")) {
    CHECK(m.at("name") == "jit_train_step");
    CHECK(m.at("a").at("stage") == m.at("b").at("stage"));
    CHECK(m.at("a").at("file").get<std::string>().find("partitionable") != std::string::npos);
    CHECK(m.at("b").at("file").get<std::string>().find("replicated") != std::string::npos);
  }
  const json diff = DiffOfStage(out, "after_optimizations").at("diff");

  const int64_t peak_a = XlaPeak(kPartitionable);
  const int64_t peak_b = XlaPeak(kReplicated);
  CheckDelta(diff.at("memory").at("peak_bytes"), peak_a, peak_b);
  CHECK(diff.at("memory").at("peak_bytes").at("change") == peak_b - peak_a);

  const json ca =
      ModuleOfStage(RunJson("collectives --format json " + kPartitionable), "after_optimizations")
          .at("collectives");
  const json cb =
      ModuleOfStage(RunJson("collectives --format json " + kReplicated), "after_optimizations")
          .at("collectives");
  CheckDelta(diff.at("collectives").at("total_wire_bytes_per_device"),
             ca.at("total_wire_bytes_per_device"), cb.at("total_wire_bytes_per_device"));
  std::set<std::string> kinds;
  for (const auto& [kind, totals] : ca.at("by_kind").items()) kinds.insert(kind);
  for (const auto& [kind, totals] : cb.at("by_kind").items()) kinds.insert(kind);
  REQUIRE(diff.at("collectives").at("by_kind").size() == kinds.size());
  for (const json& k : diff.at("collectives").at("by_kind")) {
    const std::string kind = k.at("kind");
    INFO(kind);
    const json zero = {{"count", 0}, {"executions", 0}, {"wire_bytes_per_device", 0}};
    const json& ka = ca.at("by_kind").contains(kind) ? ca.at("by_kind").at(kind) : zero;
    const json& kb = cb.at("by_kind").contains(kind) ? cb.at("by_kind").at(kind) : zero;
    CheckDelta(k.at("wire_bytes_per_device"), ka.at("wire_bytes_per_device"),
               kb.at("wire_bytes_per_device"));
    CheckDelta(k.at("ops"), ka.at("count"), kb.at("count"));
    CheckDelta(k.at("runs"), ka.at("executions"), kb.at("executions"));
  }
  // The trade this pair shows: replicated threefry costs memory and collective bytes.
  CHECK(peak_b > peak_a);
  CHECK(cb.at("total_wire_bytes_per_device") > ca.at("total_wire_bytes_per_device"));

  const RunOutput text = RunSpmdsim("diff " + kPartitionable + " " + kReplicated);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("B vs A: peak memory +") != std::string::npos);
  CHECK(text.out.find(", collectives +") != std::string::npos);
  CHECK(text.out.find("all-gather") != std::string::npos);
}

TEST_CASE("diff: RNG sites and findings against rng sites; live-at-peak groups against analyze") {
  const json out = RunJson("diff " + kPartitionable + " " + kReplicated + " --format json --top 3");
  const json diff = DiffOfStage(out, "after_optimizations").at("diff");
  const json ra =
      ModuleOfStage(RunJson("rng sites --format json " + kPartitionable), "after_optimizations");
  const json rb =
      ModuleOfStage(RunJson("rng sites --format json " + kReplicated), "after_optimizations");

  const json& rng = diff.at("rng");
  CheckDelta(rng.at("materialized_bytes"), ra.at("rng").at("totals").at("materialized_bytes"),
             rb.at("rng").at("totals").at("materialized_bytes"));
  CheckDelta(rng.at("sites"), ra.at("rng").at("totals").at("sites"),
             rb.at("rng").at("totals").at("sites"));
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> by_mode_kind;
  for (const json& site : ra.at("rng").at("sites")) ++by_mode_kind[Key(site, "mode", "kind")].first;
  for (const json& site : rb.at("rng").at("sites"))
    ++by_mode_kind[Key(site, "mode", "kind")].second;
  REQUIRE(rng.at("by_mode_kind").size() == by_mode_kind.size());
  for (const json& g : rng.at("by_mode_kind")) {
    const auto counts = by_mode_kind.at(Key(g, "mode", "kind"));
    CheckDelta(g.at("sites"), counts.first, counts.second);
  }

  const auto keys = [](const json& findings) {
    std::set<std::pair<std::string, std::string>> set;
    for (const json& f : findings) set.insert(Key(f, "kind", "op_name"));
    return set;
  };
  const auto in_a = keys(ra.at("findings"));
  const auto in_b = keys(rb.at("findings"));
  std::set<std::pair<std::string, std::string>> added;
  std::set<std::pair<std::string, std::string>> removed;
  for (const auto& key : in_b) {
    if (!in_a.count(key)) added.insert(key);
  }
  for (const auto& key : in_a) {
    if (!in_b.count(key)) removed.insert(key);
  }
  CHECK(keys(rng.at("findings_added")) == added);
  CHECK(keys(rng.at("findings_removed")) == removed);
  CHECK(!added.empty());  // replicated threefry's collectives are findings

  // Live at the peak, grouped by (op_name, shape) from `analyze`'s listing.
  const auto groups = [](const std::string& dump) {
    std::map<std::pair<std::string, std::string>, int64_t> bytes;
    const json m = ModuleOfStage(RunJson("analyze --format json --timeline-points 1 " + dump),
                                 "after_optimizations");
    for (const json& b : m.at("memory").at("live_at_peak")) {
      bytes[Key(b, "op_name", "shape")] += b.at("size_bytes").get<int64_t>();
    }
    return bytes;
  };
  const auto ga = groups(kPartitionable);
  const auto gb = groups(kReplicated);
  int64_t appeared = 0;
  int64_t disappeared = 0;
  int64_t changed = 0;
  int64_t unchanged = 0;
  for (const auto& [key, bytes] : gb) {
    if (!ga.count(key)) ++appeared;
  }
  for (const auto& [key, bytes] : ga) {
    if (!gb.count(key)) {
      ++disappeared;
    } else if (gb.at(key) != bytes) {
      ++changed;
    } else {
      ++unchanged;
    }
  }
  const json& live = diff.at("live_at_peak");
  CHECK(live.at("appeared").at("groups") == appeared);
  CHECK(live.at("disappeared").at("groups") == disappeared);
  CHECK(live.at("changed").at("groups") == changed);
  CHECK(live.at("unchanged_groups") == unchanged);
  for (const char* category : {"appeared", "disappeared", "changed"}) {
    const json& c = live.at(category);
    CHECK(c.at("top").size() <= 3);
    CHECK(c.at("more").get<int64_t>() ==
          c.at("groups").get<int64_t>() - static_cast<int64_t>(c.at("top").size()));
    int64_t previous = INT64_MAX;
    for (const json& g : c.at("top")) {
      const auto key = Key(g, "op_name", "shape");
      CheckDelta(g.at("bytes"), ga.count(key) ? ga.at(key) : 0, gb.count(key) ? gb.at(key) : 0);
      const int64_t magnitude = std::abs(g.at("bytes").at("change").get<int64_t>());
      CHECK(magnitude <= previous);  // largest change first
      previous = magnitude;
    }
  }
}

TEST_CASE("diff: a file against itself changes nothing; a missing path is exit 2") {
  const std::string file =
      kPartitionable + "/module_0000.jit_train_step.cpu_after_optimizations.txt.gz";
  const json out = RunJson("diff " + file + " " + file + " --format json");
  REQUIRE(out.at("modules").size() == 1);
  const json& diff = out.at("modules")[0].at("diff");
  CHECK(diff.at("memory").at("peak_bytes").at("change") == 0);
  CHECK(diff.at("collectives").at("total_wire_bytes_per_device").at("change") == 0);
  CHECK(diff.at("live_at_peak").at("appeared").at("groups") == 0);
  CHECK(diff.at("rng").at("findings_added").empty());
  CHECK(RunSpmdsim("diff " + file + " " + kDumps + "no_such_dump").exit_code == 2);
  CHECK(RunSpmdsim("diff " + file).exit_code == 2);
}

}  // namespace
}  // namespace spmdsim::analyzer
