#include "analyzer/views/collectives_view.h"

#include <fmt/format.h>

#include <algorithm>

#include "analyzer/emit/human_units.h"
#include "analyzer/model/collective_label.h"
#include "analyzer/views/module_heading.h"
#include "ir/checked_math.h"

namespace spmdsim::analyzer {

namespace {

// Device ids one op's `groups` lists at most: a module can name every one of 65536 devices in
// each of its collectives, and listing them all made megabytes of JSON per op.
constexpr size_t kMaxListedDeviceIds = 4096;

// The op's groups, whole ones only, until kMaxListedDeviceIds ids are listed.
nlohmann::ordered_json ListedGroups(const std::vector<std::vector<int64_t>>& groups,
                                    bool& complete) {
  nlohmann::ordered_json listed = nlohmann::ordered_json::array();
  size_t ids = 0;
  complete = true;
  for (const std::vector<int64_t>& group : groups) {
    if (ids + group.size() > kMaxListedDeviceIds) {
      complete = false;
      break;
    }
    ids += group.size();
    listed.push_back(group);
  }
  return listed;
}

}  // namespace

nlohmann::ordered_json CollectivesToJson(const passes::CollectiveResult& result,
                                         const TopologyChoice* topology) {
  nlohmann::ordered_json j;
  j["num_devices"] = result.num_devices;
  j["topology"] = result.topology;
  if (topology != nullptr) {
    j["topology_choice"] = {{"name", topology->topology.name},
                            {"chosen", topology->chosen},
                            {"devices", topology->devices},
                            {"devices_per_node", topology->topology.devices_per_node},
                            {"nodes", topology->nodes},
                            {"platform", topology->platform},
                            {"reason", topology->reason}};
  }
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const passes::CollectiveOp& op : result.ops) {
    nlohmann::ordered_json o;
    o["instruction"] = op.instruction;
    o["kind"] = ir::CollectiveKindName(op.kind);
    o["opcode"] = op.opcode;
    o["computation"] = op.computation;
    o["id_kind"] = passes::DeviceIdKindName(op.id_kind);
    o["group_size"] = op.group_size;
    bool complete = true;
    o["groups"] = ListedGroups(op.groups(), complete);
    o["group_count"] = op.groups().size();
    o["groups_complete"] = complete;
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

void PrintCollectivesText(const dump::ModuleInput& input, const passes::CollectiveResult& result,
                          std::ostream& out, const CollectivesTextOptions& options) {
  int64_t runs = 0;
  for (const auto& [kind, totals] : result.by_kind)
    runs = ir::SaturatingAdd(runs, totals.executions);
  out << ModuleHeading(input.module->name, input.stage, input.path);
  out << fmt::format("  collectives: {} ops, {} runs per step, {} devices, topology {}\n",
                     result.ops.size(), runs, result.num_devices,
                     result.topology.empty() ? "(none: bytes only)" : result.topology);
  if (options.topology != nullptr) {
    out << "  topology: " << DescribeTopologyChoice(*options.topology) << "\n";
  }
  out << fmt::format("  per step and device: {} on the wire (intra-node {}, inter-node {}), ~{}\n",
                     HumanBytes(result.total_wire_bytes_per_device),
                     HumanBytes(result.total_intra_node_bytes),
                     HumanBytes(result.total_inter_node_bytes), HumanTime(result.est_time_us));
  if (result.ops.empty()) return;
  out << fmt::format("  {:<22} {:>5} {:>6} {:>13} {:>11}\n", "kind", "ops", "runs", "wire/device",
                     "est. time");
  for (const auto& [kind, totals] : result.by_kind) {
    out << fmt::format("  {:<22} {:>5} {:>6} {:>13} {:>11}\n", kind, totals.count,
                       totals.executions, HumanBytes(totals.wire_bytes_per_device),
                       HumanTime(totals.est_time_us));
  }
  std::vector<const passes::CollectiveOp*> sorted;
  for (const passes::CollectiveOp& op : result.ops) sorted.push_back(&op);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
    return ir::SaturatingMul(a->wire_bytes_per_device, a->loop_multiplier) >
           ir::SaturatingMul(b->wire_bytes_per_device, b->loop_multiplier);
  });
  const size_t shown =
      options.max_ops == 0 ? sorted.size() : std::min(options.max_ops, sorted.size());
  out << fmt::format("  {:<24} {:<19} {:>3} {:<22} {:>11} {:>11} {:>4} {:>10}  {}\n", "instruction",
                     "kind", "n", "groups span", "B", "wire/dev", "runs", "time/run", "source");
  for (size_t i = 0; i < shown; ++i) {
    const passes::CollectiveOp& op = *sorted[i];
    const std::string kind = CollectiveLabel(op.kind, op.operand_count);
    out << fmt::format("  {:<24} {:<19} {:>3} {:<22} {:>11} {:>11} {:>4} {:>10}  {}\n",
                       op.instruction, kind, op.group_size,
                       op.mesh_axes.empty() ? "-" : op.mesh_axes, HumanBytes(op.bytes),
                       HumanBytes(op.wire_bytes_per_device), op.loop_multiplier,
                       HumanTime(op.est_time_us), op.source);
  }
  if (shown < sorted.size()) {
    out << fmt::format("  ... {} more (--format json lists all)\n", sorted.size() - shown);
  }
  for (const std::string& note : result.notes) out << "  note: " << note << "\n";
}

