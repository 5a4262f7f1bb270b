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

TEST_CASE("The example prediction file: four lowerings per runnable site, the rest skipped") {
  const JobsOutcome jobs = JobsFromPredictionJson(ReadExample(), "dropout_sites.json");
  REQUIRE(jobs.error.empty());
  REQUIRE(jobs.jobs.size() == 8);
  const ValidationJob& replicated = jobs.jobs[0];
  CHECK(replicated.lowering == Lowering::kReplicated);
  CHECK(replicated.site.shape == std::vector<int64_t>{16, 32, 64});  // [2, 32, 64] x 8 shards
  CHECK(replicated.site.shards == 8);
  CHECK(replicated.site.shard_index == 5);
  CHECK(replicated.prediction_source == "formula");  // spmdsim's 204800 models another lowering
  CHECK(replicated.prediction_detail.find("204800") != std::string::npos);
  CHECK(jobs.jobs[1].lowering == Lowering::kPartitionableMaterialized);
  CHECK(jobs.jobs[1].prediction_source == "spmdsim");
  CHECK(jobs.jobs[1].predicted_bytes == 65536 + 4096);  // whatif.partitionable + the mask
  CHECK(jobs.jobs[2].prediction_source == "formula");   // custom_call: no spmdsim figure
  CHECK(jobs.jobs[3].lowering == Lowering::kFused);
  CHECK(jobs.jobs[3].predicted_bytes == 0 + 4096);
  CHECK(jobs.jobs[3].prediction_source == "spmdsim");
  CHECK(jobs.jobs[5].lowering == Lowering::kPartitionableMaterialized);
  CHECK(jobs.jobs[5].prediction_source == "formula");  // the odd site has no what-if
  CHECK(jobs.jobs[5].site.shape == std::vector<int64_t>{9, 7, 5});
  CHECK(jobs.jobs[5].site.key == Pair32{0xffffffff, 0xffffffff});
  REQUIRE(jobs.skipped.size() == 2);
  CHECK(jobs.skipped[0].where == "modules[0].rng.sites[2]");
  CHECK(jobs.skipped[0].reason.find("purpose fold_in") == 0);
  CHECK(jobs.skipped[1].reason.find("mode rbg") == 0);
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
  CHECK(error_of(R"({"modules": []})").find("no runnable RNG site") != std::string::npos);
  CHECK(error_of(R"({"modules": [{"rng": {"sites": [{"mode": "fused"}]}}]})")
            .find("modules[0].rng.sites[0]: \"shape\"") != std::string::npos);
  CHECK(error_of(R"({"modules": [{"rng": {"sites": [{"shape": [4], "mode": "fused",
      "whatif": {"fused": 4}}]}}]})")
            .find("whatif.fused") != std::string::npos);
  CHECK(error_of(R"({"modules": [{"rng": {"sites": [{"shape": [4], "mode": "fused",
      "local_elements": 5}]}}]})")
            .find("local_elements") != std::string::npos);
  CHECK(error_of(R"({"modules": [{"rng": {"sites": [{"shape": [4], "mode": "fused",
      "key": [1, -2]}]}}]})")
            .find("\"key\"") != std::string::npos);
}

TEST_CASE("Sites that cannot run are skipped with a reason; none left is an error") {
  const JobsOutcome none = JobsFromPredictionJson(
      R"({"modules": [{"rng": {"sites": [
        {"name": "r", "shape": [4], "mode": "rbg", "purpose": "bits"},
        {"name": "u", "shape": [4], "mode": "partitionable", "dtype": "u64"},
        {"name": "g", "shape": [3], "mode": "replicated", "global_elements": 10, "shards": 3}]}}]})",
      "p.json");
  CHECK(none.jobs.empty());
  CHECK(none.error.find("no runnable RNG site") != std::string::npos);
  CHECK(none.error.find("3 skipped") != std::string::npos);
  REQUIRE(none.skipped.size() == 3);
  CHECK(none.skipped[0].reason.find("mode rbg") == 0);
  CHECK(none.skipped[1].reason.find("dtype u64") == 0);
  CHECK(none.skipped[2].reason.find("global_elements 10") == 0);
  const JobsOutcome some = JobsFromPredictionJson(
      R"({"modules": [{"num_partitions": 2, "rng": {"sites": [
        {"name": "k", "shape": [2], "mode": "unknown", "purpose": "split"},
        {"name": "d", "shape": [3, 5], "mode": "partitionable"}]}}]})",
      "p.json");
  CHECK(some.error.empty());
  REQUIRE(some.jobs.size() == 4);
  CHECK(some.jobs[0].site.shape == std::vector<int64_t>{6, 5});  // module's num_partitions
  REQUIRE(some.skipped.size() == 1);
  CHECK(some.skipped[0].site == "k");
}

}  // namespace
}  // namespace spmdsim::validate
