#include "analyzer/views/diff_view.h"

#include <fmt/format.h>

#include "analyzer/emit/human_units.h"
#include "analyzer/model/finding_scope.h"

namespace spmdsim::analyzer {
namespace {

using Json = nlohmann::ordered_json;

Json DeltaJson(const Delta& d) {
  const std::optional<double> pct = d.ChangePct();
  return {
      {"a", d.a}, {"b", d.b}, {"change", d.Change()}, {"change_pct", pct ? Json(*pct) : Json()}};
}

Json FindingJson(const passes::RngFinding& f) {
  return {{"kind", passes::FindingName(f.kind)},
          {"severity", passes::SeverityName(f.severity)},
          {"bytes", f.bytes},
          {"site", f.site},
          {"op_name", f.op_name},
          {"source", f.source},
          {"message", f.message}};
}

Json CategoryJson(const LiveCategory& category) {
  Json top = Json::array();
  for (const LiveGroupDiff& g : category.top) {
    top.push_back({{"op_name", g.op_name},
                   {"shape", g.shape},
                   {"source", g.source},
                   {"buffers", DeltaJson(g.buffers)},
                   {"bytes", DeltaJson(g.bytes)}});
  }
  return {{"groups", category.groups},
          {"change_bytes", category.change_bytes},
          {"top", std::move(top)},
          {"more", category.groups - static_cast<int64_t>(category.top.size())}};
}

// "+1.00 KiB (+0.03%)"; "(new)" when A had none.
std::string Change(const Delta& d) {
  const std::optional<double> pct = d.ChangePct();
  return HumanBytesDelta(d.Change()) + (pct ? fmt::format(" ({:+.2f}%)", *pct) : " (new)");
}

// The end of a long op_name, which says the most ("...block_0/att_dropout/.../concatenate").
std::string ShortOpName(const std::string& op_name) {
  constexpr size_t kMax = 90;
  if (op_name.size() <= kMax) return op_name.empty() ? "(no op_name)" : op_name;
  return "..." + op_name.substr(op_name.size() - (kMax - 3));
}

std::string Plural(int64_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

void PrintCategory(const char* label, const LiveCategory& category, std::ostream& out) {
  for (const LiveGroupDiff& g : category.top) {
    const std::string count = g.buffers.a == g.buffers.b
                                  ? fmt::format("x{}", g.buffers.b)
                                  : fmt::format("x{}->{}", g.buffers.a, g.buffers.b);
    out << fmt::format("      {:<12} {:>13}  {} {}  {}\n", label, HumanBytesDelta(g.bytes.Change()),
                       g.shape, count, ShortOpName(g.op_name));
  }
  const int64_t more = category.groups - static_cast<int64_t>(category.top.size());
  if (more > 0) {
    out << fmt::format("      {:<12} ... and {} more group{}\n", label, more, more == 1 ? "" : "s");
  }
}

std::string CollectiveCell(const CollectiveKindDiff& c, bool a) {
  const int64_t ops = a ? c.ops.a : c.ops.b;
  const int64_t runs = a ? c.runs.a : c.runs.b;
  const int64_t wire = a ? c.wire_bytes_per_device.a : c.wire_bytes_per_device.b;
  return fmt::format("{}, {}, {}", Plural(ops, "op"), Plural(runs, "run"), HumanBytes(wire));
}

}  // namespace

Json DiffToJson(const ModuleDiff& diff) {
  Json j;
  j["memory"] = {{"peak_bytes", DeltaJson(diff.peak_bytes)},
                 {"temp_bytes", DeltaJson(diff.temp_bytes)},
                 {"argument_bytes", DeltaJson(diff.argument_bytes)},
                 {"output_bytes", DeltaJson(diff.output_bytes)},
                 {"alias_bytes", DeltaJson(diff.alias_bytes)}};
  j["live_at_peak"] = {{"buffers", DeltaJson(diff.live.buffers)},
                       {"appeared", CategoryJson(diff.live.appeared)},
                       {"disappeared", CategoryJson(diff.live.disappeared)},
                       {"changed", CategoryJson(diff.live.changed)},
                       {"unchanged_groups", diff.live.unchanged_groups}};
  Json kinds = Json::array();
  for (const CollectiveKindDiff& c : diff.collectives) {
    kinds.push_back({{"kind", c.kind},
                     {"ops", DeltaJson(c.ops)},
                     {"runs", DeltaJson(c.runs)},
                     {"wire_bytes_per_device", DeltaJson(c.wire_bytes_per_device)}});
  }
  j["collectives"] = {{"by_kind", std::move(kinds)},
                      {"total_wire_bytes_per_device", DeltaJson(diff.wire_bytes_per_device)}};
  Json groups = Json::array();
  for (const RngGroupDiff& g : diff.rng) {
    groups.push_back({{"mode", g.mode},
                      {"kind", g.kind},
                      {"sites", DeltaJson(g.sites)},
                      {"materialized_bytes", DeltaJson(g.materialized_bytes)}});
  }
  Json added = Json::array();
  for (const passes::RngFinding& f : diff.findings_added) added.push_back(FindingJson(f));
  Json removed = Json::array();
  for (const passes::RngFinding& f : diff.findings_removed) removed.push_back(FindingJson(f));
  j["rng"] = {{"by_mode_kind", std::move(groups)},
              {"sites", DeltaJson(diff.rng_sites)},
              {"materialized_bytes", DeltaJson(diff.rng_materialized_bytes)},
              {"wire_bytes_per_device", DeltaJson(diff.rng_wire_bytes_per_device)},
              {"findings_added", std::move(added)},
              {"findings_removed", std::move(removed)}};
  return j;
}

void PrintDiffText(const dump::ModuleInput* a, const dump::ModuleInput* b, const ModuleDiff* diff,
                   std::ostream& out) {
  const dump::ModuleInput* any = a ? a : b;
  out << fmt::format("module {} ({})\n", any->module->name, dump::ModuleStageName(any->stage));
  out << "  A  " << (a ? a->path : std::string("(no module of this name)")) << "\n";
  out << "  B  " << (b ? b->path : std::string("(no module of this name)")) << "\n";
  if (diff == nullptr) return;
  const ModuleDiff& d = *diff;
  out << fmt::format(
      "  B vs A: peak memory {}, collectives {} per device per step, rng buffers {}\n",
      Change(d.peak_bytes), Change(d.wire_bytes_per_device), Change(d.rng_materialized_bytes));

  out << fmt::format("  {:<30} {:>13} {:>13}  {}\n", "memory per device", "A", "B", "change");
  const std::pair<const char*, const Delta*> terms[] = {{"peak", &d.peak_bytes},
                                                        {"temp", &d.temp_bytes},
                                                        {"argument", &d.argument_bytes},
                                                        {"output", &d.output_bytes},
                                                        {"alias", &d.alias_bytes}};
  for (const auto& [name, delta] : terms) {
    out << fmt::format("    {:<28} {:>13} {:>13}  {}\n", name, HumanBytes(delta->a),
                       HumanBytes(delta->b), Change(*delta));
  }

  const LiveDiff& live = d.live;
  out << fmt::format(
      "  live at peak ({} -> {} buffers, by op_name and shape): {} appeared ({}), {} "
      "disappeared ({}), {} changed size ({}), {} unchanged\n",
      live.buffers.a, live.buffers.b, Plural(live.appeared.groups, "group"),
      HumanBytesDelta(live.appeared.change_bytes), live.disappeared.groups,
      HumanBytesDelta(live.disappeared.change_bytes), live.changed.groups,
      HumanBytesDelta(live.changed.change_bytes), live.unchanged_groups);
  PrintCategory("appeared", live.appeared, out);
  PrintCategory("disappeared", live.disappeared, out);
  PrintCategory("changed", live.changed, out);

  out << fmt::format("  {:<30} {:>30} {:>30}  {}\n", "collectives per device per step", "A", "B",
                     "change");
  for (const CollectiveKindDiff& c : d.collectives) {
    out << fmt::format("    {:<28} {:>30} {:>30}  {}\n", c.kind, CollectiveCell(c, true),
                       CollectiveCell(c, false), Change(c.wire_bytes_per_device));
  }
  out << fmt::format("    {:<28} {:>30} {:>30}  {}\n", "total",
                     HumanBytes(d.wire_bytes_per_device.a), HumanBytes(d.wire_bytes_per_device.b),
                     Change(d.wire_bytes_per_device));

  out << fmt::format("  {:<30} {:>30} {:>30}  {}\n", "rng sites (mode kind)", "A", "B", "change");
  for (const RngGroupDiff& g : d.rng) {
    out << fmt::format("    {:<28} {:>30} {:>30}  {}\n", g.mode + " " + g.kind,
                       Plural(g.sites.a, "site") + ", " + HumanBytes(g.materialized_bytes.a),
                       Plural(g.sites.b, "site") + ", " + HumanBytes(g.materialized_bytes.b),
                       Change(g.materialized_bytes));
  }
  out << fmt::format("    {:<28} {:>30} {:>30}  {}\n", "total",
                     Plural(d.rng_sites.a, "site") + ", " + HumanBytes(d.rng_materialized_bytes.a),
                     Plural(d.rng_sites.b, "site") + ", " + HumanBytes(d.rng_materialized_bytes.b),
                     Change(d.rng_materialized_bytes));

  out << fmt::format("  findings: {} added, {} removed\n", d.findings_added.size(),
                     d.findings_removed.size());
  for (const auto& [sign, list] :
       {std::pair{'+', &d.findings_added}, std::pair{'-', &d.findings_removed}}) {
    for (const passes::RngFinding& f : *list) {
      const std::string scope = FindingScope(f.op_name);
      out << fmt::format("    {} {}{}{}  {}\n", sign, passes::FindingName(f.kind),
                         scope.empty() ? "" : " in " + scope,
                         f.source.empty() ? "" : " at " + f.source, ShortOpName(f.op_name));
    }
  }
}

}  // namespace spmdsim::analyzer
