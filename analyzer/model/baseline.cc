#include "analyzer/model/baseline.h"

#include <fmt/format.h>

#include <limits>

#include "analyzer/emit/json_text.h"
#include "ir/json_input.h"
#include "ir/limits.h"

namespace spmdsim::analyzer {
namespace {

using nlohmann::json;

// A value found where another was expected, for an error message: a scalar as written, an array
// or object by its type (writing one out would copy and recurse through all of its nesting).
std::string Describe(const json& value) {
  if (value.is_structured()) return std::string("an ") + value.type_name();
  return JsonText(value, -1);
}

// Reads `object[key]` as a non-negative int64; false (and `error`) otherwise.
bool ReadBytes(const json& object, const char* key, const std::string& where, int64_t& value,
               std::string& error) {
  const auto it = object.find(key);
  if (it == object.end()) {
    error = fmt::format("{}.{}: missing", where, key);
    return false;
  }
  if (it->is_number_unsigned() &&
      it->get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    value = static_cast<int64_t>(it->get<uint64_t>());
    return true;
  }
  if (it->is_number_integer() && it->get<int64_t>() >= 0) {
    value = it->get<int64_t>();
    return true;
  }
  error =
      fmt::format("{}.{}: expected a non-negative integer, found {}", where, key, Describe(*it));
  return false;
}

bool ReadString(const json& object, const char* key, const std::string& where, bool required,
                std::string& value, std::string& error) {
  const auto it = object.find(key);
  if (it == object.end()) {
    if (!required) return true;
    error = fmt::format("{}.{}: missing", where, key);
    return false;
  }
  if (!it->is_string()) {
    error = fmt::format("{}.{}: expected a string, found {}", where, key, Describe(*it));
    return false;
  }
  value = it->get<std::string>();
  return true;
}

bool ReadFinding(const json& j, const std::string& where, CheckFinding& finding,
                 std::string& error) {
  if (!j.is_object()) {
    error = where + ": expected an object";
    return false;
  }
  return ReadString(j, "kind", where, true, finding.kind, error) &&
         ReadString(j, "op_name", where, true, finding.op_name, error) &&
         ReadString(j, "site", where, false, finding.site, error) &&
         (!j.contains("bytes") || ReadBytes(j, "bytes", where, finding.bytes, error));
}

bool ReadModule(const json& j, const std::string& where, ModuleFigures& m, std::string& error) {
  if (!j.is_object()) {
    error = where + ": expected an object";
    return false;
  }
  if (!ReadString(j, "name", where, true, m.name, error) ||
      !ReadString(j, "stage", where, true, m.stage, error) ||
      !ReadString(j, "file", where, false, m.file, error)) {
    return false;
  }
  const std::pair<const char*, int64_t*> sizes[] = {
      {"peak_bytes", &m.peak_bytes},
      {"temp_bytes", &m.temp_bytes},
      {"argument_bytes", &m.argument_bytes},
      {"output_bytes", &m.output_bytes},
      {"alias_bytes", &m.alias_bytes},
      {"wire_bytes_per_device", &m.wire_bytes_per_device},
      {"rng_materialized_bytes", &m.rng_materialized_bytes},
  };
  for (const auto& [key, value] : sizes) {
    if (!ReadBytes(j, key, where, *value, error)) return false;
  }
  if (const auto it = j.find("wire_by_kind"); it != j.end()) {
    if (!it->is_object()) {
      error = where + ".wire_by_kind: expected an object of kind -> bytes";
      return false;
    }
    for (const auto& [kind, bytes] : it->items()) {
      int64_t value = 0;
      if (!ReadBytes(*it, kind.c_str(), where + ".wire_by_kind", value, error)) return false;
      m.wire_by_kind[kind] = value;
    }
  }
  if (const auto it = j.find("findings"); it != j.end()) {
    if (!it->is_array()) {
      error = where + ".findings: expected an array";
      return false;
    }
    for (size_t i = 0; i < it->size(); ++i) {
      CheckFinding finding;
      if (!ReadFinding((*it)[i], fmt::format("{}.findings[{}]", where, i), finding, error)) {
        return false;
      }
      m.findings.push_back(std::move(finding));
    }
  }
  // What was live at the peak (optional: older baselines lack it).
  if (const auto it = j.find("peak_by_category"); it != j.end()) {
    if (!it->is_object()) {
      error = where + ".peak_by_category: expected an object of category -> bytes";
      return false;
    }
    for (const auto& [category, bytes] : it->items()) {
      int64_t value = 0;
      if (!ReadBytes(*it, category.c_str(), where + ".peak_by_category", value, error)) {
        return false;
      }
      m.peak.bytes_by_category[category] = value;
    }
  }
  if (const auto it = j.find("peak_groups"); it != j.end()) {
    if (!it->is_array() || it->size() > kPeakGroupsKept) {
      error = fmt::format("{}.peak_groups: expected an array of at most {} groups", where,
                          kPeakGroupsKept);
      return false;
    }
    for (size_t i = 0; i < it->size(); ++i) {
      const json& g = (*it)[i];
      const std::string at = fmt::format("{}.peak_groups[{}]", where, i);
      if (!g.is_object()) {
        error = at + ": expected an object";
        return false;
      }
      PeakGroup group;
      if (!ReadString(g, "category", at, true, group.category, error) ||
          !ReadString(g, "op_name", at, false, group.op_name, error) ||
          !ReadString(g, "shape", at, true, group.shape, error) ||
          !ReadString(g, "source", at, false, group.source, error) ||
          !ReadBytes(g, "buffers", at, group.buffers, error) ||
          !ReadBytes(g, "bytes", at, group.bytes, error)) {
        return false;
      }
      m.peak.groups.push_back(std::move(group));
    }
  }
  return true;
}

}  // namespace

ModuleFigures FiguresFromReport(const ModuleReport& report) {
  ModuleFigures m;
  m.name = std::string(report.input->module->name);
  m.file = report.input->path;
  m.stage = dump::ModuleStageName(report.input->stage);
  m.fit = report.fit;
  m.fixes = report.fixes;
  const passes::PeakMemoryResult& memory = report.memory.prediction;
  m.peak_bytes = memory.peak_bytes;
  m.temp_bytes = memory.temp_bytes;
  m.argument_bytes = memory.argument_bytes;
  m.output_bytes = memory.output_bytes;
  m.alias_bytes = memory.alias_bytes;
  m.wire_bytes_per_device = report.collectives.total_wire_bytes_per_device;
  for (const auto& [kind, totals] : report.collectives.by_kind) {
    m.wire_by_kind[kind] = totals.wire_bytes_per_device;
  }
  m.rng_materialized_bytes = report.rng.totals.materialized_bytes;
  m.peak = ComposePeak(memory, report.rng);
  for (const passes::RngFinding& f : report.rng.findings) {
    m.findings.push_back({std::string(passes::FindingName(f.kind)), f.op_name, f.site, f.bytes,
                          std::string(passes::SeverityName(f.severity)), f.source, f.message});
  }
  return m;
}

nlohmann::ordered_json FiguresToJson(const ModuleFigures& m) {
  nlohmann::ordered_json j;
  j["peak_bytes"] = m.peak_bytes;
  j["temp_bytes"] = m.temp_bytes;
  j["argument_bytes"] = m.argument_bytes;
  j["output_bytes"] = m.output_bytes;
  j["alias_bytes"] = m.alias_bytes;
  j["wire_bytes_per_device"] = m.wire_bytes_per_device;
  j["wire_by_kind"] = nlohmann::ordered_json::object();
  for (const auto& [kind, bytes] : m.wire_by_kind) j["wire_by_kind"][kind] = bytes;
  j["rng_materialized_bytes"] = m.rng_materialized_bytes;
  return j;
}

nlohmann::ordered_json BaselineToJson(const std::vector<ModuleFigures>& modules) {
  nlohmann::ordered_json out;
  out["schema_version"] = kBaselineSchemaVersion;
  out["kind"] = std::string(kBaselineKind);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ModuleFigures& m : modules) {
    nlohmann::ordered_json j;
    j["name"] = m.name;
    j["file"] = m.file;
    j["stage"] = m.stage;
    const nlohmann::ordered_json figures = FiguresToJson(m);
    for (auto it = figures.begin(); it != figures.end(); ++it) j[it.key()] = it.value();
    nlohmann::ordered_json findings = nlohmann::ordered_json::array();
    for (const CheckFinding& f : m.findings) {
      findings.push_back(
          {{"kind", f.kind}, {"op_name", f.op_name}, {"site", f.site}, {"bytes", f.bytes}});
    }
    j["findings"] = std::move(findings);
    nlohmann::ordered_json categories = nlohmann::ordered_json::object();
    for (const auto& [category, bytes] : m.peak.bytes_by_category) categories[category] = bytes;
    j["peak_by_category"] = std::move(categories);
    nlohmann::ordered_json groups = nlohmann::ordered_json::array();
    for (const PeakGroup& g : m.peak.groups) {
      groups.push_back({{"category", g.category},
                        {"op_name", g.op_name},
                        {"shape", g.shape},
                        {"source", g.source},
                        {"buffers", g.buffers},
                        {"bytes", g.bytes}});
    }
    j["peak_groups"] = std::move(groups);
    list.push_back(std::move(j));
  }
  out["modules"] = std::move(list);
  return out;
}

