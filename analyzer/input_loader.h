// Finds and parses the modules a user points spmdsim at: one HLO text file (plain or .gz), or a
// whole --xla_dump_to directory, where modules are recognised by content and each module file is
// paired with the companion files XLA writes beside it (buffer assignment, memory-usage report,
// live ranges) and the memory_analysis.json our tools/ save.
//
// I/O lives here, in the tool, not in ir/ or passes/.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/hlo.h"
#include "ir/source.h"

namespace spmdsim::analyzer {

// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitUsage = 2;  // usage or I/O error
inline constexpr int kExitParse = 3;  // input that cannot be parsed

// The name standard input ("-") goes by in messages and outputs.
inline constexpr std::string_view kStdinName = "<stdin>";

struct ModuleInput {
  std::string path;   // the file the module came from ("<embedded>/name" for the demo dump)
  std::string stage;  // "before_optimizations", "after_optimizations" or "unknown"
  std::unique_ptr<ir::HloModule> module;
  // Companion files found beside the module; empty when absent.
  std::string buffer_assignment_path;
  std::string memory_usage_report_path;
  std::string live_range_path;
  std::string memory_analysis_path;
};

struct LoadedInputs {
  std::vector<ModuleInput> modules;
  std::vector<std::string> notes;  // e.g. "skipped 3 files that are not HLO text"
};

struct LoadFailure {
  int exit_code = kExitUsage;
  std::string message;  // ready to print; parse errors are "file:line:col: error: ..."
};

struct LoadOptions {
  // Only modules whose name contains this string (empty = all).
  std::string module_filter;
  // Only modules of this stage ("all" = every stage).
  std::string stage = "all";
};

// Loads a file or directory ("-": standard input, named <stdin>). On failure returns LoadFailure
// (never throws). In a directory a module file that cannot be parsed does not stop the others: its
// located error goes into `skipped_files`, the rest are loaded, and `failure` is set only when no
// module loaded.
struct LoadOutcome {
  LoadedInputs inputs;
  std::optional<LoadFailure> failure;
  std::vector<LoadFailure> skipped_files;
};
LoadOutcome LoadInputs(const std::string& path, const LoadOptions& options = {});

// The demo dump compiled into the binary.
LoadOutcome LoadEmbeddedDump();

// Reads a file ("-": standard input, once per process), gunzipping it when it starts with the
// gzip magic. nullopt + message on failure.
std::optional<std::string> ReadFileContents(const std::string& path, std::string& error);

// Gunzips a buffer; nullopt on corrupt data.
std::optional<std::string> Gunzip(std::string_view data, std::string& error);

}  // namespace spmdsim::analyzer
