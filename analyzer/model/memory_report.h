// The memory model of one module: spmdsim's prediction (passes/memory/memory_analysis.h) and,
// beside it, XLA's own figures read from the files the loader paired with the module. Rendered by
// analyzer/views/memory_view.h (text, JSON) and the HTML report.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dump/module_loader.h"
#include "dump/xla_memory_files.h"
#include "passes/memory/memory_analysis.h"

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
  // The buffer assignment's preallocated temp of each memory space the prediction reports (the
  // analysed one and the others), by space; empty without a buffer-assignment file.
  std::map<int64_t, int64_t> temp_bytes_by_space;
  // temp_bytes_by_space's figure for `space`; -1 when XLA's is not known.
  int64_t TempBytesOfSpace(int64_t space) const {
    const auto it = temp_bytes_by_space.find(space);
    return it == temp_bytes_by_space.end() ? -1 : it->second;
  }
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

// How a memory space is named in every view: its name with its number ("pinned host (S(5))"),
// or the number alone when that is its name.
std::string MemorySpaceLabel(const passes::MemorySpaceUsage& space);

// Runs the analysis on one loaded module and reads the companion files the loader paired with it
// (input.files, dump/module_file_set.h).
// `analyses`: the module's shared analyses (passes/module_analyses.h); null builds them here.
MemoryReport BuildMemoryReport(const dump::ModuleInput& input,
                               const passes::MemoryAnalysisOptions& options,
                               passes::ModuleAnalyses* analyses = nullptr);

}  // namespace spmdsim::analyzer
