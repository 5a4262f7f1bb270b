// The `memory` section of `spmdsim analyze`: spmdsim's prediction (passes/memory_analysis.h) and,
// beside it, XLA's own figures when its files are next to the dump. One MemoryReport is rendered
// as text or JSON (docs/JSON_SCHEMA.md).
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

#include "dump/module_loader.h"
#include "dump/xla_memory_files.h"
#include "passes/memory_analysis.h"

namespace spmdsim::analyzer {

// XLA's figures for the same module, read from the files beside the dump.
struct XlaMemoryFigures {
  bool found = false;  // any of the files below was read
  // The four memory_analysis() terms, from memory_analysis.json when present, else derived from
  // the buffer-assignment file; `source` names the file they came from.
  int64_t argument_bytes = 0;
  int64_t output_bytes = 0;
  int64_t alias_bytes = 0;
  int64_t temp_bytes = 0;
  int64_t peak_bytes = 0;
  std::string source;
  // Where temp_bytes comes from when not from `source` alone: on XLA:TPU, the HBM (color 0)
  // preallocated temp of the buffer assignment, since libtpu's memory_analysis() temp is not the
  // sum of any allocations the dump lists (docs/MEMORY.md); empty otherwise.
  std::string temp_source;
  int64_t memory_analysis_temp_bytes = -1;  // memory_analysis()'s own temp when replaced above
  std::optional<dump::XlaBufferAssignment> buffer_assignment;
  std::optional<dump::XlaMemoryUsageReport> memory_usage_report;
  std::optional<dump::XlaLiveRange> live_range;
  std::optional<dump::XlaMemoryAnalysis> memory_analysis;
  std::vector<std::string> errors;  // files that were present but unreadable
};

struct MemoryReport {
  passes::PeakMemoryResult prediction;
  XlaMemoryFigures xla;
};

// Runs the analysis on one loaded module and reads the companion files the loader paired with it
// (input.files, dump/module_file_set.h).
// `analyses`: the module's shared analyses (passes/module_analyses.h); null builds them here.
MemoryReport BuildMemoryReport(const dump::ModuleInput& input,
                               const passes::MemoryAnalysisOptions& options,
                               passes::ModuleAnalyses* analyses = nullptr);

nlohmann::ordered_json MemoryToJson(const MemoryReport& report);

struct MemoryTextOptions {
  size_t live_buffers = 10;  // buffers of the live-at-peak listing shown in full
  size_t curve_width = 64;   // characters of the memory curve
};
void PrintMemoryText(const dump::ModuleInput& input, const MemoryReport& report, std::ostream& out,
                     const MemoryTextOptions& options = {});

}  // namespace spmdsim::analyzer
