// What spmdsim-validate checks: one job per (site, lowering), with the bytes spmdsim predicted.
//
// From a prediction file: spmdsim's JSON, {"schema_version": 1, "modules": [{"name": ...,
// "num_partitions": N?, "rng": {"sites": [SITE, ...]}}]}, where a SITE is
//   {"name": "dropout_0"?, "shape": [B, S, D], "dtype": "u32", "mode": M,
//    "materialized_bytes": BYTES, "shards": N?, "shard_index": K?, "key": [k0, k1]?,
//    "keep_prob": P?, "whatif": {LOWERING: BYTES | {"materialized_bytes": BYTES}, ...}?}
// M and LOWERING name a lowering (site.h ParseLowering: replicated, partitionable, custom_call,
// fused, ...). "materialized_bytes" is the prediction for M; each "whatif" entry adds a job for
// another lowering. shards defaults to the module's num_partitions, else 1.
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
  std::string prediction_source;  // "formula" or "<file>: modules[i].rng.sites[j]"
};

struct JobsOutcome {
  std::vector<ValidationJob> jobs;
  std::string error;  // a message naming the file and the field, when the input is refused
};

// Jobs from the text of a prediction file (`path` is only used in messages).
JobsOutcome JobsFromPredictionJson(const std::string& text, const std::string& path);

// One job per lowering for a site given on the command line.
JobsOutcome JobsFromSite(const Site& site, const std::vector<Lowering>& lowerings);

}  // namespace spmdsim::validate
