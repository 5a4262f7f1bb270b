#include "analyzer/model/check_result.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "analyzer/emit/human_units.h"
#include "analyzer/model/module_match.h"

namespace spmdsim::analyzer {
namespace {

std::string ModuleLabel(const ModuleFigures& m) { return fmt::format("{} ({})", m.name, m.stage); }

// baseline + baseline * tolerance / 100, rounded down, saturating at INT64_MAX.
int64_t ToleranceLimit(int64_t baseline, double tolerance_pct) {
  const long double limit =
      static_cast<long double>(baseline) * (1.0L + static_cast<long double>(tolerance_pct) / 100);
  if (limit >= static_cast<long double>(std::numeric_limits<int64_t>::max())) {
    return std::numeric_limits<int64_t>::max();
  }
  return std::max(baseline, static_cast<int64_t>(std::floor(limit)));
}

CheckRow CompareRow(const ModuleFigures& now_module, CheckMetric metric, int64_t baseline,
                    int64_t now, double tolerance_pct, std::string collective_kind = {}) {
  CheckRow row;
  row.metric = metric;
  row.collective_kind = std::move(collective_kind);
  row.baseline = baseline;
  row.now = now;
  row.limit = ToleranceLimit(baseline, tolerance_pct);
  row.limit_label = fmt::format("+{:g}%", tolerance_pct);
  if (now > row.limit) {
    row.status = CheckStatus::kRegressed;
    const std::optional<double> pct = row.ChangePct();
    row.message = fmt::format("{}: {} rose from {} to {} ({}{}), more than the {:g}% tolerance",
                              ModuleLabel(now_module), row.MetricName(), HumanBytes(baseline),
                              HumanBytes(now), HumanBytesDelta(now - baseline),
                              pct ? fmt::format(", {:+.2f}%", *pct) : std::string(), tolerance_pct);
  }
  return row;
}

CheckRow LimitRow(const ModuleFigures& m, CheckMetric metric, std::string flag, int64_t now,
                  int64_t limit) {
  CheckRow row;
  row.metric = metric;
  row.now = now;
  row.limit = limit;
  row.limit_label = std::move(flag);
  if (now > limit) {
    row.status = CheckStatus::kBreached;
    row.message =
        fmt::format("{}: {} is {}, over {} {} by {}", ModuleLabel(m),
                    row.metric == CheckMetric::kMaxPeak ? "peak memory per device"
                                                        : "collective bytes per device per step",
                    HumanBytes(now), row.limit_label, HumanBytes(limit), HumanBytes(now - limit));
  }
  return row;
}

// --must-fit: the peak against the usable memory of the module's device.
CheckRow MustFitRow(const ModuleFigures& m) {
  CheckRow row;
  row.metric = CheckMetric::kMustFit;
  row.now = m.peak_bytes;
  if (!m.fit || !m.fit->fits) {
    row.limit_label = "--must-fit: no device";
    row.limit_unknown = true;
    row.status = CheckStatus::kBreached;
    row.message =
        fmt::format("{}: --must-fit: no device to compare the peak {} with: {}", ModuleLabel(m),
                    HumanBytes(m.peak_bytes), m.fit ? m.fit->capacity.unknown : "not analysed");
    return row;
  }
  const DeviceCapacity& device = m.fit->capacity;
  row.limit = device.usable_bytes;
  row.limit_label = "--must-fit";
  if (!*m.fit->fits) {
    row.status = CheckStatus::kBreached;
    row.message = fmt::format(
        "{}: peak memory per device is {}, over the {} XLA gets on the {} "
        "by {}",
        ModuleLabel(m), HumanBytes(m.peak_bytes), HumanBytes(device.usable_bytes), device.display,
        HumanBytes(m.peak_bytes - device.usable_bytes));
  }
  return row;
}

void AddLimitRows(const CheckOptions& options, ModuleCheck& check) {
  const ModuleFigures& m = check.figures;
  if (options.must_fit) check.rows.push_back(MustFitRow(m));
  if (options.max_peak_bytes) {
    check.rows.push_back(
        LimitRow(m, CheckMetric::kMaxPeak, "--max-peak", m.peak_bytes, *options.max_peak_bytes));
  }
  if (options.max_wire_bytes) {
    check.rows.push_back(LimitRow(m, CheckMetric::kMaxWire, "--max-wire", m.wire_bytes_per_device,
                                  *options.max_wire_bytes));
  }
}

void AddComparisonRows(const ModuleFigures& base, const CheckOptions& options, ModuleCheck& check) {
  const ModuleFigures& now = check.figures;
  const double tol = options.tolerance_pct;
  check.rows.push_back(
      CompareRow(now, CheckMetric::kPeakBytes, base.peak_bytes, now.peak_bytes, tol));
  check.rows.push_back(
      CompareRow(now, CheckMetric::kTempBytes, base.temp_bytes, now.temp_bytes, tol));
  check.rows.push_back(CompareRow(now, CheckMetric::kWireBytes, base.wire_bytes_per_device,
                                  now.wire_bytes_per_device, tol));
  std::set<std::string> kinds;
  for (const auto& [kind, bytes] : base.wire_by_kind) kinds.insert(kind);
  for (const auto& [kind, bytes] : now.wire_by_kind) kinds.insert(kind);
  for (const std::string& kind : kinds) {
    const auto before = base.wire_by_kind.find(kind);
    const auto after = now.wire_by_kind.find(kind);
    check.rows.push_back(CompareRow(
        now, CheckMetric::kWireBytesOfKind, before == base.wire_by_kind.end() ? 0 : before->second,
        after == now.wire_by_kind.end() ? 0 : after->second, tol, kind));
  }
  check.rows.push_back(CompareRow(now, CheckMetric::kRngMaterializedBytes,
                                  base.rng_materialized_bytes, now.rng_materialized_bytes, tol));
  // A memory row that regressed says what grew at the peak, and where in the user's program: the
  // peak and temp rows any group, the RNG row the random bits'.
  const std::vector<PeakGrowth> grew = PeakGrowthOf(base.peak, now.peak, 16);
  for (CheckRow& row : check.rows) {
    if (row.status != CheckStatus::kRegressed) continue;
    const bool rng = row.metric == CheckMetric::kRngMaterializedBytes;
    if (!rng && row.metric != CheckMetric::kPeakBytes && row.metric != CheckMetric::kTempBytes) {
      continue;
    }
    std::vector<PeakGrowth> shown;
    for (const PeakGrowth& g : grew) {
      if ((!rng || g.category == "random bits") && shown.size() < 3) shown.push_back(g);
    }
    if (shown.empty()) continue;
    row.message += ". What grew at the peak: ";
    for (size_t i = 0; i < shown.size(); ++i) row.message += (i > 0 ? "; " : "") + shown[i].Text();
    row.source = shown.front().group.source;
    if (!rng || check.grew.empty()) check.grew = shown;
  }

  std::set<std::pair<std::string, std::string>> known;
  for (const CheckFinding& f : base.findings) known.insert({f.kind, f.op_name});
  int64_t fresh = 0;
  for (CheckedFinding& f : check.findings) {
    f.is_new = !known.count({f.finding.kind, f.finding.op_name});
    fresh += f.is_new ? 1 : 0;
  }
  CheckRow row;
  row.metric = CheckMetric::kFindings;
  row.is_count = true;
  row.baseline = static_cast<int64_t>(base.findings.size());
  row.now = static_cast<int64_t>(now.findings.size());
  row.limit = row.now - fresh;  // every finding now that the baseline already had
  row.limit_label = "no new";
  if (fresh > 0) {
    row.status = CheckStatus::kRegressed;
    row.message = fmt::format("{}: {} new finding{} not in the baseline", ModuleLabel(now), fresh,
                              fresh == 1 ? "" : "s");
  }
  check.rows.push_back(std::move(row));
}

// "a (after_optimizations), b (before_optimizations)", at most `limit` of them.
std::string ModuleList(const std::vector<ModuleFigures>& modules, size_t limit = 6) {
  std::string out;
  for (size_t i = 0; i < modules.size() && i < limit; ++i) {
    out += (i == 0 ? "" : ", ") + ModuleLabel(modules[i]);
  }
  if (modules.size() > limit) out += fmt::format(" and {} more", modules.size() - limit);
  return out.empty() ? "none" : out;
}

// Why a run compared nothing, or "" when it compared something. A baseline that matches no input
// is a failure even when limits were checked: the comparison the user asked for did not happen.
std::string NothingCompared(const CheckRun& run, const std::vector<ModuleFigures>& now,
                            const std::vector<ModuleFigures>& base, const CheckOptions& options) {
  if (now.empty()) {
    return "no module among the inputs (with --stage, none of that stage): check the paths and "
           "--stage";
  }
  bool matched = false;
  int64_t rows = 0;
  for (const ModuleCheck& m : run.modules) {
    matched = matched || m.match == BaselineMatch::kMatched;
    rows += static_cast<int64_t>(m.rows.size());
  }
  if (run.has_baseline && !matched) {
    return fmt::format(
        "no module of the inputs matches a module of the baseline. Modules match by HloModule "
        "name and stage; the baseline holds {}, the inputs hold {}. Pass the dump the baseline "
        "was written from, select modules with --module and --stage, or write a new baseline "
        "with --write-baseline",
        ModuleList(base), ModuleList(now));
  }
  if (rows == 0 && !options.writing_baseline) {
    return "nothing to compare with: give --baseline FILE (written by --write-baseline), "
           "--max-peak SIZE or --max-wire SIZE";
  }
  return "";
}

}  // namespace

std::string CheckMetricName(CheckMetric metric, std::string_view collective_kind) {
  switch (metric) {
    case CheckMetric::kPeakBytes:
      return "peak_bytes";
    case CheckMetric::kTempBytes:
      return "temp_bytes";
    case CheckMetric::kWireBytes:
      return "wire_bytes_per_device";
    case CheckMetric::kWireBytesOfKind:
      return "wire_bytes_per_device[" + std::string(collective_kind) + "]";
    case CheckMetric::kRngMaterializedBytes:
      return "rng_materialized_bytes";
    case CheckMetric::kFindings:
      return "findings";
    case CheckMetric::kMaxPeak:
      return "max_peak";
    case CheckMetric::kMaxWire:
      return "max_wire";
    case CheckMetric::kMustFit:
      return "must_fit";
  }
  return "unknown";
}

const char* CheckStatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kOk:
      return "ok";
    case CheckStatus::kRegressed:
      return "regressed";
    case CheckStatus::kBreached:
      return "breached";
  }
  return "ok";
}

