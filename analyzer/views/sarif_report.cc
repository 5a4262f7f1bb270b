#include "analyzer/views/sarif_report.h"

#include <fmt/format.h>

#include <cctype>

#include "analyzer/views/check_view.h"
#include "analyzer/views/ci_formats.h"
#include "passes/finding_kinds.h"

namespace spmdsim::analyzer {
namespace {

constexpr std::string_view kSarifSchema = "https://json.schemastore.org/sarif-2.1.0.json";

// Index of the rule with this name in SarifRules().
size_t RuleIndex(std::string_view name) {
  const std::vector<SarifRule>& rules = SarifRules();
  for (size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].name == name) return i;
  }
  return 0;
}

// A baseline's finding kind is a name (it may come from another version of spmdsim).
size_t FindingRule(std::string_view kind) {
  if (const auto known = passes::ParseFindingKind(kind)) {
    return RuleIndex(passes::FindingName(*known));
  }
  return RuleIndex("rng-other-finding");
}

size_t RowRule(const CheckRow& row) {
  switch (row.metric) {
    case CheckMetric::kPeakBytes:
      return RuleIndex("peak-memory-regression");
    case CheckMetric::kTempBytes:
      return RuleIndex("temp-memory-regression");
    case CheckMetric::kRngMaterializedBytes:
      return RuleIndex("rng-memory-regression");
    case CheckMetric::kMaxPeak:
    case CheckMetric::kMustFit:
      return RuleIndex("peak-memory-limit");
    case CheckMetric::kMaxWire:
      return RuleIndex("collective-bytes-limit");
    case CheckMetric::kWireBytes:
    case CheckMetric::kWireBytesOfKind:
      return RuleIndex("collective-bytes-regression");
    case CheckMetric::kFindings:
      break;  // findings are reported one by one, by their own rules
  }
  return RuleIndex("collective-bytes-regression");
}

nlohmann::ordered_json Location(std::string_view path, int64_t line, const SarifOptions& options) {
  const std::string relative = RelativeTo(path, options.source_root);
  nlohmann::ordered_json artifact;
  artifact["uri"] = PathToUri(relative);
  if (!relative.empty() && relative.front() != '/') artifact["uriBaseId"] = "%SRCROOT%";
  nlohmann::ordered_json physical;
  physical["artifactLocation"] = std::move(artifact);
  if (line > 0) physical["region"] = {{"startLine", line}};
  return {{"physicalLocation", std::move(physical)}};
}

nlohmann::ordered_json Result(size_t rule, std::string_view level, const std::string& message,
                              nlohmann::ordered_json location, nlohmann::ordered_json properties) {
  nlohmann::ordered_json result;
  result["ruleId"] = std::string(SarifRules()[rule].id);
  result["ruleIndex"] = rule;
  result["level"] = std::string(level);
  result["message"] = {{"text", message}};
  result["locations"] = nlohmann::ordered_json::array({std::move(location)});
  result["properties"] = std::move(properties);
  return result;
}

}  // namespace

namespace {

// The rules of `check` and of findings this build does not know.
std::vector<SarifRule> CheckRules() {
  return {
      {"SPMD009", "rng-other-finding", "warning", "Another finding about random-number sites"},
      {"SPMD101", "peak-memory-regression", "error",
       "Peak memory per device rose over the baseline by more than the tolerance"},
      {"SPMD102", "temp-memory-regression", "error",
       "The temp allocation per device rose over the baseline by more than the tolerance"},
      {"SPMD103", "collective-bytes-regression", "error",
       "Collective bytes per device per step (in total or of one kind) rose over the baseline by "
       "more than the tolerance"},
      {"SPMD104", "rng-memory-regression", "error",
       "Memory of random-number buffers rose over the baseline by more than the tolerance"},
      {"SPMD201", "peak-memory-limit", "error", "Peak memory per device is over --max-peak"},
      {"SPMD202", "collective-bytes-limit", "error",
       "Collective bytes per device per step are over --max-wire"},
      {"SPMD301", "nothing-compared", "error",
       "The check compared nothing: no input module matches the baseline, or there was no "
       "baseline or limit to compare with"},
      {"SPMD302", "module-on-one-side", "warning",
       "A module is in the baseline but not among the inputs, or among the inputs but not in the "
       "baseline"},
      {"SPMD303", "unreadable-input", "error",
       "An input file could not be read or parsed: its modules were not checked"},
  };
}

}  // namespace

