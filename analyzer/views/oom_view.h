// `spmdsim oom` output: text and JSON from one OomReport (analyzer/model/oom_report.h).
//
// Sample text output (testdata/oom/paligemma_gpu.log; long lines cut with "..."):
//   OOM (XLA:GPU/CPU buffer assignment): RESOURCE_EXHAUSTED: Out of memory while trying to ...
//     failed allocation: 2110783616 B (1.97 GiB)
//     listing: 6 peak buffers, 8455905296 B (7.88 GiB); 1 repeat of the same listing skipped ...
//     largest: Buffer 1, 5250015232 B (4.89 GiB) f32[5104,257152], output, custom-call at ...
//   largest buffers by category:
//     output               1 buffer       4.89 GiB  Buffer 1 f32[5104,257152]
//     temporary            3 buffers      1.97 GiB  Buffer 2 f32[2048,257152], Buffer 5 ...
//     parameter            2 buffers      1.02 GiB  Buffer 3 f16[2048,257152], Buffer 4 ...
//     random bits          0 buffers           0 B
//   peak buffers (exact bytes from the shape unless marked "listed"):
//     Buffer 1:  5250015232 B  4.89 GiB  f32[5104,257152]  output  custom-call  jit(dot)/...
//     Buffer 3:  1053294592 B  1004.50 MiB  f16[2048,257152]  parameter  entry parameter
//     ...
//   XLA's figures:
//     BufferAssignment stats: parameter allocation 1.02GiB
//     ...
//   no buffer in the listing holds random bits (threefry2x32, iota_2x32_shape, ...)
// With random bits (seed_000.log --dump testdata/dumps/seed_dp8_partitionable_remat):
//   random bits: 5 of the listed buffers (1.88 GiB), 3 sites
//     .../block_0/mlp_dropout (forward): 2 buffers, 768.00 MiB; what-if per device: replicated
//       4.69 GiB + 3.56 GiB sent | partitionable 1.50 GiB | rbg 3.00 GiB | fused 0 B
//   what each fix would save of these buffers (8 devices, from the dump):
//     fused           1.88 GiB  yes  a fused lowering ...
//     rbg            -7.12 GiB  no   jax_default_prng_impl=rbg: rng-bit-generator is not ...
//     remat                0 B  no   already rematerialized (the dump: jax.checkpoint: ...
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "analyzer/model/oom_report.h"

namespace spmdsim::analyzer {

nlohmann::ordered_json OomToJson(const OomReport& report);
// The report without its buffers (an empty "buffers" array).
nlohmann::ordered_json OomToJsonWithoutBuffers(const OomReport& report);
// `document` with the report as its "oom" member, written as JsonText would write it but one
// buffer at a time: a listing of 200,000 buffers never becomes one JSON tree.
void PrintOomJson(nlohmann::ordered_json document, const OomReport& report, std::ostream& out);

void PrintOomText(const OomReport& report, std::ostream& out);

}  // namespace spmdsim::analyzer
