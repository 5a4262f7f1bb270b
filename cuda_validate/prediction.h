// What spmdsim-validate checks: one job per (site, lowering), with the bytes predicted for it.
//
// From a prediction file: the JSON `spmdsim rng sites FILE --format json` writes,
// {"schema_version": 1, "modules": [{"name": ..., "num_partitions": N, "rng": {"sites": [SITE]}}]},
// where a SITE (docs/JSON_SCHEMA.md, `rng`) is read for
//   {"name": "while.967", "mode": "partitionable" | "replicated" | "rbg" | "unknown",
//    "purpose": "bits" | "split" | "fold_in" | "key", "shape": [per-device dims], "dtype": "u32",
//    "shards": P, "local_elements": nl, "global_elements": n, "materialized_bytes": BYTES,
//    "whatif": {"replicated" | "partitionable" | "rbg" | "fused": {"memory_bytes": BYTES, ...}}}
// plus, optional and never written by spmdsim, "shard_index", "key": [k0, k1] and "keep_prob".
// The global shape is the per-device shape with dimension 0 times `shards` (the harness shards
// along dimension 0); `shards` defaults to global / local elements, else the module's
// num_partitions, else 1.
//
// A site that cannot run here (not u32, purpose other than bits, mode rbg or unknown, a shape
// the harness cannot place, a lowering past its limits) is skipped with a reason; a malformed
// field is an error. Every runnable site gets a job for each of the four lowerings:
//   partitionable_materialized  spmdsim whatif.partitionable.memory_bytes + the mask (nl bytes)
//   fused                       spmdsim whatif.fused.memory_bytes + the mask (nl bytes)
//   replicated, custom_call     cuda_validate's formula (PredictedBytes)
// spmdsim counts the RNG's own buffers, and the harness also keeps the dropout's 1-byte mask
// (passes/rng/rng_whatif.h). spmdsim's replicated figure models XLA's partitioned hash and
// all-gathers, not lowering (a), so it is reported beside the formula but not judged. Without a
// what-if entry, the site's materialized_bytes stands in for its own mode's lowering, else the
// formula.
// From the command line: a shape and a shard count, with the predictions of PredictedBytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cuda_validate/site.h"

namespace spmdsim::validate {

struct ValidationJob {
  Site site;
  Lowering lowering = Lowering::kFused;
  int64_t predicted_bytes = 0;
  std::string prediction_source = "formula";  // "spmdsim" or "formula"
  std::string prediction_detail;              // the fields or formula the figure comes from
};

struct SkippedSite {
  std::string site;    // the site's name
  std::string where;   // "modules[i].rng.sites[j]"
  std::string reason;  // one line
};

struct JobsOutcome {
  std::vector<ValidationJob> jobs;
  std::vector<SkippedSite> skipped;
  std::string error;  // a message naming the file and the field, or that nothing is runnable
};

// Jobs from the text of a prediction file (`path` is only used in messages).
JobsOutcome JobsFromPredictionJson(const std::string& text, const std::string& path);

// One job per lowering for a site given on the command line.
JobsOutcome JobsFromSite(const Site& site, const std::vector<Lowering>& lowerings);

}  // namespace spmdsim::validate
