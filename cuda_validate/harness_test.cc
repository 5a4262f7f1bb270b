// The harness on the CPU backend: predictions read from spmdsim's JSON, bytes judged against the
// tolerance, bits checked against the reference, and a backend that gets one bit wrong caught.
#include "cuda_validate/harness.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

namespace spmdsim::validate {
namespace {

std::string ReadExample() {
  std::ifstream in(std::string(SPMDSIM_VALIDATE_DIR) + "/examples/dropout_sites.json");
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

HarnessOptions Options() {
  HarnessOptions options;
  options.run.timed_repetitions = 1;
  options.date = "2026-01-01T00:00:00Z";
  return options;
}

TEST_CASE("The example prediction file becomes one job per site and what-if") {
  const JobsOutcome jobs = JobsFromPredictionJson(ReadExample(), "dropout_sites.json");
  REQUIRE(jobs.error.empty());
  REQUIRE(jobs.jobs.size() == 5);
  CHECK(jobs.jobs[0].lowering == Lowering::kPartitionableMaterialized);
  CHECK(jobs.jobs[0].site.shards == 8);  // the module's num_partitions
  CHECK(jobs.jobs[0].site.shard_index == 5);
  CHECK(jobs.jobs[0].predicted_bytes == 69632);
  CHECK(jobs.jobs[2].lowering == Lowering::kFused);  // what-ifs in key order
  CHECK(jobs.jobs[2].predicted_bytes == 4096);
  CHECK(jobs.jobs[4].lowering == Lowering::kReplicated);
  CHECK(jobs.jobs[4].site.shards == 3);
  CHECK(jobs.jobs[4].site.key == Pair32{0xffffffff, 0xffffffff});
}

TEST_CASE("The example's predictions hold on the CPU backend, bits included") {
  const JobsOutcome jobs = JobsFromPredictionJson(ReadExample(), "dropout_sites.json");
  auto backend = MakeCpuBackend(int64_t{1} << 30);
  const Verdict verdict = Validate(jobs.jobs, *backend, Options());
  CHECK(verdict.ok);
  for (const JobResult& r : verdict.results) {
    INFO(LoweringName(r.job.lowering));
    CHECK(r.error.empty());
    CHECK(r.measured_bytes == r.job.predicted_bytes);
    CHECK(r.bits_checked);
    CHECK(r.comparison.Match());
  }
  const nlohmann::ordered_json json = VerdictToJson(verdict);
  CHECK(json.at("device") == "host CPU (reference backend)");
  CHECK(json.at("date") == "2026-01-01T00:00:00Z");
  const auto& first = json.at("results").at(0);
  for (const char* field : {"lowering", "shape", "predicted_bytes", "measured_bytes", "error_pct",
                            "time_ms", "gbps", "gops"}) {
    CHECK(first.contains(field));
  }
  CHECK(first.at("pct_peak_bandwidth").is_null());  // the CPU backend has no peaks
}

TEST_CASE("A prediction off by more than the tolerance fails the verdict") {
  JobsOutcome jobs = JobsFromSite(Site{"s", {8, 16, 32}, 4, 1, {0, 7}, 0.9f},
                                  {Lowering::kPartitionableMaterialized});
  REQUIRE(jobs.error.empty());
  jobs.jobs[0].predicted_bytes = jobs.jobs[0].predicted_bytes * 100 / 103;  // 3% low
  auto backend = MakeCpuBackend(int64_t{1} << 30);
  const Verdict verdict = Validate(jobs.jobs, *backend, Options());
  CHECK_FALSE(verdict.ok);
  CHECK(verdict.results[0].error_pct == Approx(3.0).margin(0.05));
  CHECK_FALSE(verdict.results[0].within_tolerance);
  CHECK(verdict.results[0].comparison.Match());
}

// A backend that computes everything right but one bit of one element.
class OneBitOff : public Backend {
 public:
  OneBitOff() : cpu_(MakeCpuBackend(int64_t{1} << 30)) {}
  std::string Name() const override { return "one-bit-off"; }
  std::string DeviceName() const override { return "test"; }
  DevicePeaks Peaks() const override { return {}; }
  LoweringRun Run(const LoweringPlan& plan, const RunOptions& options) override {
    LoweringRun run = cpu_->Run(plan, options);
    run.bits.at(run.bits.size() / 2) ^= 1u << 31;
    return run;
  }

 private:
  std::unique_ptr<Backend> cpu_;
};

TEST_CASE("Wrong bits fail the verdict and name the element") {
  const JobsOutcome jobs = JobsFromSite(Site{"s", {4, 5, 6}, 2, 1, {0, 0}, 0.9f},
                                        {Lowering::kFused, Lowering::kReplicated});
  OneBitOff backend;
  const Verdict verdict = Validate(jobs.jobs, backend, Options());
  CHECK_FALSE(verdict.ok);
  for (const JobResult& r : verdict.results) {
    CHECK(r.comparison.bit_mismatches == 1);
    CHECK(r.comparison.first_mismatch == 30);
  }
}

TEST_CASE("Malformed prediction files are refused with the field at fault") {
  const auto error_of = [](const std::string& text) {
    return JobsFromPredictionJson(text, "p.json").error;
  };
  CHECK(error_of("{").find("p.json") == 0);
  CHECK(error_of(R"({"modules": []})").find("no RNG sites") != std::string::npos);
  CHECK(error_of(R"({"modules": [{"rng": {"sites": [{"shape": [4], "mode": "rbg",
      "materialized_bytes": 4}]}}]})")
            .find("modules[0].rng.sites[0]: unknown mode") != std::string::npos);
  CHECK(error_of(R"({"modules": [{"rng": {"sites": [{"shape": [4], "mode": "fused",
      "dtype": "u64", "materialized_bytes": 4}]}}]})")
            .find("only u32") != std::string::npos);
  CHECK(error_of(R"({"modules": [{"rng": {"sites": [{"shape": [4], "mode": "fused"}]}}]})")
            .find("materialized_bytes") != std::string::npos);
  CHECK(error_of(R"({"modules": [{"rng": {"sites": [{"shape": [4], "mode": "fused",
      "materialized_bytes": 4, "key": [1, -2]}]}}]})")
            .find("\"key\"") != std::string::npos);
}

}  // namespace
}  // namespace spmdsim::validate