const std::vector<SarifRule>& SarifRules() {
  static const std::vector<SarifRule> kRules = [] {
    // The findings' rules come from their registry (passes/finding_kinds.h); the check's own
    // rules follow.
    std::vector<SarifRule> rules;
    for (const passes::FindingKindInfo& info : passes::FindingKinds()) {
      rules.push_back(
          {info.sarif_id, info.name, passes::SeverityName(info.severity), info.summary});
    }
    for (const SarifRule& rule : CheckRules()) rules.push_back(rule);
    return rules;
  }();
  return kRules;
}

std::string PathToUri(std::string_view path) {
  std::string out = !path.empty() && path.front() == '/' ? "file://" : "";
  for (const char c : path) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += c;
    } else {
      out += fmt::format("%{:02X}", byte);
    }
  }
  return out;
}

nlohmann::ordered_json SarifLog(const CheckRun& run, const SarifOptions& options) {
  nlohmann::ordered_json rules = nlohmann::ordered_json::array();
  for (const SarifRule& rule : SarifRules()) {
    rules.push_back({{"id", std::string(rule.id)},
                     {"name", std::string(rule.name)},
                     {"shortDescription", {{"text", std::string(rule.description)}}},
                     {"defaultConfiguration", {{"level", std::string(rule.level)}}}});
  }
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  if (!run.nothing_compared.empty()) {
    results.push_back(Result(RuleIndex("nothing-compared"), "error", run.nothing_compared,
                             Location(run.NothingComparedFile(), 0, options),
                             {{"baseline", run.baseline_file}}));
  }
  for (const CheckRun::UnreadInput& u : run.unread_inputs) {
    results.push_back(Result(RuleIndex("unreadable-input"), "error", u.message,
                             Location(u.file, 0, options), {{"file", u.file}}));
  }
  for (const ModuleCheck& m : run.modules) {
    const nlohmann::ordered_json module = {
        {"module", m.figures.name}, {"stage", m.figures.stage}, {"file", m.figures.file}};
    if (m.match == BaselineMatch::kMissing || m.match == BaselineMatch::kNewModule) {
      nlohmann::ordered_json properties = module;
      properties["baseline"] = BaselineMatchName(m.match);
      results.push_back(
          Result(RuleIndex("module-on-one-side"), "warning",
                 fmt::format("{} ({}): {}", m.figures.name, m.figures.stage, OneSideText(m.match)),
                 Location(m.figures.file, 0, options), std::move(properties)));
    }
    for (const CheckRow& row : m.rows) {
      if (row.status == CheckStatus::kOk || row.metric == CheckMetric::kFindings) continue;
      nlohmann::ordered_json properties = module;
      properties["metric"] = row.MetricName();
      properties["baseline"] =
          row.baseline ? nlohmann::ordered_json(*row.baseline) : nlohmann::ordered_json();
      properties["now"] = row.now;
      properties["limit"] = row.limit;
      // At the user's source line of the largest growth when known, else at the module's file.
      const SourceLocation where = SplitSource(row.source);
      results.push_back(Result(RowRule(row), "error", row.message,
                               row.source.empty() ? Location(m.figures.file, 0, options)
                                                  : Location(where.file, where.line, options),
                               std::move(properties)));
    }
    for (const CheckedFinding& checked : m.findings) {
      const CheckFinding& f = checked.finding;
      const SourceLocation where = SplitSource(f.source);
      nlohmann::ordered_json properties = module;
      properties["kind"] = f.kind;
      properties["op_name"] = f.op_name;
      properties["site"] = f.site;
      properties["bytes"] = f.bytes;
      properties["new"] = checked.is_new;
      const std::string_view level =
          checked.is_new ? "error" : (f.severity == "info" ? "note" : "warning");
      results.push_back(Result(FindingRule(f.kind), level, f.message,
                               f.source.empty() ? Location(m.figures.file, 0, options)
                                                : Location(where.file, where.line, options),
                               std::move(properties)));
    }
  }
  nlohmann::ordered_json driver;
  driver["name"] = "spmdsim";
  driver["version"] = options.tool_version;
  driver["rules"] = std::move(rules);
  nlohmann::ordered_json sarif_run;
  sarif_run["tool"] = {{"driver", std::move(driver)}};
  if (!options.source_root.empty()) {
    std::string root = PathToUri(options.source_root);
    if (root.back() != '/') root += '/';
    sarif_run["originalUriBaseIds"] = {{"%SRCROOT%", {{"uri", root}}}};
  }
  sarif_run["results"] = std::move(results);
  nlohmann::ordered_json log;
  log["$schema"] = std::string(kSarifSchema);
  log["version"] = "2.1.0";
  log["runs"] = nlohmann::ordered_json::array({std::move(sarif_run)});
  return log;
}

}  // namespace spmdsim::analyzer
