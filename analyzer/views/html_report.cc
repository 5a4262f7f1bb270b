#include "analyzer/views/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string_view>
#include <unordered_set>

#include "analyzer/emit/html_escape.h"
#include "analyzer/emit/human_units.h"
#include "analyzer/model/collective_label.h"
#include "analyzer/model/finding_scope.h"
#include "analyzer/model/random_bit_values.h"
#include "analyzer/views/buffer_groups.h"
#include "analyzer/views/fit_view.h"
#include "analyzer/views/html_cells.h"
#include "analyzer/views/report_memview.h"
#include "analyzer/views/report_rng.h"
#include "analyzer/views/rng_sites_view.h"
#include "analyzer/views/svg_chart.h"
#include "ir/checked_math.h"
#include "ir/device_count.h"

namespace spmdsim::analyzer {

// The page's script and style sheet (views/report_assets/, embedded at build time).
const std::vector<std::pair<std::string_view, std::string_view>>& EmbeddedReportAssets();

namespace {

std::string_view Asset(std::string_view stem) {
  for (const auto& [name, text] : EmbeddedReportAssets()) {
    if (name == stem) return text;
  }
  return {};
}

using html::Bytes;
using html::BytesTd;
using html::E;
using html::LongTd;
using html::NumTd;
using html::Td;
using html::TimeTd;
using passes::CollectiveOp;
using passes::LiveBuffer;
using passes::PeakMemoryResult;
using passes::RngCost;
using passes::RngFinding;
using passes::RngSite;

std::string Terms(int64_t peak, int64_t argument, int64_t output, int64_t alias, int64_t temp) {
  return fmt::format(
      "<strong>{}</strong> <span class=\"exact\">{} bytes</span> = argument {} + output {} - alias "
      "{} + temp {}",
      E(HumanBytes(peak)), peak, Bytes(argument), Bytes(output), Bytes(alias), Bytes(temp));
}

// ---- summary ----

int64_t CollectiveRuns(const passes::CollectiveResult& result) {
  int64_t runs = 0;
  for (const auto& [kind, totals] : result.by_kind)
    runs = ir::SaturatingAdd(runs, totals.executions);
  return runs;
}

void Summary(const ModuleReport& report, const HtmlReportOptions& options, std::string& out) {
  const PeakMemoryResult& m = report.memory.prediction;
  const XlaMemoryFigures& x = report.memory.xla;
  const passes::CollectiveResult& c = report.collectives;
  const passes::RngSiteResult& r = report.rng;
  out += "<table class=\"summary\">\n";
  out += "<tr><th>peak per device</th><td class=\"peak\" data-bytes=\"" +
         std::to_string(m.peak_bytes) + "\">" +
         Terms(m.peak_bytes, m.argument_bytes, m.output_bytes, m.alias_bytes, m.temp_bytes) +
         "</td></tr>\n";
  if (!x.source.empty()) {
    out += "<tr><th>XLA's peak</th><td class=\"xla-peak\" data-bytes=\"" +
           std::to_string(x.peak_bytes) + "\">" +
           Terms(x.peak_bytes, x.argument_bytes, x.output_bytes, x.alias_bytes, x.temp_bytes) +
           " <span class=\"muted\">(" + E(x.source) + ")</span></td></tr>\n";
  }
  out += fmt::format(
      "<tr><th>collectives</th><td><span class=\"collective-count\">{}</span> ops, {} runs per "
      "step, {} on the wire per device and step",
      c.ops.size(), CollectiveRuns(c), Bytes(c.total_wire_bytes_per_device));
  if (!c.topology.empty()) {
    out += fmt::format(", about {} on {}", E(HumanTime(c.est_time_us)), E(c.topology));
  }
  out += "</td></tr>\n";
  int64_t warnings = 0;
  for (const RngFinding& f : r.findings)
    warnings += f.severity == passes::FindingSeverity::kWarning ? 1 : 0;
  out += fmt::format(
      "<tr><th>RNG sites</th><td>{} ({} drawing bits), {} materialized per device, {} sent per "
      "device and step</td></tr>\n",
      r.totals.sites, r.totals.bits_sites, Bytes(r.totals.materialized_bytes),
      Bytes(r.totals.wire_bytes_per_device));
  out += fmt::format("<tr><th>findings</th><td>{} ({} warnings)</td></tr>\n", r.findings.size(),
                     warnings);
  out += fmt::format(
      "<tr><th>schedule</th><td>{}{}, {} positions, {} devices{}</td></tr>\n", E(m.schedule),
      m.per_device_from_shardings ? ", sizes per device from the shardings" : "", m.schedule_length,
      c.num_devices,
      options.topology.empty() ? "" : ", collective times on " + E(options.topology));
  out += "</table>\n";
}

// ---- memory ----

void MemoryTerms(const MemoryReport& report, std::string& out) {
  const PeakMemoryResult& m = report.prediction;
  const XlaMemoryFigures& x = report.xla;
  const bool xla = !x.source.empty();
  out +=
      "<h3>Memory per device</h3>\n<table class=\"terms\"><tr><th>term</th>"
      "<th class=\"num\">spmdsim</th><th class=\"num\">exact bytes</th>";
  if (xla) {
    out += "<th class=\"num\">XLA (" + E(x.source) +
           ")</th><th class=\"num\">exact bytes</th><th class=\"num\">spmdsim - XLA</th>";
  }
  out += "</tr>\n";
  const auto row = [&](const char* name, int64_t ours, int64_t theirs) {
    out += fmt::format("<tr><td>{}</td>{}{}", name, BytesTd(ours), NumTd(ours));
    int64_t difference = 0;
    if (__builtin_sub_overflow(ours, theirs, &difference)) difference = INT64_MAX;
    if (xla) out += BytesTd(theirs) + NumTd(theirs) + NumTd(difference);
    out += "</tr>\n";
  };
  row("peak", m.peak_bytes, x.peak_bytes);
  row("argument", m.argument_bytes, x.argument_bytes);
  row("output", m.output_bytes, x.output_bytes);
  row("alias", m.alias_bytes, x.alias_bytes);
  row("temp", m.temp_bytes, x.temp_bytes);
  out += "</table>\n";
  out += fmt::format(
      "<p>temp: heap {} ({} best fit; {} live at most) + {} of tuple tables; {} values, {} "
      "buffers, {} in the heap.</p>\n",
      Bytes(m.heap_bytes), E(m.packing_order), Bytes(m.max_live_temp_bytes),
      Bytes(m.tuple_table_bytes), m.value_count, m.buffer_count, m.temp_buffer_count);
  std::string platform(passes::PlatformName(m.platform.platform));
  for (char& c : platform) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  out += fmt::format("<p>Sized by XLA:{} buffer-assignment rules ({}){}.</p>\n", E(platform),
                     E(m.platform.decided_by),
                     m.memory_space == 0 ? "" : E(", memory space " + m.memory_space_name));
  if (!x.temp_source.empty()) {
    out += "<p class=\"note\">XLA's temp above is " + E(x.temp_source) +
           (x.memory_analysis_temp_bytes >= 0
                ? "; memory_analysis() says " + Bytes(x.memory_analysis_temp_bytes) +
                      ", which libtpu does not break down in the dump"
                : std::string()) +
           ".</p>\n";
  }
  if (!m.memory_spaces.empty()) {
    out +=
        "<table class=\"terms\"><tr><th>other memory space</th><th class=\"num\">temp</th>"
        "<th class=\"num\">exact bytes</th><th class=\"num\">XLA</th><th "
        "class=\"num\">values</th></tr>\n";
    for (const passes::MemorySpaceUsage& space : m.memory_spaces) {
      const int64_t theirs = x.TempBytesOfSpace(space.space);
      out += "<tr>" + Td(MemorySpaceLabel(space)) + BytesTd(space.temp_bytes) +
             NumTd(space.temp_bytes) + (theirs >= 0 ? BytesTd(theirs) : Td("")) +
             NumTd(space.value_count) + "</tr>\n";
    }
    out += "</table>\n";
  }
  if (!xla) {
    out +=
        "<p class=\"note\">XLA's memory files (memory_analysis.json, buffer assignment) were "
        "not found beside this module.</p>\n";
  }
  if (x.memory_analysis) {
    out += "<details><summary>memory_analysis.json as saved</summary><table>";
    for (const auto& [name, value] : x.memory_analysis->fields) {
      out += "<tr>" + Td(name, "code") + BytesTd(value) + NumTd(value) + "</tr>";
    }
    out += "</table></details>\n";
  }
  if (x.live_range) {
    out += fmt::format(
        "<p>XLA's live ranges: {} positions (spmdsim: {}), XLA's peak at position {} (spmdsim: "
        "{}).</p>\n",
        x.live_range->max_time, m.schedule_length, x.live_range->peak_time, m.peak_time);
  }
  for (const std::string& error : x.errors) {
    out += "<p class=\"note\">unreadable: " + E(error) + "</p>\n";
  }
  for (const std::string& note : m.notes) out += "<p class=\"note\">note: " + E(note) + "</p>\n";
}

std::string GroupText(const std::vector<BufferGroup>& groups, size_t limit) {
  return E(GroupSummary(groups, limit));
}

void LiveAtPeak(const PeakMemoryResult& m, const RandomBitValues& random_values,
                const HtmlReportOptions& options, size_t number, std::string& out) {
  if (m.peak_time >= 0) {
    out += fmt::format(
        "<h3>Live at the peak: position {}, <span class=\"code\">{}</span> ({}), {} buffers</h3>\n",
        m.peak_time, E(m.peak_instruction), E(m.peak_opcode), m.live_at_peak_count);
  } else {
    out += fmt::format("<h3>Live at the peak: no temporaries, {} buffers</h3>\n",
                       m.live_at_peak_count);
  }
  if (m.live_at_peak.empty()) return;
  const std::vector<BufferGroup> groups = GroupBuffers(m.live_at_peak);
  out +=
      "<table class=\"groups\"><tr><th class=\"num\">buffers</th><th class=\"num\">each</th>"
      "<th class=\"num\">together</th><th>shape</th><th>op_name</th></tr>\n";
  for (size_t i = 0; i < groups.size() && i < options.max_groups; ++i) {
    const BufferGroup& g = groups[i];
    const std::string op_name =
        g.op_names.size() == 1
            ? *g.op_names.begin()
            : fmt::format("{} op_names, e.g. {}", g.op_names.size(), *g.op_names.rbegin());
    out += "<tr>" + NumTd(g.count) + BytesTd(g.size_bytes) +
           BytesTd(ir::SaturatingMul(g.size_bytes, g.count)) + LongTd(g.shape, "shape") +
           LongTd(op_name, "long") + "</tr>\n";
  }
  out += "</table>\n";
  if (groups.size() > options.max_groups) {
    out += fmt::format("<p class=\"note\">{} more groups of one size and shape.</p>\n",
                       groups.size() - options.max_groups);
  }
  const size_t shown = std::min(options.max_rows, m.live_at_peak.size());
  const auto is_random = [&](const LiveBuffer& b) {
    return random_values.Contains(b.instruction + b.index);
  };
  int64_t random_count = 0;
  int64_t random_bytes = 0;
  for (const LiveBuffer& b : m.live_at_peak) {
    if (!is_random(b)) continue;
    ++random_count;
    random_bytes = ir::SaturatingAdd(random_bytes, b.size_bytes);
  }
  if (random_count > 0) {
    out += fmt::format(
        "<p class=\"note\"><span class=\"rngmark\">random bits</span>: {} of these buffers, {} "
        "together, hold counters or bits of RNG sites (marked below).</p>\n",
        random_count, Bytes(random_bytes));
  }
  out += fmt::format("<details{}><summary>the buffers, largest first ({} of {})</summary>\n",
                     shown <= 40 ? " open" : "", shown, m.live_at_peak.size());
  out += fmt::format(
      "<input class=\"table-filter\" data-for=\"live-{0}\" placeholder=\"filter the buffers\" "
      "aria-label=\"filter the buffers\">\n<table class=\"live sortable\" id=\"live-{0}\"><thead>"
      "<tr><th class=\"num\">#</th><th class=\"num\">size</th><th>instruction</th><th>XLA "
      "label</th><th>{1}</th><th>op_name</th><th>source</th></tr></thead><tbody>\n",
      number,
      m.per_device_from_shardings ? "shape (global; bytes per device)" : "shape per device");
  for (size_t i = 0; i < shown; ++i) {
    const LiveBuffer& b = m.live_at_peak[i];
    const bool random = is_random(b);
    out +=
        std::string(random ? "<tr class=\"rng\">" : "<tr>") + NumTd(static_cast<int64_t>(i + 1)) +
        BytesTd(b.size_bytes) + Td(b.instruction + (b.index == "{}" ? "" : b.index), "code") +
        (random
             ? "<td>" + E(b.opcode + " (" + std::string(passes::LiveBufferKindName(b.kind)) + ")") +
                   " <span class=\"rngmark\">random bits</span></td>"
             : Td(b.opcode + " (" + std::string(passes::LiveBufferKindName(b.kind)) + ")")) +
        LongTd(b.shape, "shape") + LongTd(b.op_name, "long") + LongTd(b.source, "long") + "</tr>\n";
  }
  out += "</tbody></table>\n";
  if (m.live_at_peak.size() > shown) {
    const std::vector<LiveBuffer> rest(m.live_at_peak.begin() + static_cast<long>(shown),
                                       m.live_at_peak.end());
    int64_t rest_bytes = 0;
    for (const LiveBuffer& b : rest) rest_bytes = ir::SaturatingAdd(rest_bytes, b.size_bytes);
    out += fmt::format("<p class=\"note\">... {} more buffers, {} together: {}</p>\n", rest.size(),
                       Bytes(rest_bytes), GroupText(GroupBuffers(rest), 8));
  }
  out += "</details>\n";
}

// ---- collectives ----

void Collectives(const passes::CollectiveResult& c, bool unpartitioned,
                 const HtmlReportOptions& options, size_t number, std::string& out) {
  const bool timed = !c.topology.empty();
  out += fmt::format(
      "<h3>Collectives: {} ops, {} runs per step</h3>\n<p>{} on the wire per device and step "
      "(intra-node {}, inter-node {}){}.</p>\n",
      c.ops.size(), CollectiveRuns(c), Bytes(c.total_wire_bytes_per_device),
      Bytes(c.total_intra_node_bytes), Bytes(c.total_inter_node_bytes),
      timed ? fmt::format(", about {} on {}", E(HumanTime(c.est_time_us)), E(c.topology))
            : std::string(", no topology: bytes only"));
  if (unpartitioned && c.ops.empty()) {
    out +=
        "<p class=\"note\">The module is not partitioned yet: the collectives the SPMD "
        "partitioner will insert are predicted by <span class=\"code\">spmdsim collectives</span>"
        ", beside those of XLA's after_optimizations module.</p>\n";
  }
  if (!c.ops.empty()) {
    out +=
        "<table class=\"by-kind\"><tr><th>kind</th><th class=\"num\">ops</th>"
        "<th class=\"num\">runs</th><th class=\"num\">wire / device</th>"
        "<th class=\"num\">est. time</th></tr>\n";
    for (const auto& [kind, totals] : c.by_kind) {
      out += "<tr>" + Td(kind) + NumTd(totals.count) + NumTd(totals.executions) +
             BytesTd(totals.wire_bytes_per_device) + TimeTd(totals.est_time_us, timed) + "</tr>\n";
    }
    out += "</table>\n";
    std::vector<const CollectiveOp*> sorted;
    for (const CollectiveOp& op : c.ops) sorted.push_back(&op);
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
      return ir::SaturatingMul(a->wire_bytes_per_device, a->loop_multiplier) >
             ir::SaturatingMul(b->wire_bytes_per_device, b->loop_multiplier);
    });
    const size_t shown = std::min(options.max_rows, sorted.size());
    out += fmt::format(
        "<input class=\"table-filter\" data-for=\"collectives-{0}\" placeholder=\"filter the "
        "collectives\" aria-label=\"filter the collectives\">\n<table class=\"collectives "
        "sortable\" id=\"collectives-{0}\"><thead><tr><th>instruction</th><th>kind</th>"
        "<th class=\"num\">group size</th><th>groups span</th><th class=\"num\">B</th>"
        "<th class=\"num\">wire / device</th><th class=\"num\">runs</th>"
        "<th class=\"num\">time / run</th><th>op_name</th><th>source</th></tr></thead><tbody>\n",
        number);
    for (size_t i = 0; i < shown; ++i) {
      const CollectiveOp& op = *sorted[i];
      const std::string kind = CollectiveLabel(op.kind, op.operand_count);
      out += "<tr>" + Td(op.instruction, "code") + Td(kind) + NumTd(op.group_size) +
             Td(op.mesh_axes.empty() ? "-" : op.mesh_axes) + BytesTd(op.bytes) +
             BytesTd(op.wire_bytes_per_device) + NumTd(op.loop_multiplier) +
             TimeTd(op.est_time_us, timed) + LongTd(op.op_name, "long") +
             LongTd(op.source, "long") + "</tr>\n";
    }
    out += "</tbody></table>\n";
    if (shown < sorted.size()) {
      int64_t rest = 0;
      for (size_t i = shown; i < sorted.size(); ++i)
        rest = ir::SaturatingAdd(
            rest, ir::SaturatingMul(sorted[i]->wire_bytes_per_device, sorted[i]->loop_multiplier));
      out += fmt::format(
          "<p class=\"note\">... {} more ops, {} on the wire per device and "
          "step together (spmdsim collectives --format json lists all).</p>\n",
          sorted.size() - shown, Bytes(rest));
    }
  }
  for (const std::string& note : c.notes) out += "<p class=\"note\">note: " + E(note) + "</p>\n";
}

