// spmdsim-validate: runs the lowerings of a dropout site on a device (or the host), and judges
// spmdsim's byte predictions, the bits and the throughput.
//   spmdsim-validate PREDICTION.json [options]       sites from spmdsim's JSON
//   spmdsim-validate --shape B,S,D --shards N [...]  one site, predictions from the formulas
// Exit codes: 0 every job ok, 1 a check failed, 2 usage, input or backend error.
#include <CLI/CLI.hpp>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cuda_validate/harness.h"
#include "cuda_validate/prediction.h"

namespace {

using namespace spmdsim::validate;

constexpr int kExitOk = 0;
constexpr int kExitCheckFailed = 1;
constexpr int kExitUsage = 2;

#if defined(SPMDSIM_VALIDATE_HAVE_CUDA)
constexpr const char* kDefaultBackend = "cuda";
#else
constexpr const char* kDefaultBackend = "cpu";
#endif

struct Options {
  std::string prediction;
  std::vector<int64_t> shape;
  int64_t shards = 1;
  int64_t shard_index = 0;
  std::vector<std::string> lowerings;
  std::string backend = kDefaultBackend;
  uint32_t seed = 0;
  float keep_prob = 0.9f;
  int reps = 5;
  double tolerance_pct = 2.0;
  bool no_check = false;
  int64_t max_host_bytes = int64_t{4} << 30;  // CPU backend: 4 GiB, well inside CI's 24 GiB
  std::string out;
  std::string format = "text";
};

std::string UtcNow() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

int Run(const Options& options) {
  JobsOutcome jobs;
  if (!options.prediction.empty()) {
    std::ifstream in(options.prediction);
    if (!in) {
      std::cerr << "spmdsim-validate: cannot read " << options.prediction << "\n";
      return kExitUsage;
    }
    std::stringstream text;
    text << in.rdbuf();
    jobs = JobsFromPredictionJson(text.str(), options.prediction);
  } else if (!options.shape.empty()) {
    Site site;
    site.name = "cli";
    site.shape = options.shape;
    site.shards = options.shards;
    site.shard_index = options.shard_index;
    site.key = Pair32{0, options.seed};
    site.keep_prob = options.keep_prob;
    std::vector<Lowering> lowerings;
    for (const std::string& name : options.lowerings) {
      const std::optional<Lowering> lowering = ParseLowering(name);
      if (!lowering) {
        std::cerr << "spmdsim-validate: unknown lowering '" << name
                  << "' (replicated, partitionable_materialized, custom_call, fused)\n";
        return kExitUsage;
      }
      lowerings.push_back(*lowering);
    }
    if (lowerings.empty()) lowerings.assign(std::begin(kAllLowerings), std::end(kAllLowerings));
    jobs = JobsFromSite(site, lowerings);
  } else {
    std::cerr << "spmdsim-validate: give a prediction file or --shape B,S,D (see --help)\n";
    return kExitUsage;
  }
  if (!jobs.error.empty()) {
    std::cerr << "spmdsim-validate: " << jobs.error << "\n";
    return kExitUsage;
  }

  std::unique_ptr<Backend> backend;
  if (options.backend == "cpu") {
    backend = MakeCpuBackend(options.max_host_bytes);
  } else {
#if defined(SPMDSIM_VALIDATE_HAVE_CUDA)
    std::string error;
    backend = MakeCudaBackend(error);
    if (!backend) {
      std::cerr << "spmdsim-validate: CUDA backend unavailable: " << error << "\n";
      return kExitUsage;
    }
#else
    std::cerr << "spmdsim-validate: this build has no CUDA backend (built without nvcc); use "
                 "--backend cpu or build spmdsim-validate-cuda\n";
    return kExitUsage;
#endif
  }

  HarnessOptions harness;
  harness.tolerance_pct = options.tolerance_pct;
  harness.run.timed_repetitions = options.reps;
  harness.check_bits = !options.no_check;
  harness.date = UtcNow();
  Verdict verdict = Validate(jobs.jobs, *backend, harness);
  verdict.skipped = jobs.skipped;
  const std::string json = VerdictToJson(verdict).dump(2) + "\n";
  if (!options.out.empty()) {
    std::ofstream file(options.out);
    file << json;
    if (!file) {
      std::cerr << "spmdsim-validate: cannot write " << options.out << "\n";
      return kExitUsage;
    }
  }
  if (options.format == "json") {
    std::cout << json;
  } else {
    PrintVerdictText(verdict, std::cout);
  }
  return verdict.ok ? kExitOk : kExitCheckFailed;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "spmdsim-validate: run a dropout site's RNG lowerings on a device and check "
      "spmdsim's predicted bytes, the bits (against JAX's algorithm) and the throughput"};
  Options options;
  app.add_option("prediction", options.prediction,
                 "spmdsim JSON with modules[].rng.sites[] (see cuda_validate/README.md)");
  app.add_option("--shape", options.shape, "Global shape of the site, e.g. 64,2048,2048")
      ->delimiter(',');
  app.add_option("--shards", options.shards, "Ways dimension 0 is sharded")->capture_default_str();
  app.add_option("--shard-index", options.shard_index, "Which device's shard runs")
      ->capture_default_str();
  app.add_option("--lowering", options.lowerings,
                 "Lowerings to run (default all): replicated, partitionable_materialized, "
                 "custom_call, fused")
      ->delimiter(',');
  app.add_option("--backend", options.backend, "Where the lowerings run")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--seed", options.seed, "Key = jax.random.key(seed) for --shape sites")
      ->capture_default_str();
  app.add_option("--keep-prob", options.keep_prob, "Dropout keep probability")
      ->capture_default_str();
  app.add_option("--reps", options.reps, "Timed repetitions (time_ms is their median)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--tolerance-pct", options.tolerance_pct,
                 "Largest |measured - predicted| / predicted accepted, in percent")
      ->capture_default_str();
  app.add_flag("--no-check", options.no_check, "Skip the bit check against the CPU reference");
  app.add_option("--max-host-bytes", options.max_host_bytes,
                 "CPU backend: refuse plans needing more host memory than this")
      ->capture_default_str();
  app.add_option("--out", options.out, "Also write the JSON verdict to this file");
  app.add_option("--format", options.format, "stdout format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  return Run(options);
}