std::optional<std::vector<ModuleFigures>> ParseBaseline(std::string_view text, std::string& error) {
  std::optional<json> parsed = ir::ParseJsonInput(text, error);
  if (!parsed) return std::nullopt;
  const json& j = *parsed;
  // Members are looked at in place: json::value() would copy them, recursing through however
  // deep the file nests them.
  const auto kind = j.is_object() ? j.find("kind") : j.end();
  if (kind == j.end() || !kind->is_string() ||
      kind->get_ref<const std::string&>() != kBaselineKind) {
    error = fmt::format(
        "not an spmdsim baseline (expected \"kind\": \"{}\"; write one with "
        "`spmdsim check --write-baseline FILE`)",
        kBaselineKind);
    return std::nullopt;
  }
  const auto version = j.find("schema_version");
  if (version == j.end() || version->is_structured() || *version != json(kBaselineSchemaVersion)) {
    error = fmt::format("schema_version {} is not supported (this spmdsim reads {})",
                        version == j.end() ? "null" : Describe(*version), kBaselineSchemaVersion);
    return std::nullopt;
  }
  const auto modules = j.find("modules");
  if (modules == j.end() || !modules->is_array()) {
    error = "modules: expected an array";
    return std::nullopt;
  }
  std::vector<ModuleFigures> result;
  for (size_t i = 0; i < modules->size(); ++i) {
    ModuleFigures m;
    if (!ReadModule((*modules)[i], fmt::format("modules[{}]", i), m, error)) return std::nullopt;
    result.push_back(std::move(m));
  }
  return result;
}

}  // namespace spmdsim::analyzer