// Whether the module's noise is tied to the global tensor or independent per device.
void Noise(const passes::RngSiteResult& r, int64_t devices, std::string& out) {
  const int64_t shared = r.totals.noise.shared_key_sites;
  const int64_t per_device = r.totals.noise.per_device_key_sites;
  const int64_t rbg = r.totals.noise.rbg_sites;
  if (shared + per_device + rbg == 0) return;  // no random bits drawn
  out += "<h3>Tied or independent noise</h3>\n<p class=\"noise\">";
  out +=
      "A key shared by all devices, hashed by threefry in partitionable or replicated mode, "
      "gives every element of the global random tensor the same bits on any mesh: the noise "
      "is tied to the element's global position, so " +
      (devices > 1 ? fmt::format("the {} devices of this module draw", devices)
                   : std::string("any number of devices draws")) +
      " the same dropout masks as one (switching between the two modes changes the bits; the "
      "mesh does not). A key "
      "derived from the device's position (partition-id, or an axis index inside shard_map; "
      "finding <span class=\"code\">rng-depends-on-partition</span>) gives each device its "
      "own, independent noise, which changes when the device count or the mesh changes. "
      "rng-bit-generator (rbg) bits are not guaranteed stable across backends or shardings.";
  out += fmt::format(
      " In this module: {} bits site{} with a shared key, {} with a key from the device's "
      "position, {} rbg.</p>\n",
      shared, shared == 1 ? "" : "s", per_device, rbg);
}