const char* BaselineMatchName(BaselineMatch match) {
  switch (match) {
    case BaselineMatch::kNone:
      return "none";
    case BaselineMatch::kMatched:
      return "matched";
    case BaselineMatch::kNewModule:
      return "new-module";
    case BaselineMatch::kMissing:
      return "missing";
  }
  return "none";
}

std::optional<double> CheckRow::ChangePct() const {
  if (!baseline) return std::nullopt;
  if (*baseline == 0) return now == 0 ? std::optional<double>(0.0) : std::nullopt;
  return (static_cast<double>(now) - static_cast<double>(*baseline)) * 100.0 /
         static_cast<double>(*baseline);
}

bool ModuleCheck::Passed() const {
  for (const CheckRow& row : rows) {
    if (row.status != CheckStatus::kOk) return false;
  }
  return true;
}

bool CheckRun::Passed() const {
  if (!nothing_compared.empty() || !unread_inputs.empty()) return false;
  for (const ModuleCheck& m : modules) {
    if (!m.Passed()) return false;
  }
  return true;
}

std::string CheckRun::NothingComparedFile() const {
  if (!baseline_file.empty() || modules.empty()) return baseline_file;
  return modules.front().figures.file;
}

int64_t CheckRun::CountRows(CheckStatus status) const {
  int64_t count = 0;
  for (const ModuleCheck& m : modules) {
    for (const CheckRow& row : m.rows) count += row.status == status ? 1 : 0;
  }
  return count;
}

