#include "cuda_validate/prediction.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "ir/checked_math.h"

namespace spmdsim::validate {
namespace {

using nlohmann::json;

[[noreturn]] void Fail(const std::string& where, const std::string& what) {
  throw std::runtime_error(where + ": " + what);
}

std::optional<int64_t> OptionalCount(const json& j, const std::string& field,
                                     const std::string& where) {
  if (!j.contains(field)) return std::nullopt;
  const json& value = j.at(field);
  if (!value.is_number_integer() || value.get<int64_t>() < 0) {
    Fail(where, "\"" + field + "\" must be a non-negative integer");
  }
  return value.get<int64_t>();
}

std::string OptionalString(const json& j, const std::string& field, const std::string& fallback,
                           const std::string& where) {
  if (!j.contains(field)) return fallback;
  if (!j.at(field).is_string()) Fail(where, "\"" + field + "\" must be a string");
  return j.at(field).get<std::string>();
}

// spmdsim's what-if figure for one mode: whatif.<mode>.memory_bytes, or nullopt when absent.
std::optional<int64_t> WhatIfBytes(const json& site, const std::string& mode,
                                   const std::string& where) {
  if (!site.contains("whatif")) return std::nullopt;
  const json& whatif = site.at("whatif");
  if (!whatif.is_object()) Fail(where, "\"whatif\" must be an object");
  if (!whatif.contains(mode)) return std::nullopt;
  const std::string field = where + ".whatif." + mode;
  if (!whatif.at(mode).is_object()) Fail(field, "must be {\"memory_bytes\": ..., ...}");
  const std::optional<int64_t> bytes = OptionalCount(whatif.at(mode), "memory_bytes", field);
  if (!bytes) Fail(field, "\"memory_bytes\" is missing");
  return bytes;
}

std::string FormulaText(Lowering lowering) {
  switch (lowering) {
    case Lowering::kReplicated:
      return "formula: 4w counters + 4w hash outputs + nl mask";
    case Lowering::kPartitionableMaterialized:
      return "formula: (4+4+4+4+1) nl";
    case Lowering::kCustomCall:
      return "formula: (4*6+1) nl";
    case Lowering::kFused:
      return "formula: nl mask";
  }
  return "formula";
}

// Reads one of spmdsim's sites into `site`. Returns why it cannot run here (empty: it can);
// throws std::runtime_error naming the field for malformed input.
std::string ReadSite(const json& j, const json& module, const std::string& where, Site& site) {
  site.name = OptionalString(j, "name", where, where);
  const std::string purpose = OptionalString(j, "purpose", "bits", where);
  if (purpose != "bits") return "purpose " + purpose + ": key derivation, not random bits";
  const std::string dtype = OptionalString(j, "dtype", "u32", where);
  if (dtype != "u32") return "dtype " + dtype + ": only u32 bits (an f32 dropout) run here";
  if (!j.contains("mode")) Fail(where, "\"mode\" is missing");
  const std::string mode = OptionalString(j, "mode", "", where);
  if (mode == "rbg") return "mode rbg: rng-bit-generator, not threefry; no lowering here runs it";
  if (mode == "unknown") return "mode unknown: spmdsim could not tell the counter scheme";
  if (!ParseLowering(mode)) return "mode " + mode + ": no lowering here runs it";

  if (!j.contains("shape") || !j.at("shape").is_array()) {
    Fail(where, "\"shape\" must be an array of dims");
  }
  std::vector<int64_t> local_shape;
  int64_t local = 1;
  for (const json& dim : j.at("shape")) {
    if (!dim.is_number_integer() || dim.get<int64_t>() < 0) {
      Fail(where, "\"shape\" must hold non-negative integers");
    }
    local_shape.push_back(dim.get<int64_t>());
    const std::optional<int64_t> product = ir::CheckedMul(local, local_shape.back());
    if (!product) return "shape: element count overflows int64";
    local = *product;
  }
  if (local_shape.empty())
    return "shape []: the harness shards along dimension 0, a scalar has none";
  const std::optional<int64_t> local_elements = OptionalCount(j, "local_elements", where);
  if (local_elements && *local_elements != local) {
    Fail(where, "\"local_elements\" " + std::to_string(*local_elements) +
                    " disagrees with \"shape\" (" + std::to_string(local) + " elements)");
  }
  const std::optional<int64_t> global_elements = OptionalCount(j, "global_elements", where);
  std::optional<int64_t> shards = OptionalCount(j, "shards", where);
  if (!shards && global_elements && local > 0 && *global_elements % local == 0) {
    shards = *global_elements / local;
  }
  if (!shards) shards = module.value("num_partitions", int64_t{1});
  if (*shards < 1) Fail(where, "\"shards\" must be at least 1");
  const std::optional<int64_t> dim0 = ir::CheckedMul(local_shape[0], *shards);
  const std::optional<int64_t> global = ir::CheckedMul(local, *shards);
  if (!dim0 || !global) return "shape x shards overflows int64";
  if (global_elements && *global_elements != *global) {
    return "global_elements " + std::to_string(*global_elements) + " is not shards (" +
           std::to_string(*shards) + ") x the per-device shape: the shard cannot be placed";
  }
  site.shape = local_shape;
  site.shape[0] = *dim0;
  site.shards = *shards;
  site.shard_index = j.value("shard_index", int64_t{0});
  if (j.contains("key")) {
    const json& key = j.at("key");
    if (!key.is_array() || key.size() != 2 || !key[0].is_number_unsigned() ||
        !key[1].is_number_unsigned() || key[0].get<uint64_t>() > 0xFFFFFFFFu ||
        key[1].get<uint64_t>() > 0xFFFFFFFFu) {
      Fail(where, "\"key\" must be two u32 words [k0, k1]");
    }
    site.key = Pair32{key[0].get<uint32_t>(), key[1].get<uint32_t>()};
  }
  site.keep_prob = j.value("keep_prob", site.keep_prob);
  return "";
}

// The spmdsim what-if mode whose figure predicts a lowering, when its model is the lowering's.
const char* SpmdsimModeOf(Lowering lowering) {
  switch (lowering) {
    case Lowering::kPartitionableMaterialized:
      return "partitionable";
    case Lowering::kFused:
      return "fused";
    case Lowering::kReplicated:
    case Lowering::kCustomCall:
      return nullptr;
  }
  return nullptr;
}

// The job of one lowering of a runnable site; an empty reason, or why it is skipped.
std::string MakeJob(const json& j, const Site& site, const SiteSizes& sizes, Lowering lowering,
                    const std::string& where, ValidationJob& job) {
  job = ValidationJob{site, lowering, PredictedBytes(lowering, sizes), "formula",
                      FormulaText(lowering)};
  const std::string limit = LoweringLimitError(lowering, sizes);
  if (!limit.empty()) return std::string(LoweringName(lowering)) + ": " + limit;
  const auto add_mask = [&](int64_t bytes, const std::string& field) -> std::string {
    const std::optional<int64_t> total = ir::CheckedAdd(bytes, sizes.local_elements);
    if (!total) return std::string(LoweringName(lowering)) + ": " + field + " overflows int64";
    job.predicted_bytes = *total;
    job.prediction_source = "spmdsim";
    job.prediction_detail = where + "." + field + " (" + std::to_string(bytes) + ") + nl mask (" +
                            std::to_string(sizes.local_elements) + ")";
    return "";
  };
  if (const char* mode = SpmdsimModeOf(lowering)) {
    if (const std::optional<int64_t> bytes = WhatIfBytes(j, mode, where)) {
      return add_mask(*bytes, std::string("whatif.") + mode + ".memory_bytes");
    }
    const std::optional<int64_t> materialized = OptionalCount(j, "materialized_bytes", where);
    if (materialized && ParseLowering(j.at("mode").get<std::string>()) == lowering) {
      return add_mask(*materialized, "materialized_bytes");
    }
  } else if (lowering == Lowering::kReplicated) {
    if (const std::optional<int64_t> bytes = WhatIfBytes(j, "replicated", where)) {
      job.prediction_detail += "; spmdsim's whatif.replicated.memory_bytes (" +
                               std::to_string(*bytes) +
                               ") models XLA's partitioned hash and all-gathers, not judged here";
    }
  }
  return "";
}

}  // namespace

JobsOutcome JobsFromPredictionJson(const std::string& text, const std::string& path) {
  JobsOutcome out;
  try {
    const json doc = json::parse(text);
    if (!doc.is_object() || !doc.contains("modules") || !doc.at("modules").is_array()) {
      out.error =
          path + ": expected spmdsim JSON output: {\"schema_version\": 1, \"modules\": [...]}";
      return out;
    }
    const json& modules = doc.at("modules");
    for (size_t m = 0; m < modules.size(); ++m) {
      const json& module = modules[m];
      if (!module.is_object() || !module.contains("rng")) continue;
      const std::string rng_where = "modules[" + std::to_string(m) + "].rng";
      const json& rng = module.at("rng");
      if (!rng.is_object()) Fail(path + ": " + rng_where, "must be an object");
      const json sites = rng.value("sites", json::array());
      if (!sites.is_array()) Fail(path + ": " + rng_where, "\"sites\" must be an array");
      for (size_t s = 0; s < sites.size(); ++s) {
        const std::string where = rng_where + ".sites[" + std::to_string(s) + "]";
        const json& j = sites[s];
        if (!j.is_object()) Fail(path + ": " + where, "a site must be an object");
        Site site;
        std::string reason = ReadSite(j, module, path + ": " + where, site);
        std::optional<SiteSizes> sizes;
        if (reason.empty()) {
          sizes = ComputeSizes(site, reason);
          if (!sizes && reason.empty()) reason = "the harness cannot size this site";
        }
        if (!sizes) {
          out.skipped.push_back(SkippedSite{site.name, where, reason});
          continue;
        }
        for (const Lowering lowering : kAllLowerings) {
          ValidationJob job;
          const std::string why = MakeJob(j, site, *sizes, lowering, where, job);
          if (why.empty()) {
            out.jobs.push_back(std::move(job));
          } else {
            out.skipped.push_back(SkippedSite{site.name, where, why});
          }
        }
      }
    }
  } catch (const std::exception& e) {
    out.jobs.clear();
    out.skipped.clear();
    out.error = e.what();
    if (out.error.rfind(path, 0) != 0) out.error = path + ": " + out.error;
    return out;
  }
  if (out.jobs.empty()) {
    out.error = path + ": no runnable RNG site (modules[].rng.sites[]) to validate";
    if (!out.skipped.empty()) {
      out.error += " (" + std::to_string(out.skipped.size()) +
                   " skipped; first: " + out.skipped.front().where + " " +
                   out.skipped.front().site + ": " + out.skipped.front().reason + ")";
    }
  }
  return out;
}

JobsOutcome JobsFromSite(const Site& site, const std::vector<Lowering>& lowerings) {
  JobsOutcome out;
  std::string error;
  const std::optional<SiteSizes> sizes = ComputeSizes(site, error);
  if (!sizes) {
    out.error = error;
    return out;
  }
  for (const Lowering lowering : lowerings) {
    out.jobs.push_back(ValidationJob{site, lowering, PredictedBytes(lowering, *sizes), "formula",
                                     FormulaText(lowering)});
  }
  return out;
}

}  // namespace spmdsim::validate
