// The `memory` section of `spmdsim analyze`: one MemoryReport (analyzer/model/memory_report.h),
// spmdsim's prediction beside XLA's own figures, rendered as text or JSON (docs/JSON_SCHEMA.md).
//
// Sample text output (testdata/dumps/seed_dp8_partitionable_remat, the after_optimizations module,
// --live 1; long lines cut with "..."):
//   module jit_train_step  (testdata/dumps/seed_dp8_partitionable_remat/module_0000...txt.gz)
//     memory per device: module schedule, 7286 positions
//       peak   313.91 GiB = argument 1.50 GiB + output 1.50 GiB - alias 1.50 GiB + temp 312.41 GiB
//       XLA    313.91 GiB = argument 1.50 GiB + output 1.50 GiB - alias 1.50 GiB + temp 312.41 GiB
//              (memory_analysis.json)
//       temp  heap 312.41 GiB (spatial best fit; 312.41 GiB live at most) + 8.07 KiB of tuple
//             tables
//     peak at position 6082: ynn_fusion.3 (fusion); 841 buffers live, largest first:
//       Buffer 1:
//         Size: 15.62 GiB
//         Operator: op_name="jit(train_step)/transpose(jvp())/add_any" source=.../optax/losses/...
//         XLA Label: fusion (copy_bitcast_fusion, temp)
//         Shape: f32[32000,131072]
//       ... 840 more: 24 x 6.00 GiB f32[128,12,1024,1024], 100 x 384.00 MiB f32[128,1024,768],
//           24 x 1.50 GiB f32[131072,3072], 48 x 384.00 MiB u32[128,1024,768], ...
//     memory curve (486 points over positions 0..7285): 1.50 GiB .. 313.91 GiB
//       |        .........................:::::::::::::::-=+*%@#*=:.     |
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/model/memory_report.h"
#include "dump/module_loader.h"

namespace spmdsim::analyzer {

nlohmann::ordered_json MemoryToJson(const MemoryReport& report);
nlohmann::ordered_json LiveBufferJson(const passes::LiveBuffer& buffer);

// `analyze --at POSITION`: what is live there, each buffer with its category (`categories`, one
// per buffer, peak_groups.h's BufferCategory). JSON `memory.live_at`; text after the module's.
nlohmann::ordered_json LiveAtToJson(const passes::LiveAtPosition& at,
                                    const std::vector<std::string>& categories);
void PrintLiveAtText(const passes::LiveAtPosition& at, const std::vector<std::string>& categories,
                     size_t shown, std::ostream& out);

struct MemoryTextOptions {
  size_t live_buffers = 10;  // buffers of the live-at-peak listing shown in full
  size_t curve_width = 64;   // characters of the memory curve
};
void PrintMemoryText(const dump::ModuleInput& input, const MemoryReport& report, std::ostream& out,
                     const MemoryTextOptions& options = {});

}  // namespace spmdsim::analyzer
