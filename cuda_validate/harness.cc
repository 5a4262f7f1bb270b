#include "cuda_validate/harness.h"

#include <cmath>
#include <cstdio>
#include <map>

namespace spmdsim::validate {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ",";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

// What a reference depends on.
struct ReferenceKey {
  std::vector<int64_t> shape;
  int64_t shards;
  int64_t shard_index;
  uint32_t k0;
  uint32_t k1;
  float keep_prob;
  bool replicated;
  auto operator<=>(const ReferenceKey&) const = default;
};

JobResult RunJob(const ValidationJob& job, Backend& backend, const HarnessOptions& options,
                 const DevicePeaks& peaks, std::map<ReferenceKey, Reference>& refs) {
  JobResult r;
  r.job = job;
  std::string error;
  const std::optional<SiteSizes> sizes = ComputeSizes(job.site, error);
  if (!sizes) {
    r.error = error;
    return r;
  }
  r.sizes = *sizes;
  r.error = LoweringLimitError(job.lowering, *sizes);
  if (!r.error.empty()) return r;
  const LoweringPlan plan = MakePlan(job.lowering, job.site, *sizes);
  RunOptions run_options = options.run;
  run_options.collect_outputs = options.check_bits;
  const LoweringRun run = backend.Run(plan, run_options);
  if (!run.error.empty()) {
    r.error = run.error;
    return r;
  }
  r.measured_bytes = run.measured_bytes;
  r.requested_bytes = run.requested_bytes;
  r.error_pct = job.predicted_bytes > 0
                    ? 100.0 * static_cast<double>(run.measured_bytes - job.predicted_bytes) /
                          static_cast<double>(job.predicted_bytes)
                    : (run.measured_bytes == 0 ? 0.0 : 100.0);
  r.within_tolerance = std::fabs(r.error_pct) <= options.tolerance_pct;
  r.time_ms = run.time_ms;
  r.traffic_bytes = TrafficBytes(job.lowering, *sizes);
  r.hashes = HashCount(job.lowering, *sizes);
  if (run.time_ms > 0) {
    const double seconds = run.time_ms / 1e3;
    r.gbps = static_cast<double>(r.traffic_bytes) / seconds / 1e9;
    r.gops = static_cast<double>(r.hashes) * threefry::kOpsPerHash / seconds / 1e9;
    if (peaks.memory_bytes_per_s > 0) {
      r.pct_peak_bandwidth = 100.0 * r.gbps * 1e9 / peaks.memory_bytes_per_s;
    }
    if (peaks.int32_ops_per_s > 0) r.pct_peak_int32 = 100.0 * r.gops * 1e9 / peaks.int32_ops_per_s;
  }
  if (options.check_bits) {
    // One reference per (site, scheme): the lowerings of a site share it.
    const bool replicated = IsReplicatedScheme(job.lowering);
    const ReferenceKey key{job.site.shape,  job.site.shards, job.site.shard_index,
                           job.site.key.w0, job.site.key.w1, job.site.keep_prob,
                           replicated};
    auto it = refs.find(key);
    if (it == refs.end())
      it = refs.emplace(key, ComputeReference(job.site, *sizes, replicated)).first;
    if (!it->second.error.empty()) {
      r.error = it->second.error;
      return r;
    }
    r.comparison = Compare(it->second, run);
    r.bits_checked = true;
  }
  r.ok = r.within_tolerance && (!r.bits_checked || r.comparison.Match());
  return r;
}

// A number rounded for reports; NaN and infinities never reach JSON.
double Round(double value, double scale) {
  return std::isfinite(value) ? std::round(value * scale) / scale : 0.0;
}

}  // namespace

Verdict Validate(const std::vector<ValidationJob>& jobs, Backend& backend,
                 const HarnessOptions& options) {
  Verdict verdict;
  verdict.device = backend.DeviceName();
  verdict.backend = backend.Name();
  verdict.date = options.date;
  verdict.peaks = backend.Peaks();
  verdict.tolerance_pct = options.tolerance_pct;
  std::map<ReferenceKey, Reference> references;
  verdict.ok = !jobs.empty();
  for (const ValidationJob& job : jobs) {
    verdict.results.push_back(RunJob(job, backend, options, verdict.peaks, references));
    verdict.ok = verdict.ok && verdict.results.back().ok;
  }
  return verdict;
}