int64_t CheckRun::NewFindings() const {
  int64_t count = 0;
  for (const ModuleCheck& m : modules) {
    for (const CheckedFinding& f : m.findings) count += f.is_new ? 1 : 0;
  }
  return count;
}

CheckRun RunChecks(const std::vector<ModuleFigures>& now,
                   const std::vector<ModuleFigures>* baseline, const CheckOptions& options) {
  CheckRun run;
  run.options = options;
  run.has_baseline = baseline != nullptr;
  const std::vector<ModuleFigures> none;
  const std::vector<ModuleFigures>& base = baseline ? *baseline : none;
  std::vector<ModuleKey> now_keys;
  std::vector<ModuleKey> base_keys;
  for (const ModuleFigures& m : now) now_keys.push_back({m.name, m.stage});
  for (const ModuleFigures& m : base) base_keys.push_back({m.name, m.stage});
  for (const ModulePair& pair : MatchModules(now_keys, base_keys)) {
    ModuleCheck check;
    if (!pair.a) {
      check.figures = base[*pair.b];
      check.match = BaselineMatch::kMissing;
      run.modules.push_back(std::move(check));
      continue;
    }
    check.figures = now[*pair.a];
    for (const CheckFinding& f : check.figures.findings) check.findings.push_back({f, false});
    if (pair.b) {
      check.match = BaselineMatch::kMatched;
      AddComparisonRows(base[*pair.b], options, check);
    } else {
      check.match = baseline ? BaselineMatch::kNewModule : BaselineMatch::kNone;
    }
    AddLimitRows(options, check);
    run.modules.push_back(std::move(check));
  }
  run.nothing_compared = NothingCompared(run, now, base, options);
  return run;
}

}  // namespace spmdsim::analyzer
