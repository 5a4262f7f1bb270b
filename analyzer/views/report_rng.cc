#include "analyzer/views/report_rng.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_set>

#include "analyzer/emit/human_units.h"
#include "analyzer/model/finding_scope.h"
#include "analyzer/model/rng_site_groups.h"
#include "analyzer/views/html_cells.h"
#include "analyzer/views/rng_sites_view.h"
#include "ir/checked_math.h"

namespace spmdsim::analyzer {
namespace {

using html::Bytes;
using html::BytesTd;
using html::E;
using html::LongTd;
using html::NumTd;
using html::Td;
using passes::RngCost;
using passes::RngFinding;
using passes::RngSite;

std::string ShapeOf(const RngSite& site) {
  std::string out = site.dtype + "[";
  for (size_t i = 0; i < site.shape.size(); ++i) {
    out += (i > 0 ? "," : "") + std::to_string(site.shape[i]);
  }
  return out + "]";
}

// The per-device shape, and the global tensor it is a piece of where it is split.
std::string ShapeTd(const RngSite& site) {
  std::string text = E(ShapeOf(site)) + " <span class=\"muted\">per device";
  if (site.shards > 1 && site.global_elements > 0) {
    text +=
        fmt::format("; a 1/{} piece of the global {} elements", site.shards, site.global_elements);
  }
  return "<td class=\"shape\">" + text + "</span></td>";
}

RngCost Sum(const RngCost& a, const RngCost& b) {
  RngCost out = a;
  out.memory_bytes = ir::SaturatingAdd(a.memory_bytes, b.memory_bytes);
  out.memory_high_bytes = ir::SaturatingAdd(a.bounded ? a.memory_high_bytes : a.memory_bytes,
                                            b.bounded ? b.memory_high_bytes : b.memory_bytes);
  out.bounded = a.bounded || b.bounded;
  out.wire_bytes_per_device = ir::SaturatingAdd(a.wire_bytes_per_device, b.wire_bytes_per_device);
  return out;
}

// Memory, and the bytes sent when there are any, of one what-if mode.
std::string CostTd(const RngCost& cost) {
  std::string text = Bytes(cost.memory_bytes);
  if (cost.bounded) text += " to " + Bytes(cost.memory_high_bytes);
  if (cost.wire_bytes_per_device > 0) text += " + " + Bytes(cost.wire_bytes_per_device) + " sent";
  return fmt::format("<td class=\"num\" data-sort=\"{}\">{}</td>", cost.memory_bytes, text);
}

std::string KeyText(const RngSite& site) {
  return site.key_depends_on_partition ? "per device (" + site.key_dependency + ")" : "shared";
}

// The cells after the first two, shared by group and site rows.
std::string SiteCells(const RngSite& site) {
  return Td(passes::SiteKindName(site.kind)) + Td(passes::SiteModeName(site.mode)) +
         Td(passes::SitePhaseName(site.phase)) + Td(site.draws) + ShapeTd(site) +
         BytesTd(site.materialized_bytes) + BytesTd(site.wire_bytes_per_device) +
         CostTd(site.whatif.replicated) + CostTd(site.whatif.partitionable) +
         CostTd(site.whatif.rbg) + CostTd(site.whatif.fused) + Td(KeyText(site));
}

void GroupRows(const RngSiteGroup& group, std::string& out) {
  const RngSite& first = *group.sites.front();
  int64_t materialized = 0;
  int64_t sent = 0;
  passes::RngWhatIf whatif;
  std::set<std::string> keys;
  for (const RngSite* site : group.sites) {
    materialized = ir::SaturatingAdd(materialized, site->materialized_bytes);
    sent = ir::SaturatingAdd(sent, site->wire_bytes_per_device);
    whatif.replicated = Sum(whatif.replicated, site->whatif.replicated);
    whatif.partitionable = Sum(whatif.partitionable, site->whatif.partitionable);
    whatif.rbg = Sum(whatif.rbg, site->whatif.rbg);
    whatif.fused = Sum(whatif.fused, site->whatif.fused);
    keys.insert(KeyText(*site));
  }
  out += fmt::format("<tr class=\"rng-group\" data-sites=\"{}\">", group.sites.size()) +
         NumTd(static_cast<int64_t>(group.sites.size())) +
         LongTd(group.name + (first.source.empty() ? "" : "  (" + first.source + ")"), "long") +
         Td(passes::SiteKindName(first.kind)) + Td(passes::SiteModeName(first.mode)) +
         Td(passes::SitePhaseName(first.phase)) + Td(first.draws) + ShapeTd(first) +
         BytesTd(materialized) + BytesTd(sent) + CostTd(whatif.replicated) +
         CostTd(whatif.partitionable) + CostTd(whatif.rbg) + CostTd(whatif.fused) +
         Td(keys.size() == 1 ? *keys.begin() : "mixed") + "</tr>\n";
  for (const RngSite* site : group.sites) {
    out +=
        "<tr class=\"rng-member collapsed\"><td class=\"code\">" + E(site->name) + "</td>" +
        LongTd(site->op_name + (site->source.empty() ? "" : "  (" + site->source + ")"), "long") +
        SiteCells(*site) + "</tr>\n";
  }
}

}  // namespace

void RngSitesHtml(const passes::RngSiteResult& r, size_t module_number, size_t max_rows,
                  std::string& out) {
  out += fmt::format(
      "<h3>RNG sites: {} ({} drawing bits)</h3>\n<p>{} materialized per device, {} sent per "
      "device and step. What-if: each site's memory per device (and bytes sent per execution) "
      "were its bits made in another mode.</p>\n",
      r.totals.sites, r.totals.bits_sites, Bytes(r.totals.materialized_bytes),
      Bytes(r.totals.wire_bytes_per_device));
  if (r.totals.bits_sites > 0) {
    const std::vector<RngSiteGroup> groups = GroupRngSites(r);
    out += fmt::format(
        "<p class=\"note\">{1} draw patterns: sites whose op_names differ only in numbers (block "
        "and layer indices) are one row; click a row for its sites.</p>\n"
        "<input class=\"table-filter\" data-for=\"rng-{0}\" placeholder=\"filter the draws\" "
        "aria-label=\"filter the draws\">\n",
        module_number, groups.size());
    out += fmt::format(
        "<table class=\"rng rng-groups sortable\" id=\"rng-{}\"><thead><tr>"
        "<th class=\"num\">sites</th><th>draw (op_name, source)</th><th>kind</th><th>mode</th>"
        "<th>phase</th><th>draws</th><th>shape</th><th class=\"num\">materialized</th>"
        "<th class=\"num\">sent / step</th><th class=\"num\">replicated</th>"
        "<th class=\"num\">partitionable</th><th class=\"num\">rbg</th><th class=\"num\">fused"
        "</th><th>key</th></tr></thead><tbody>\n",
        module_number);
    size_t rows = 0;
    for (const RngSiteGroup& group : groups) {
      if (rows == max_rows) break;
      ++rows;
      GroupRows(group, out);
    }
    const passes::RngWhatIf& w = r.totals.whatif;
    out += "<tr class=\"total\"><td></td><td colspan=\"6\">total</td>" +
           BytesTd(r.totals.materialized_bytes) + BytesTd(r.totals.wire_bytes_per_device) +
           CostTd(w.replicated) + CostTd(w.partitionable) + CostTd(w.rbg) + CostTd(w.fused) +
           "<td></td></tr>\n</tbody></table>\n";
    if (groups.size() > rows) {
      out += fmt::format(
          "<p class=\"note\">... {} more draw patterns (spmdsim rng sites --format json lists "
          "all).</p>\n",
          groups.size() - rows);
    }
  }
  const int64_t key_sites = r.totals.sites - r.totals.bits_sites;
  if (key_sites > 0) {
    out += fmt::format("<p class=\"note\">{} more sites only derive keys (split, fold_in).</p>\n",
                       key_sites);
  }
  for (const std::string& note : r.notes) out += "<p class=\"note\">note: " + E(note) + "</p>\n";
}

namespace {

// Where a finding's values are live: the peak if any is live there, else the first position of
// the first one found; -1 when none is listed (a value sharing another's buffer is listed as it).
int64_t FindingPosition(const RngFinding& f, const passes::PeakMemoryResult& m) {
  if (f.values.empty()) return -1;
  const std::unordered_set<std::string> wanted(f.values.begin(), f.values.end());
  int64_t first = -1;
  for (const passes::BufferLifetime& stay : m.lifetimes) {
    const passes::LiveBuffer& b = stay.buffer;
    if (wanted.count(b.instruction + b.index) == 0 && wanted.count(b.instruction) == 0) continue;
    if (m.peak_time >= stay.first && m.peak_time <= stay.last) return m.peak_time;
    if (first < 0) first = stay.first;
  }
  return first;
}

}  // namespace

void FindingsHtml(const passes::RngSiteResult& r, const passes::PeakMemoryResult& m,
                  size_t module_number, size_t max_rows, std::string& out) {
  out += fmt::format("<h3>Findings: {}</h3>\n", r.findings.size());
  if (r.findings.empty()) return;
  // What each kind means, once; each finding then opens onto its own details.
  std::set<passes::FindingKind> explained;
  for (const RngFinding& f : r.findings) {
    if (!explained.insert(f.kind).second) continue;
    out += "<p class=\"finding-kind\"><span class=\"code\">" + E(passes::FindingName(f.kind)) +
           "</span>: " + E(f.message) + "</p>\n";
  }
  const size_t shown = std::min(max_rows, r.findings.size());
  for (size_t i = 0; i < shown; ++i) {
    const RngFinding& f = r.findings[i];
    const bool warning = f.severity == passes::FindingSeverity::kWarning;
    out += fmt::format(
        "<details class=\"finding\" data-kind=\"{}\"><summary><span class=\"code\">{}</span> "
        "<span class=\"{}\">{}</span> {}{} &mdash; {}</summary>\n",
        E(passes::FindingName(f.kind)), E(passes::FindingName(f.kind)),
        warning ? "warning" : "muted", E(std::string(passes::SeverityName(f.severity))),
        Bytes(f.bytes), f.saving_bytes > 0 ? ", saves " + Bytes(f.saving_bytes) : "",
        E(FindingScope(f.op_name)));
    out += "<p>" + E(f.message) + "</p>\n";
    out += "<p>site <span class=\"code\">" + E(f.site) + "</span>" +
           (f.source.empty()
                ? std::string(", source not in the dump")
                : ", source <span class=\"code finding-source\">" + E(f.source) + "</span>") +
           "</p>\n";
    if (!f.op_name.empty()) out += "<p class=\"code\">" + E(f.op_name) + "</p>\n";
    if (!f.values.empty()) {
      std::string values;
      for (size_t k = 0; k < f.values.size() && k < 20; ++k)
        values += (k ? ", " : "") + f.values[k];
      if (f.values.size() > 20) values += fmt::format(" and {} more", f.values.size() - 20);
      out += "<p>values: <span class=\"code\">" + E(values) + "</span></p>\n";
    }
    if (const int64_t position = FindingPosition(f, m); position >= 0) {
      out += fmt::format(
          "<p><a class=\"show-position\" href=\"#memview-{0}\" data-position=\"{1}\">show what "
          "is live at position {1}{2}</a></p>\n",
          module_number, position, position == m.peak_time ? " (the peak)" : "");
    }
    out += "</details>\n";
  }
  if (shown < r.findings.size()) {
    out += fmt::format("<p class=\"note\">... {} more findings.</p>\n", r.findings.size() - shown);
  }
  if (r.remat.ran) out += "<p class=\"remat\">" + E(RematWhatIfText(r.remat)) + "</p>\n";
}

}  // namespace spmdsim::analyzer