nlohmann::ordered_json VerdictToJson(const Verdict& verdict) {
  nlohmann::ordered_json out;
  out["schema_version"] = 1;
  out["tool"] = "spmdsim-validate";
  out["device"] = verdict.device;
  out["backend"] = verdict.backend;
  out["date"] = verdict.date;
  out["peaks"] = {{"memory_gbps", Round(verdict.peaks.memory_bytes_per_s / 1e9, 10)},
                  {"int32_gops", Round(verdict.peaks.int32_ops_per_s / 1e9, 10)},
                  {"source", verdict.peaks.source}};
  out["tolerance_pct"] = verdict.tolerance_pct;
  out["ops_per_hash"] = threefry::kOpsPerHash;
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const JobResult& r : verdict.results) {
    nlohmann::ordered_json j;
    j["lowering"] = LoweringName(r.job.lowering);
    j["site"] = r.job.site.name;
    j["shape"] = r.job.site.shape;
    j["local_shape"] = r.sizes.local_shape;
    j["shards"] = r.job.site.shards;
    j["shard_index"] = r.job.site.shard_index;
    j["mode"] = IsReplicatedScheme(r.job.lowering) ? "replicated" : "partitionable";
    j["predicted_bytes"] = r.job.predicted_bytes;
    j["prediction_source"] = r.job.prediction_source;
    j["prediction_detail"] = r.job.prediction_detail;
    if (!r.error.empty()) {
      j["error"] = r.error;
      j["ok"] = false;
      results.push_back(std::move(j));
      continue;
    }
    j["measured_bytes"] = r.measured_bytes;
    j["requested_bytes"] = r.requested_bytes;
    j["error_pct"] = Round(r.error_pct, 1e4);
    j["time_ms"] = Round(r.time_ms, 1e4);
    j["traffic_bytes"] = r.traffic_bytes;
    j["hashes"] = r.hashes;
    j["gbps"] = Round(r.gbps, 100);
    j["gops"] = Round(r.gops, 100);
    j["pct_peak_bandwidth"] = r.pct_peak_bandwidth < 0
                                  ? nlohmann::ordered_json()
                                  : nlohmann::ordered_json(Round(r.pct_peak_bandwidth, 100));
    j["pct_peak_int32"] = r.pct_peak_int32 < 0
                              ? nlohmann::ordered_json()
                              : nlohmann::ordered_json(Round(r.pct_peak_int32, 100));
    j["bits_checked"] = r.bits_checked;
    j["bit_mismatches"] = r.comparison.bit_mismatches;
    j["mask_mismatches"] = r.comparison.mask_mismatches;
    j["output_mismatches"] = r.comparison.output_mismatches;
    j["within_tolerance"] = r.within_tolerance;
    j["ok"] = r.ok;
    results.push_back(std::move(j));
  }
  out["results"] = std::move(results);
  nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
  for (const SkippedSite& s : verdict.skipped) {
    skipped.push_back({{"site", s.site}, {"where", s.where}, {"reason", s.reason}});
  }
  out["skipped"] = std::move(skipped);
  out["ok"] = verdict.ok;
  return out;
}

void PrintVerdictText(const Verdict& verdict, std::ostream& out) {
  out << "spmdsim-validate: " << verdict.device << ", backend " << verdict.backend << ", "
      << verdict.date << "\n";
  if (verdict.peaks.memory_bytes_per_s > 0) {
    char line[200];
    std::snprintf(line, sizeof(line), "peaks: %.0f GB/s memory, %.0f Gops/s int32 (%s)\n",
                  verdict.peaks.memory_bytes_per_s / 1e9, verdict.peaks.int32_ops_per_s / 1e9,
                  verdict.peaks.source.c_str());
    out << line;
  }
  char line[400];
  std::snprintf(line, sizeof(line), "%-27s %-16s %13s %13s %7s %9s %8s %8s %6s %6s  %s\n",
                "lowering", "shape", "predicted", "measured", "error%", "time_ms", "GB/s", "Gops/s",
                "%bw", "%int", "bits");
  out << line;
  for (const JobResult& r : verdict.results) {
    const std::string shape = ShapeText(r.job.site.shape) + "/" + std::to_string(r.job.site.shards);
    if (!r.error.empty()) {
      std::snprintf(line, sizeof(line), "%-27s %-16s %13lld  error: %s\n",
                    std::string(LoweringName(r.job.lowering)).c_str(), shape.c_str(),
                    static_cast<long long>(r.job.predicted_bytes), r.error.c_str());
      out << line;
      continue;
    }
    const std::string bits = !r.bits_checked ? "not checked"
                             : r.comparison.Match()
                                 ? "match"
                                 : "MISMATCH at " + std::to_string(r.comparison.first_mismatch);
    const auto pct = [](double v) {
      return v < 0 ? std::string("-") : std::to_string(static_cast<int>(std::lround(v)));
    };
    std::snprintf(line, sizeof(line),
                  "%-27s %-16s %13lld %13lld %7.2f %9.3f %8.1f %8.1f %6s %6s  %s%s\n",
                  std::string(LoweringName(r.job.lowering)).c_str(), shape.c_str(),
                  static_cast<long long>(r.job.predicted_bytes),
                  static_cast<long long>(r.measured_bytes), r.error_pct, r.time_ms, r.gbps, r.gops,
                  pct(r.pct_peak_bandwidth).c_str(), pct(r.pct_peak_int32).c_str(), bits.c_str(),
                  r.within_tolerance ? "" : "  (bytes off by more than the tolerance)");
    out << line;
  }
  for (const SkippedSite& s : verdict.skipped) {
    out << "skipped " << s.site << " (" << s.where << "): " << s.reason << "\n";
  }
  out << (verdict.ok ? "verdict: ok" : "verdict: FAILED") << "\n";
}

}  // namespace spmdsim::validate
