#include "analyzer/views/stats_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "analyzer/emit/human_units.h"
#include "analyzer/emit/json_text.h"
#include "analyzer/views/module_heading.h"

namespace spmdsim::analyzer {

nlohmann::ordered_json ModuleIdentityJson(const dump::ModuleInput& input) {
  nlohmann::ordered_json j;
  j["name"] = std::string(input.module->name);
  j["file"] = input.path;
  j["stage"] = dump::ModuleStageName(input.stage);
  return j;
}

void PrintModulesJson(nlohmann::ordered_json modules, std::ostream& out) {
  nlohmann::ordered_json document;
  document["schema_version"] = kSchemaVersion;
  document["modules"] = std::move(modules);
  out << JsonText(document) << "\n";
}

nlohmann::ordered_json StatsToJson(const passes::StatsResult& stats) {
  nlohmann::ordered_json j;
  j["computations"] = stats.computation_count;
  j["instruction_count"] = stats.instruction_count;
  j["instructions_by_opcode"] = stats.instructions_by_opcode;
  j["collectives"] = stats.collectives;
  j["custom_call_targets"] = stats.custom_call_targets;
  j["parameter_count"] = stats.parameter_count;
  j["parameter_bytes"] = stats.parameter_bytes;
  j["output_bytes"] = stats.output_bytes;
  j["is_scheduled"] = stats.is_scheduled;
  j["num_partitions"] = stats.num_partitions;
  j["replica_count"] = stats.replica_count;
  j["devices"] = stats.devices;
  j["devices_from_collectives"] = stats.devices_from_collectives;
  j["warnings"] = stats.warning_count;
  return j;
}

namespace {

std::string JoinCounts(const std::vector<std::pair<std::string, int64_t>>& counts) {
  if (counts.empty()) return "(none)";
  std::string out;
  for (const auto& [name, count] : counts) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", name, count);
  }
  return out;
}

std::vector<std::pair<std::string, int64_t>> ByCountDescending(
    const std::map<std::string, int64_t>& counts, size_t limit) {
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (sorted.size() > limit) sorted.resize(limit);
  return sorted;
}

}  // namespace

void PrintStatsText(const dump::ModuleInput& input, const passes::StatsResult& stats,
                    std::ostream& out) {
  out << ModuleHeading(stats.name, input.stage, input.path);
  out << fmt::format("  stage: {}   scheduled: {}   partitions: {}   replicas: {}\n",
                     dump::ModuleStageName(input.stage), stats.is_scheduled ? "yes" : "no",
                     stats.num_partitions, stats.replica_count);
  if (stats.devices_from_collectives) {
    out << fmt::format(
        "  devices: {} (named by its collectives' ids; the header's replica_count x "
        "num_partitions says {})\n",
        stats.devices, stats.num_partitions * stats.replica_count);
  }
  out << fmt::format("  computations: {}   instructions: {}\n", stats.computation_count,
                     stats.instruction_count);
  out << fmt::format("  parameters: {} ({})   outputs: {}\n", stats.parameter_count,
                     HumanBytes(stats.parameter_bytes), HumanBytes(stats.output_bytes));
  out << "  collectives: " << JoinCounts({stats.collectives.begin(), stats.collectives.end()})
      << "\n";
  out << "  custom calls: "
      << JoinCounts({stats.custom_call_targets.begin(), stats.custom_call_targets.end()}) << "\n";
  const auto top = ByCountDescending(stats.instructions_by_opcode, 8);
  out << "  top opcodes: " << JoinCounts(top)
      << (stats.instructions_by_opcode.size() > top.size() ? ", ..." : "") << "\n";
  if (stats.warning_count > 0) {
    out << fmt::format("  warnings: {} (unknown constructs were skipped; see stderr)\n",
                       stats.warning_count);
  }
}

}  // namespace spmdsim::analyzer
