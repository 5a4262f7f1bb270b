// The `rng sites` view: every random-number site of a module (passes/rng/rng_site_analysis.h), its
// buffers in the words of XLA's OOM listing, its collectives, what each mode would cost, and the
// findings. Text and JSON are renderings of the same RngSiteResult.
//
// Sample text output (`spmdsim rng sites --buffers 1` on testdata/dumps/dp8_replicated_noremat,
// the after_optimizations module; long lines cut with "..."):
//   module jit_train_step  (testdata/dumps/dp8_replicated_noremat/...after_optimizations.txt.gz)
//     rng sites: 11 (4 drawing bits), 8 devices
//     Site 1: while.555  threefry-rolled, replicated, bits u32[2,32,64] per device (32768 over the
//             mesh, 8 shards), bernoulli/uniform, forward
//       Operator: op_name=".../block_0/att_dropout/jit(_bernoulli)/jit(_uniform)/while" source=...
//       consumers: dropout (mask and select) in copy_bitcast_fusion.9 (backward); ...
//       materializes 328.05 KiB (19 buffers; counters and loop state 72.05 KiB, bits 256.00 KiB)
//         Buffer 1:
//           Size: 128.00 KiB
//           Operator: op_name=".../att_dropout/jit(_bernoulli)/jit(_uniform)/concatenate" (...)
//           XLA Label: concatenate (bits (concatenated hash outputs))
//           Shape: u32[32768]
//         ... 18 more
//       collectives caused: 6, 152.00 KiB per device per step: collective-permute ... (16.00 KiB
//       sent); ...
//       what-if per device: replicated 328.00 KiB + 152.00 KiB sent | partitionable 64.00 KiB |
//                           rbg 128.00 KiB | fused 0 B
//     ...
//     total: materialized ..., sent ... per device per step
//     finding rng-key-residual (warning): ...
//
// JSON: {"num_partitions", "partitioned", "sites": [{name, kind, mode, algorithm, purpose,
// draws, phase, shape, dtype, local_elements, global_elements, shards, op_name, source,
// consumers, materialized_bytes, buffers[], collectives[], wire_bytes_per_device,
// key_depends_on_partition, whatif{replicated, partitionable, rbg, fused}}], "totals",
// "findings", "notes"} (docs/JSON_SCHEMA.md, section rng).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "dump/module_loader.h"
#include "passes/rng/rng_site_analysis.h"

namespace spmdsim::analyzer {

struct RngSitesViewOptions {
  // Buffers listed per site in text (all of them in JSON).
  int64_t buffers_per_site = 4;
  // Sites that only derive keys (split, fold_in) are listed in text only when true.
  bool show_key_sites = false;
};

nlohmann::ordered_json RngSitesToJson(const passes::RngSiteResult& result);
// A what-if per mode, {memory_bytes, wire_bytes_per_device[, bounds]}, and in text
// ("replicated 4.69 GiB + 3.56 GiB sent | ... | rbg 384.00 MiB to 3.00 GiB | fused 0 B"). Shared
// by `rng sites` and `oom`.
nlohmann::ordered_json RngWhatIfJson(const passes::RngWhatIf& whatif);
std::string RngWhatIfText(const passes::RngWhatIf& whatif);
// "remat what-if: recomputing the 48 random-bit buffers ...: peak 313.91 GiB -> 295.91 GiB (saves
// 18.00 GiB)"; "" when the what-if did not run. Shared by the text view and the HTML report.
std::string RematWhatIfText(const passes::RngRematWhatIf& remat);
// "4 bits sites with a key every device shares (...), 0 with a key from the device's position
// (...), 0 rbg (...)": whether the module's noise is tied to the global tensor. Shared by the
// text view and the HTML report.
std::string NoiseText(const passes::RngNoise& noise);

void PrintRngSitesText(const dump::ModuleInput& input, const passes::RngSiteResult& result,
                       const RngSitesViewOptions& options, std::ostream& out);

}  // namespace spmdsim::analyzer
