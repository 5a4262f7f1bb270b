// Runs validation jobs on a backend and judges them: measured against predicted bytes, bits,
// mask and output against the CPU reference, and throughput against the device's peaks. The
// verdict renders as JSON (the file run_on_gpu.sh keeps) and as a text table, from one struct.
//
// Sample text output (CPU backend, `--shape 8,16,32 --shards 4`):
//   spmdsim-validate: host CPU (reference backend), backend cpu, 2026-01-01T00:00:00Z
//   lowering                    shape        predicted   measured  error%  time_ms   GB/s  Gops/s
//   bits replicated                  [8,16,32]        33792      33792    0.00    0.080  ...
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cuda_validate/backend.h"
#include "cuda_validate/prediction.h"
#include "cuda_validate/reference.h"

namespace spmdsim::validate {

struct HarnessOptions {
  double tolerance_pct = 2.0;  // |measured - predicted| / predicted allowed, in percent
  RunOptions run;
  bool check_bits = true;
  std::string date;  // ISO 8601, filled by the caller so that tests are deterministic
};

struct JobResult {
  ValidationJob job;
  SiteSizes sizes;
  std::string error;  // the job could not run (bad site, out of memory, ...)
  int64_t measured_bytes = 0;
  int64_t requested_bytes = 0;
  double error_pct = 0;
  double time_ms = 0;
  int64_t traffic_bytes = 0;
  int64_t hashes = 0;
  double gbps = 0;                 // traffic / time, 1e9 bytes per second
  double gops = 0;                 // hashes * ops per hash / time, 1e9 int32 ops per second
  double pct_peak_bandwidth = -1;  // -1: peak unknown
  double pct_peak_int32 = -1;
  bool bits_checked = false;
  Comparison comparison;
  bool within_tolerance = false;
  bool ok = false;
};

struct Verdict {
  std::string device;
  std::string backend;
  std::string date;
  DevicePeaks peaks;
  double tolerance_pct = 0;
  std::vector<JobResult> results;
  std::vector<SkippedSite> skipped;  // sites (or lowerings of a site) the input had but not run
  bool ok = false;
};

Verdict Validate(const std::vector<ValidationJob>& jobs, Backend& backend,
                 const HarnessOptions& options);

nlohmann::ordered_json VerdictToJson(const Verdict& verdict);
void PrintVerdictText(const Verdict& verdict, std::ostream& out);

}  // namespace spmdsim::validate