namespace {

nlohmann::ordered_json ErrorJson(double pct, bool defined) {
  if (!defined) return nullptr;
  return pct;
}

std::string ErrorText(double pct, bool defined) {
  if (!defined) return "n/a";
  return fmt::format("{:+.1f}%", pct);
}

std::string Ops(int64_t n) { return fmt::format("{} op{}", n, n == 1 ? "" : "s"); }

std::string MeshText(const passes::DeviceMesh& mesh) {
  std::string out = "[";
  for (size_t i = 0; i < mesh.sizes.size(); ++i) {
    if (i > 0) out += ", ";
    out += fmt::format("\"{}\"={}", i < mesh.names.size() ? mesh.names[i] : "?", mesh.sizes[i]);
  }
  return out + "]";
}

// The reasons of a combined op's members: one, or "a + b" in order of first appearance.
std::string Reasons(const passes::CollectivePrediction& p, const passes::CombinedCollective& c) {
  std::vector<std::string> seen;
  for (int32_t m : c.members) {
    const std::string& reason = p.predicted[static_cast<size_t>(m)].reason;
    if (std::find(seen.begin(), seen.end(), reason) == seen.end()) seen.push_back(reason);
  }
  std::string out;
  for (const std::string& r : seen) out += (out.empty() ? "" : " + ") + r;
  return out;
}

}  // namespace

void AddPredictionJson(const PredictionReport& report, nlohmann::ordered_json& collectives) {
  const passes::CollectivePrediction& p = *report.prediction;
  nlohmann::ordered_json mesh;
  mesh["axes"] = p.mesh.names;
  mesh["sizes"] = p.mesh.sizes;
  collectives["prediction_mesh"] = std::move(mesh);
  nlohmann::ordered_json predicted = nlohmann::ordered_json::array();
  for (const passes::PredictedCollective& c : p.predicted) {
    nlohmann::ordered_json o;
    o["kind"] = ir::CollectiveKindName(c.kind);
    o["bytes"] = c.bytes;
    o["wire_bytes_per_device"] = c.wire_bytes_per_device;
    o["group_size"] = c.group_size;
    o["mesh_axis"] = c.mesh_axis;
    o["reason"] = c.reason;
    o["rule"] = c.rule;
    o["instruction"] = c.instruction;
    o["loop_multiplier"] = c.loop_multiplier;
    o["trip_count_known"] = c.trip_count_known;
    o["combined"] = c.combined;
    o["op_name"] = c.op_name;
    o["source"] = c.source;
    predicted.push_back(std::move(o));
  }
  collectives["predicted"] = std::move(predicted);
  nlohmann::ordered_json combined = nlohmann::ordered_json::array();
  for (const passes::CombinedCollective& c : p.combined) {
    combined.push_back({{"kind", ir::CollectiveKindName(c.kind)},
                        {"mesh_axis", c.mesh_axis},
                        {"operand_count", c.members.size()},
                        {"bytes", c.bytes},
                        {"wire_bytes_per_device", c.wire_bytes_per_device},
                        {"loop_multiplier", c.loop_multiplier},
                        {"members", c.members}});
  }
  collectives["predicted_combined"] = std::move(combined);
  nlohmann::ordered_json by_kind = nlohmann::ordered_json::object();
  for (const auto& [kind, t] : p.by_kind) {
    by_kind[kind] = {{"count", t.count},
                     {"uncombined_count", t.uncombined_count},
                     {"executions", t.executions},
                     {"bytes", t.bytes},
                     {"wire_bytes_per_device", t.wire_bytes_per_device}};
  }
  collectives["predicted_by_kind"] = std::move(by_kind);
  collectives["predicted_total_wire_bytes_per_device"] = p.predicted_total_wire_bytes_per_device;
  collectives["prediction_unknown_instructions"] = p.unknown_instructions;
  collectives["prediction_notes"] = p.notes;
  if (report.comparison == nullptr) {
    collectives["comparison"] = nullptr;
    return;
  }
  const passes::PredictionComparison& cmp = *report.comparison;
  nlohmann::ordered_json c;
  c["actual_file"] = report.actual_path;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const passes::KindComparison& row : cmp.by_kind) {
    rows.push_back({{"kind", row.kind},
                    {"predicted_count", row.predicted_count},
                    {"actual_count", row.actual_count},
                    {"predicted_executions", row.predicted_executions},
                    {"actual_executions", row.actual_executions},
                    {"predicted_bytes", row.predicted_bytes},
                    {"actual_bytes", row.actual_bytes},
                    {"predicted_wire_bytes_per_device", row.predicted_wire_bytes},
                    {"actual_wire_bytes_per_device", row.actual_wire_bytes},
                    {"wire_error_pct", ErrorJson(row.wire_error_pct, row.error_defined)}});
  }
  c["by_kind"] = std::move(rows);
  c["predicted_total_wire_bytes_per_device"] = cmp.predicted_total_wire_bytes;
  c["actual_total_wire_bytes_per_device"] = cmp.actual_total_wire_bytes;
  c["total_error_pct"] = ErrorJson(cmp.total_error_pct, cmp.total_error_defined);
  collectives["comparison"] = std::move(c);
}

