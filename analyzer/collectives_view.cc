#include "analyzer/collectives_view.h"

#include <fmt/format.h>

#include <algorithm>

#include "analyzer/human_units.h"

namespace spmdsim::analyzer {

namespace {

std::string TimeText(double us) {
  if (us >= 1e6) return fmt::format("{:.2f} s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:.2f} ms", us / 1e3);
  return fmt::format("{:.1f} us", us);
}

}  // namespace

nlohmann::ordered_json CollectivesToJson(const passes::CollectiveResult& result) {
  nlohmann::ordered_json j;
  j["num_devices"] = result.num_devices;
  j["topology"] = result.topology;
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const passes::CollectiveOp& op : result.ops) {
    nlohmann::ordered_json o;
    o["instruction"] = op.instruction;
    o["kind"] = op.kind;
    o["opcode"] = op.opcode;
    o["computation"] = op.computation;
    o["id_kind"] = op.id_kind;
    o["group_size"] = op.group_size;
    o["groups"] = op.groups;
    o["mesh_axes"] = op.mesh_axes;
    o["operand_count"] = op.operand_count;
    o["bytes"] = op.bytes;
    o["algorithm"] = op.algorithm;
    o["wire_bytes_per_device"] = op.wire_bytes_per_device;
    o["intra_node_bytes"] = op.intra_node_bytes;
    o["inter_node_bytes"] = op.inter_node_bytes;
    o["spans_nodes"] = op.spans_nodes;
    o["est_time_us"] = op.est_time_us;
    o["loop_multiplier"] = op.loop_multiplier;
    o["trip_count_known"] = op.trip_count_known;
    o["op_name"] = op.op_name;
    o["source"] = op.source;
    ops.push_back(std::move(o));
  }
  j["ops"] = std::move(ops);
  j["total_wire_bytes_per_device"] = result.total_wire_bytes_per_device;
  j["intra_node_bytes_per_device"] = result.total_intra_node_bytes;
  j["inter_node_bytes_per_device"] = result.total_inter_node_bytes;
  nlohmann::ordered_json by_kind = nlohmann::ordered_json::object();
  for (const auto& [kind, totals] : result.by_kind) {
    by_kind[kind] = {{"count", totals.count},
                     {"executions", totals.executions},
                     {"wire_bytes_per_device", totals.wire_bytes_per_device},
                     {"est_time_us", totals.est_time_us}};
  }
  j["by_kind"] = std::move(by_kind);
  j["est_time_us"] = result.est_time_us;
  j["notes"] = result.notes;
  return j;
}

void PrintCollectivesText(const ModuleInput& input, const passes::CollectiveResult& result,
                          std::ostream& out, const CollectivesTextOptions& options) {
  int64_t runs = 0;
  for (const auto& [kind, totals] : result.by_kind) runs += totals.executions;
  out << fmt::format("module {}  ({})\n", input.module->name, input.path);
  out << fmt::format("  collectives: {} ops, {} runs per step, {} devices, topology {}\n",
                     result.ops.size(), runs, result.num_devices,
                     result.topology.empty() ? "(none: bytes only)" : result.topology);
  out << fmt::format("  per step and device: {} on the wire (intra-node {}, inter-node {}), ~{}\n",
                     HumanBytes(result.total_wire_bytes_per_device),
                     HumanBytes(result.total_intra_node_bytes),
                     HumanBytes(result.total_inter_node_bytes), TimeText(result.est_time_us));
  if (result.ops.empty()) return;
  out << fmt::format("  {:<22} {:>5} {:>6} {:>13} {:>11}\n", "kind", "ops", "runs", "wire/device",
                     "est. time");
  for (const auto& [kind, totals] : result.by_kind) {
    out << fmt::format("  {:<22} {:>5} {:>6} {:>13} {:>11}\n", kind, totals.count,
                       totals.executions, HumanBytes(totals.wire_bytes_per_device),
                       TimeText(totals.est_time_us));
  }
  std::vector<const passes::CollectiveOp*> sorted;
  for (const passes::CollectiveOp& op : result.ops) sorted.push_back(&op);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
    return a->wire_bytes_per_device * a->loop_multiplier >
           b->wire_bytes_per_device * b->loop_multiplier;
  });
  const size_t shown =
      options.max_ops == 0 ? sorted.size() : std::min(options.max_ops, sorted.size());
  out << fmt::format("  {:<24} {:<19} {:>3} {:<22} {:>11} {:>11} {:>4} {:>10}  {}\n", "instruction",
                     "kind", "n", "groups span", "B", "wire/dev", "runs", "time/run", "source");
  for (size_t i = 0; i < shown; ++i) {
    const passes::CollectiveOp& op = *sorted[i];
    const std::string kind = op.operand_count > 1 && op.kind == "all-reduce"
                                 ? fmt::format("{} x{}", op.kind, op.operand_count)
                                 : op.kind;
    out << fmt::format("  {:<24} {:<19} {:>3} {:<22} {:>11} {:>11} {:>4} {:>10}  {}\n",
                       op.instruction, kind, op.group_size,
                       op.mesh_axes.empty() ? "-" : op.mesh_axes, HumanBytes(op.bytes),
                       HumanBytes(op.wire_bytes_per_device), op.loop_multiplier,
                       TimeText(op.est_time_us), op.source);
  }
  if (shown < sorted.size()) {
    out << fmt::format("  ... {} more (--format json lists all)\n", sorted.size() - shown);
  }
  for (const std::string& note : result.notes) out << "  note: " << note << "\n";
}

}  // namespace spmdsim::analyzer