// The fit verdict first: does the peak fit the device, by how much (analyzer/views/fit_view.h).
void Verdict(const FitVerdict& fit, std::string_view module_name, int64_t peak_position,
             size_t number, std::string& out) {
  const char* kind = !fit.fits ? "unknown" : *fit.fits ? "fits" : "over";
  out += fmt::format("<p class=\"verdict {}\" data-peak-bytes=\"{}\"{}>{}", kind, fit.peak_bytes,
                     fit.fits ? fmt::format(" data-usable-bytes=\"{}\"", fit.capacity.usable_bytes)
                              : std::string(),
                     E(FitVerdictLine(module_name, fit)));
  if (const std::string basis = FitBasisLine(fit); !basis.empty()) {
    out += "<span class=\"basis\">" + E(basis) + "</span>";
  }
  if (peak_position >= 0) {
    out += fmt::format(
        "<span class=\"basis\"><a class=\"show-position\" href=\"#memview-{}\" "
        "data-position=\"{}\">what is live at the peak</a></span>",
        number, peak_position);
  }
  out += "</p>\n";
}

// The fixes ranked by the peak each gives, for a step over its device (fit_fixes.h).
void Fixes(const FitFixes& all, const FitVerdict& fit, std::string& out) {
  const std::vector<FitFix>& fixes = all.ranked;
  if (fixes.empty() || fit.fits.value_or(true)) return;
  out +=
      "<table class=\"fixes\">\n<tr><th>fix</th><th class=\"num\">peak per device</th>"
      "<th>fits</th><th>cost</th><th>how the peak was obtained</th></tr>\n";
  for (const FitFix& f : fixes) {
    const std::string peak = f.peak_high_bytes != f.peak_bytes
                                 ? HumanBytes(f.peak_bytes) + " to " + HumanBytes(f.peak_high_bytes)
                                 : HumanBytes(f.peak_bytes);
    out += fmt::format(
        "<tr data-fix=\"{}\"><td>{}</td><td class=\"num\" title=\"{} bytes\">{}</td><td>{}</td>"
        "<td>{}</td><td class=\"muted\">{}</td></tr>\n",
        E(f.fix), E(f.action), f.peak_high_bytes, E(peak),
        !f.fits   ? ""
        : *f.fits ? "yes"
                  : "no",
        E(f.cost), E(f.basis));
  }
  out += "</table>\n";
}

