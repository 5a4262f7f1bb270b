#include "cuda_validate/prediction.h"

#include <nlohmann/json.hpp>

namespace spmdsim::validate {
namespace {

using nlohmann::json;

// Reads one site; throws std::runtime_error with the field at fault.
Site ReadSite(const json& j, int64_t default_shards, const std::string& where) {
  const auto fail = [&](const std::string& what) { throw std::runtime_error(where + ": " + what); };
  Site site;
  site.name = j.value("name", where);
  if (!j.contains("shape") || !j.at("shape").is_array()) fail("\"shape\" must be an array of dims");
  for (const json& dim : j.at("shape")) {
    if (!dim.is_number_integer()) fail("\"shape\" must hold integers");
    site.shape.push_back(dim.get<int64_t>());
  }
  const std::string dtype = j.value("dtype", "u32");
  if (dtype != "u32") {
    fail("dtype \"" + dtype + "\": only u32 sites (the bits of an f32 dropout) are validated");
  }
  site.shards = j.value("shards", default_shards);
  site.shard_index = j.value("shard_index", int64_t{0});
  if (j.contains("key")) {
    const json& key = j.at("key");
    if (!key.is_array() || key.size() != 2 || !key[0].is_number_unsigned() ||
        !key[1].is_number_unsigned() || key[0].get<uint64_t>() > 0xFFFFFFFFu ||
        key[1].get<uint64_t>() > 0xFFFFFFFFu) {
      fail("\"key\" must be two u32 words [k0, k1]");
    }
    site.key = Pair32{key[0].get<uint32_t>(), key[1].get<uint32_t>()};
  }
  site.keep_prob = j.value("keep_prob", site.keep_prob);
  return site;
}

int64_t ReadBytes(const json& value, const std::string& where) {
  const json& bytes = value.is_object() ? value.value("materialized_bytes", json()) : value;
  if (!bytes.is_number_integer() || bytes.get<int64_t>() < 0) {
    throw std::runtime_error(where + ": \"materialized_bytes\" must be a non-negative integer");
  }
  return bytes.get<int64_t>();
}

Lowering ReadLowering(const std::string& name, const std::string& where) {
  const std::optional<Lowering> lowering = ParseLowering(name);
  if (!lowering) {
    throw std::runtime_error(where + ": unknown mode \"" + name +
                             "\" (expected replicated, partitionable, custom_call or fused)");
  }
  return *lowering;
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
      const int64_t default_shards = module.value("num_partitions", int64_t{1});
      const json& sites = module.at("rng").value("sites", json::array());
      for (size_t s = 0; s < sites.size(); ++s) {
        const std::string where =
            path + ": modules[" + std::to_string(m) + "].rng.sites[" + std::to_string(s) + "]";
        const json& j = sites[s];
        if (!j.is_object()) throw std::runtime_error(where + ": a site must be an object");
        const Site site = ReadSite(j, default_shards, where);
        ValidationJob job{site, ReadLowering(j.value("mode", ""), where),
                          ReadBytes(j.value("materialized_bytes", json()), where), where};
        out.jobs.push_back(job);
        const json whatif = j.value("whatif", json::object());
        for (const auto& [name, value] : whatif.items()) {
          const std::string what = where + ".whatif." + name;
          out.jobs.push_back(
              ValidationJob{site, ReadLowering(name, what), ReadBytes(value, what), what});
        }
      }
    }
  } catch (const std::exception& e) {
    out.jobs.clear();
    out.error = e.what();
    if (out.error.rfind(path, 0) != 0) out.error = path + ": " + out.error;
    return out;
  }
  if (out.jobs.empty()) out.error = path + ": no RNG sites (modules[].rng.sites[]) to validate";
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
    out.jobs.push_back(ValidationJob{site, lowering, PredictedBytes(lowering, *sizes), "formula"});
  }
  return out;
}

}  // namespace spmdsim::validate
