// Finds and parses the modules a user points spmdsim at: one HLO text file (plain or .gz, "-" for
// standard input), or a whole --xla_dump_to directory, where modules are recognised by content,
// taken in the order XLA wrote them, and each is paired with the files XLA writes beside it
// (dump/module_file_set.h). A single module file is paired with the files beside it the same way.
//
// I/O lives here, not in ir/ or passes/; nothing here prints or decides an exit code: failures
// are DumpErrors (dump/dump_error.h), progress goes to LoadOptions::progress.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dump/dump_error.h"
#include "dump/file_names.h"
#include "dump/module_file_set.h"
#include "ir/hlo.h"

namespace spmdsim::dump {

struct ModuleInput {
  std::string path;  // the file the module came from ("<stdin>", "<embedded>/name" for the demo)
  ModuleStage stage = ModuleStage::kUnknown;  // from the file name
  std::unique_ptr<ir::HloModule> module;
  ModuleFileSet files;  // XLA's files beside it; all empty for standard input and the demo
  // XLA:TPU: the generation its target arguments name ("v5e"; dump/tpu_target.h), read once when
  // the module is loaded; empty without that file.
  std::string tpu_generation;
  // The platform the user named for it (--platform: "cpu", "gpu", "tpu"); empty when the dump
  // decides (analyzer/model/module_platform.h).
  std::string platform;
  // The JAX (jaxlib) version the user says compiled it (--jax-version); empty when not given.
  // The RNG what-if follows that XLA's lowerings (analyzer/model/rng_report.h).
  std::string jax_version;
};

struct LoadedInputs {
  std::vector<ModuleInput> modules;
  std::vector<std::string> notes;  // e.g. "skipped 3 file(s) that are not HLO text"
};

struct LoadOptions {
  // Only modules whose name contains this string (empty = all).
  std::string module_filter;
  // Only modules of this stage ("all" = every stage).
  std::string stage = "all";
  // Told what is read or parsed now ("parsing module_0000...txt.gz (12 MiB)"), for a progress
  // line; none when empty.
  std::function<void(const std::string&)> progress;
};

// In a directory a module file that cannot be read or parsed does not stop the others: its error
// goes into `skipped_files`, the rest are loaded, and `failure` is set only when no module
// loaded (then it is the first file's error, and the others stay in `skipped_files`).
struct LoadOutcome {
  LoadedInputs inputs;
  std::optional<DumpError> failure;
  std::vector<DumpError> skipped_files;
};

// Loads a file or directory ("-": standard input, named <stdin>). Never throws.
LoadOutcome LoadInputs(const std::string& path, const LoadOptions& options = {});

// Parses a text already read (the demo dump compiled into the tool), named `path`; no companion
// files. `failure` only when it does not parse.
LoadOutcome LoadModuleText(const std::string& path, std::string text,
                           const LoadOptions& options = {});

}  // namespace spmdsim::dump