void Module(const ModuleReport& report, size_t number, const HtmlReportOptions& options,
            std::string& out) {
  const dump::ModuleInput& input = *report.input;
  const bool estimate =
      report.unpartitioned || input.stage == dump::ModuleStage::kBeforeOptimizations;
  out += fmt::format(
      "<section class=\"module{0}\" id=\"module-{1}\" data-module-index=\"{1}\" "
      "data-module=\"{2}\" data-stage=\"{3}\">\n<h2>{2} <span class=\"stage\">{3}{4}</span>"
      "</h2>\n<p class=\"file\">{5}</p>\n",
      estimate ? " estimate" : "", number, E(input.module->name),
      E(std::string(dump::ModuleStageName(input.stage))),
      estimate ? ": an estimate (before XLA's passes; the devices run the after_optimizations "
                 "module)"
               : "",
      E(input.path));
  Verdict(report.fit, input.module->name, report.memory.prediction.peak_time, number, out);
  Fixes(report.fixes, report.fit, out);
  Summary(report, options, out);
  MemoryTerms(report.memory, out);
  const PeakMemoryResult& m = report.memory.prediction;
  if (!m.timeline.empty()) {
    out += fmt::format(
        "<h3>Memory curve</h3>\n<p class=\"note\">Live bytes per device over the {} positions "
        "of the flattened schedule ({} points, each the highest of its stretch); the dashed line "
        "is the predicted peak, which adds what heap packing loses.</p>\n",
        m.schedule_length, m.timeline.size());
    MemoryCurveOptions curve;
    curve.peak_bytes = m.peak_bytes;
    curve.schedule_length = m.schedule_length;
    out += MemoryCurveSvg(m.timeline, curve);
  }
  const RandomBitValues random(report.rng);
  out += MemoryViewHtml(report, number, random);
  LiveAtPeak(m, random, options, number, out);
  Collectives(report.collectives, report.unpartitioned, options, number, out);
  RngSitesHtml(report.rng, number, options.max_rows, out);
  FindingsHtml(report.rng, m, number, options.max_rows, out);
  Noise(report.rng, ir::DeviceCount(*input.module), out);
  out += "</section>\n";
}

