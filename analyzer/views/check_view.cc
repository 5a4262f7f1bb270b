#include "analyzer/views/check_view.h"

#include <fmt/format.h>

#include "analyzer/emit/human_units.h"
#include "analyzer/model/finding_scope.h"
#include "analyzer/views/fit_view.h"
#include "analyzer/views/stats_view.h"

namespace spmdsim::analyzer {
namespace {

nlohmann::ordered_json OptionalJson(const std::optional<int64_t>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json();
}

nlohmann::ordered_json RowJson(const CheckRow& row) {
  nlohmann::ordered_json j;
  j["metric"] = row.MetricName();
  j["unit"] = row.is_count ? "count" : "bytes";
  j["baseline"] = OptionalJson(row.baseline);
  j["now"] = row.now;
  j["change"] =
      row.baseline ? nlohmann::ordered_json(row.now - *row.baseline) : nlohmann::ordered_json();
  const std::optional<double> pct = row.ChangePct();
  j["change_pct"] = pct ? nlohmann::ordered_json(*pct) : nlohmann::ordered_json();
  j["limit"] = row.limit;
  j["limit_kind"] = row.baseline ? (row.is_count ? "no-new-findings" : "tolerance") : "absolute";
  j["status"] = CheckStatusName(row.status);
  j["message"] = row.message;
  j["source"] = row.source.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(row.source);
  return j;
}

nlohmann::ordered_json FindingJson(const CheckedFinding& checked) {
  const CheckFinding& f = checked.finding;
  return {{"kind", f.kind},       {"severity", f.severity}, {"bytes", f.bytes},
          {"site", f.site},       {"op_name", f.op_name},   {"source", f.source},
          {"message", f.message}, {"new", checked.is_new}};
}

}  // namespace

const char* OneSideText(BaselineMatch match) {
  return match == BaselineMatch::kMissing ? "in the baseline, not among the inputs: not checked"
                                          : "not in the baseline: limits only";
}

std::string CheckCellValue(const CheckRow& row, int64_t value) {
  return row.is_count ? std::to_string(value) : HumanBytes(value);
}

std::string CheckCellChange(const CheckRow& row) {
  if (!row.baseline) return "";
  // Findings: what matters is how many are new, not how the count moved.
  if (row.is_count) return fmt::format("{} new", row.now - row.limit);
  const std::optional<double> pct = row.ChangePct();
  return HumanBytesDelta(row.now - *row.baseline) +
         (pct ? fmt::format(" ({:+.2f}%)", *pct) : " (new)");
}

std::string CheckCellLimit(const CheckRow& row) {
  if (row.baseline || row.limit_unknown) return row.limit_label;
  return fmt::format("{} {}", row.limit_label, HumanBytes(row.limit));
}

std::string CheckCellStatus(const CheckRow& row) {
  switch (row.status) {
    case CheckStatus::kOk:
      return "ok";
    case CheckStatus::kRegressed:
      return "REGRESSED";
    case CheckStatus::kBreached:
      return "BREACHED";
  }
  return "ok";
}

nlohmann::ordered_json CheckToJson(const CheckRun& run) {
  nlohmann::ordered_json out;
  out["schema_version"] = kSchemaVersion;
  out["baseline"] =
      run.has_baseline ? nlohmann::ordered_json(run.baseline_file) : nlohmann::ordered_json();
  out["tolerance_pct"] = run.options.tolerance_pct;
  out["max_peak_bytes"] = OptionalJson(run.options.max_peak_bytes);
  out["max_wire_bytes"] = OptionalJson(run.options.max_wire_bytes);
  out["must_fit"] = run.options.must_fit;
  nlohmann::ordered_json modules = nlohmann::ordered_json::array();
  for (const ModuleCheck& m : run.modules) {
    nlohmann::ordered_json module;
    module["name"] = m.figures.name;
    module["file"] = m.figures.file;
    module["stage"] = m.figures.stage;
    module["fit"] = m.figures.fit ? FitToJson(*m.figures.fit) : nlohmann::ordered_json();
    if (m.figures.fit) AddFixesJson(m.figures.fixes, module["fit"]);
    nlohmann::ordered_json check;
    check["baseline"] = BaselineMatchName(m.match);
    check["passed"] = m.Passed();
    check["figures"] =
        m.match == BaselineMatch::kMissing ? nlohmann::ordered_json() : FiguresToJson(m.figures);
    check["checks"] = nlohmann::ordered_json::array();
    for (const CheckRow& row : m.rows) check["checks"].push_back(RowJson(row));
    check["grew"] = nlohmann::ordered_json::array();
    for (const PeakGrowth& g : m.grew) {
      check["grew"].push_back({{"category", g.category},
                               {"category_change_bytes", g.category_change},
                               {"op_name", g.group.op_name},
                               {"shape", g.group.shape},
                               {"source", g.group.source},
                               {"buffers", g.group.buffers},
                               {"bytes", g.group.bytes},
                               {"new_buffers", g.new_buffers},
                               {"change_bytes", g.change_bytes},
                               {"text", g.Text()}});
    }
    check["findings"] = nlohmann::ordered_json::array();
    for (const CheckedFinding& f : m.findings) check["findings"].push_back(FindingJson(f));
    module["check"] = std::move(check);
    modules.push_back(std::move(module));
  }
  out["modules"] = std::move(modules);
  out["regressions"] = run.CountRows(CheckStatus::kRegressed);
  out["breaches"] = run.CountRows(CheckStatus::kBreached);
  out["new_findings"] = run.NewFindings();
  out["nothing_compared"] = run.nothing_compared.empty()
                                ? nlohmann::ordered_json()
                                : nlohmann::ordered_json(run.nothing_compared);
  out["unread_inputs"] = nlohmann::ordered_json::array();
  for (const CheckRun::UnreadInput& u : run.unread_inputs) {
    out["unread_inputs"].push_back({{"file", u.file}, {"message", u.message}});
  }
  out["passed"] = run.Passed();
  return out;
}

namespace {

// The verdict on the modules read, without its PASSED/FAILED.
struct ModulesVerdict {
  bool passed = false;
  std::string text;
};

ModulesVerdict VerdictOfModules(const CheckRun& run) {
  if (!run.nothing_compared.empty())
    return {false, "nothing was compared: " + run.nothing_compared};
  int64_t failed = 0;
  int64_t rows = 0;
  for (const ModuleCheck& m : run.modules) {
    failed += m.Passed() ? 0 : 1;
    rows += static_cast<int64_t>(m.rows.size());
  }
  const size_t modules = run.modules.size();
  const char* plural = modules == 1 ? "" : "s";
  if (failed == 0 && rows == 0 && run.options.writing_baseline) {
    return {true,
            fmt::format("nothing compared, the baseline of {} module{} written", modules, plural)};
  }
  if (failed == 0) {
    return {true, fmt::format("{} check{} in {} module{}, none regressed or over a limit", rows,
                              rows == 1 ? "" : "s", modules, plural)};
  }
  const int64_t regressions = run.CountRows(CheckStatus::kRegressed);
  const int64_t breaches = run.CountRows(CheckStatus::kBreached);
  return {false, fmt::format("{} regression{}, {} limit breach{}, {} new finding{}, in {} of {} "
                             "module{}",
                             regressions, regressions == 1 ? "" : "s", breaches,
                             breaches == 1 ? "" : "es", run.NewFindings(),
                             run.NewFindings() == 1 ? "" : "s", failed, modules, plural)};
}

}  // namespace

std::string CheckVerdict(const CheckRun& run) {
  const ModulesVerdict modules = VerdictOfModules(run);
  if (run.unread_inputs.empty()) return (modules.passed ? "PASSED: " : "FAILED: ") + modules.text;
  // Never PASSED while a file went unread: its modules were not checked.
  const size_t n = run.unread_inputs.size();
  return fmt::format(
      "FAILED: {} file{} could not be read or parsed ({}{}), {} modules not checked; "
      "the others: {}",
      n, n == 1 ? "" : "s", run.unread_inputs.front().file,
      n > 1 ? fmt::format(" and {} more", n - 1) : "", n == 1 ? "its" : "their", modules.text);
}

void PrintCheckText(const CheckRun& run, std::ostream& out) {
  out << "spmdsim check: "
      << (run.has_baseline ? fmt::format("baseline {}, tolerance +{:g}%", run.baseline_file,
                                         run.options.tolerance_pct)
                           : std::string("no baseline"));
  if (run.options.max_peak_bytes) {
    out << ", --max-peak " << HumanBytes(*run.options.max_peak_bytes);
  }
  if (run.options.max_wire_bytes) {
    out << ", --max-wire " << HumanBytes(*run.options.max_wire_bytes);
  }
  if (run.options.must_fit) out << ", --must-fit";
  out << "\n";
  for (const ModuleCheck& m : run.modules) {
    const ModuleFigures& f = m.figures;
    out << fmt::format("module {} ({})  {}\n", f.name, f.stage, f.file);
    if (f.fit) out << "  " << FitVerdictLine(f.name, *f.fit) << "\n";
    // A module over its device: the three fixes that give the lowest peaks.
    if (f.fit && !f.fit->fits.value_or(true)) PrintFixesText(f.fixes, out, 3);
    if (m.match == BaselineMatch::kMissing) {
      out << "  " << OneSideText(m.match) << "\n";
      continue;
    }
    out << fmt::format(
        "  now: peak {}, temp {}, collectives {} per device per step, rng buffers {}, {} "
        "finding{}\n",
        HumanBytes(f.peak_bytes), HumanBytes(f.temp_bytes), HumanBytes(f.wire_bytes_per_device),
        HumanBytes(f.rng_materialized_bytes), f.findings.size(), f.findings.size() == 1 ? "" : "s");
    if (m.match == BaselineMatch::kNewModule) {
      out << "  " << OneSideText(m.match) << "\n";
    }
    if (!m.rows.empty()) {
      out << fmt::format("  {:<36} {:>12} {:>12} {:>22} {:>22}  {}\n", "metric", "baseline", "now",
                         "change", "limit", "status");
    }
    for (const CheckRow& row : m.rows) {
      out << fmt::format("  {:<36} {:>12} {:>12} {:>22} {:>22}  {}\n", row.MetricName(),
                         row.baseline ? CheckCellValue(row, *row.baseline) : "",
                         CheckCellValue(row, row.now), CheckCellChange(row), CheckCellLimit(row),
                         CheckCellStatus(row));
    }
    if (!m.grew.empty()) out << "  what grew at the peak:\n";
    for (const PeakGrowth& g : m.grew) out << "    " << g.Text() << "\n";
    for (const CheckedFinding& checked : m.findings) {
      if (!checked.is_new) continue;
      const CheckFinding& finding = checked.finding;
      const std::string scope = FindingScope(finding.op_name);
      out << fmt::format("  new finding {} ({}){}{}: {}\n", finding.kind, finding.severity,
                         scope.empty() ? "" : " in " + scope,
                         finding.source.empty() ? "" : " at " + finding.source, finding.message);
    }
  }
  out << CheckVerdict(run) << "\n";
}

}  // namespace spmdsim::analyzer