void PrintPredictionText(const PredictionReport& report, std::ostream& out,
                         const CollectivesTextOptions& options) {
  const passes::CollectivePrediction& p = *report.prediction;
  out << fmt::format(
      "  predicted for the partitioned module (mesh {}): {} collectives, {} after combining, "
      "{} on the wire per device and step\n",
      MeshText(p.mesh), p.predicted.size(), Ops(static_cast<int64_t>(p.combined.size())),
      HumanBytes(p.predicted_total_wire_bytes_per_device));
  static constexpr char kRow[] = "    {:<20} {:>10} {:>5} {:>13} {:>8} {:>5} {:>13} {:>7}\n";
  if (report.comparison != nullptr) {
    const passes::PredictionComparison& cmp = *report.comparison;
    out << "  compared with " << report.actual_path << "\n";
    out << fmt::format(kRow, "kind", "predicted:", "runs", "wire/device", "actual:", "runs",
                       "wire/device", "error");
    for (const passes::KindComparison& r : cmp.by_kind) {
      out << fmt::format(kRow, r.kind, Ops(r.predicted_count), r.predicted_executions,
                         HumanBytes(r.predicted_wire_bytes), Ops(r.actual_count),
                         r.actual_executions, HumanBytes(r.actual_wire_bytes),
                         ErrorText(r.wire_error_pct, r.error_defined));
    }
    out << fmt::format(kRow, "total", "", "", HumanBytes(cmp.predicted_total_wire_bytes), "", "",
                       HumanBytes(cmp.actual_total_wire_bytes),
                       ErrorText(cmp.total_error_pct, cmp.total_error_defined));
  } else {
    out << "  (no after_optimizations module of this program found to compare with)\n";
    out << fmt::format("    {:<20} {:>5} {:>12} {:>5} {:>13}\n", "kind", "ops", "uncombined",
                       "runs", "wire/device");
    for (const auto& [kind, t] : p.by_kind) {
      out << fmt::format("    {:<20} {:>5} {:>12} {:>5} {:>13}\n", kind, t.count,
                         t.uncombined_count, t.executions, HumanBytes(t.wire_bytes_per_device));
    }
  }
  std::vector<const passes::CombinedCollective*> sorted;
  for (const passes::CombinedCollective& c : p.combined) sorted.push_back(&c);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
    return ir::SaturatingMul(a->wire_bytes_per_device, a->loop_multiplier) >
           ir::SaturatingMul(b->wire_bytes_per_device, b->loop_multiplier);
  });
  const size_t shown =
      options.max_ops == 0 ? sorted.size() : std::min(options.max_ops, sorted.size());
  if (shown > 0) {
    out << fmt::format("    {:<19} {:>3} {:<10} {:>11} {:>11} {:>4}  {:<40} {}\n", "predicted op",
                       "n", "axes", "B", "wire/dev", "runs", "reason", "source");
  }
  for (size_t i = 0; i < shown; ++i) {
    const passes::CombinedCollective& c = *sorted[i];
    const passes::PredictedCollective& first = p.predicted[static_cast<size_t>(c.members[0])];
    const std::string kind = CollectiveLabel(c.kind, static_cast<int64_t>(c.members.size()));
    out << fmt::format("    {:<19} {:>3} {:<10} {:>11} {:>11} {:>4}  {:<40} {}\n", kind,
                       first.group_size, c.mesh_axis, HumanBytes(c.bytes),
                       HumanBytes(c.wire_bytes_per_device), c.loop_multiplier, Reasons(p, c),
                       first.source.empty() ? first.op_name : first.source);
  }
  if (shown < sorted.size()) {
    out << fmt::format("    ... {} more (--format json lists all)\n", sorted.size() - shown);
  }
  if (p.unknown_instructions > 0 || !p.notes.empty()) {
    for (const std::string& note : p.notes) out << "  note: " << note << "\n";
  }
}

}  // namespace spmdsim::analyzer