// Every module of the input, the after_optimizations one with the largest peak selected (the
// train step, not jit_init_fn): the page shows the selected module, a click another.
void ProcessView(const std::vector<ModuleReport>& reports, std::string& out) {
  size_t selected = reports.size();
  for (size_t i = 0; i < reports.size(); ++i) {
    if (reports[i].input->stage != dump::ModuleStage::kAfterOptimizations) continue;
    if (selected == reports.size() ||
        reports[i].memory.prediction.peak_bytes > reports[selected].memory.prediction.peak_bytes) {
      selected = i;
    }
  }
  if (selected == reports.size() && !reports.empty()) selected = 0;
  out +=
      "<section class=\"process\"><h2>Modules</h2>\n<p class=\"note\">Click a module to show "
      "it; the after_optimizations module with the largest peak is shown first.</p>\n"
      "<table class=\"process sortable\" id=\"process\"><thead><tr><th>module</th><th>stage"
      "</th><th class=\"num\">peak per device</th><th>fits</th><th>top finding</th></tr>"
      "</thead><tbody>\n";
  for (size_t i = 0; i < reports.size(); ++i) {
    const ModuleReport& r = reports[i];
    const bool before = r.input->stage == dump::ModuleStage::kBeforeOptimizations;
    std::string finding = "-";
    int64_t most = -1;
    for (const RngFinding& f : r.rng.findings) {
      if (f.bytes > most) {
        most = f.bytes;
        finding = std::string(passes::FindingName(f.kind)) + " " + HumanBytes(f.bytes);
      }
    }
    out += fmt::format(
        "<tr data-module-index=\"{}\"{}><td><a href=\"#module-{}\">{}</a></td>{}{}{}{}</tr>\n",
        i + 1, i == selected ? " class=\"selected\"" : "", i + 1, E(r.input->module->name),
        Td(std::string(dump::ModuleStageName(r.input->stage)) + (before ? " (estimate)" : "")),
        BytesTd(r.memory.prediction.peak_bytes),
        Td(!r.fit.fits   ? "unknown device"
           : *r.fit.fits ? "fits the " + r.fit.capacity.display
                         : "does not fit the " + r.fit.capacity.display),
        Td(finding));
  }
  out += "</tbody></table></section>\n";
}

}  // namespace

std::string RenderHtmlReport(const std::vector<ModuleReport>& reports,
                             const HtmlReportOptions& options) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>spmdsim report";
  if (!reports.empty()) out += ": " + E(reports.front().input->module->name);
  out += "</title>\n<style>";
  out += Asset("report_style");
  out += "</style>\n</head>\n<body>\n<h1>spmdsim report</h1>\n";
  out +=
      "<p class=\"muted\">Per-device memory, collectives and RNG costs predicted from the HLO "
      "dump alone, with XLA's own figures beside them where its files were found.";
  if (!options.trace_path.empty()) {
    out += " Simulated step as a trace (open in ui.perfetto.dev): <span class=\"code\">" +
           E(options.trace_path) + "</span>.";
  }
  out += "</p>\n";
  ProcessView(reports, out);
  // What the devices run first; the estimates before XLA's passes after them, apart.
  bool estimates_heading = false;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < reports.size(); ++i) {
      const bool before = reports[i].input->stage == dump::ModuleStage::kBeforeOptimizations;
      if (before != (pass == 1)) continue;
      if (before && !estimates_heading) {
        estimates_heading = true;
        out +=
            "<h2 class=\"estimates\">Before XLA's optimizations: estimates</h2>\n<p "
            "class=\"note\">These modules are the program as JAX handed it to XLA; their figures "
            "are estimates (sizes per device from the shardings, no XLA schedule or fusion). "
            "The after_optimizations modules above are what the devices run.</p>\n";
      }
      Module(reports[i], i + 1, options, out);
    }
  }
  out += "<script>";
  out += Asset("report_script");
  out += "</script>\n";
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace spmdsim::analyzer
