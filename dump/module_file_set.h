// A module file and the files XLA writes beside it, found by their names (dump/file_names.h):
//
//   module_0000.jit_f.before_optimizations.txt.gz             the module file (before partitioning)
//   module_0000.jit_f.cpu_after_optimizations.txt.gz          -> after_optimizations
//
//   module_0000.jit_f.cpu_after_optimizations.txt.gz          the module file (optimized)
//   module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt.gz     -> buffer_assignment
//   module_0000.jit_f.cpu_after_optimizations-memory-usage-report.txt      -> memory_usage_report
//   module_0000.jit_f.cpu_after_optimizations-live-range.txt.gz            -> live_range
//   jit_f.memory_analysis.json, else memory_analysis.json                  -> memory_analysis
//   module_0000.jit_f.cl_1.target_arguments.txt (XLA:TPU)                  -> target_arguments
//
// This is the one place that pairs them: the directory loader (dump/module_loader.h) for every
// module of a --xla_dump_to directory, and the loader of a single module file for its folder, so
// that `analyze FILE` and `analyze DIR` read the same companion files and `collectives` finds the
// optimized module beside an unoptimized one.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace spmdsim::dump {

// Paths are the folder's path joined with the file's name; empty (or no entry) when absent.
struct ModuleFileSet {
  std::string module;               // the module's HLO text file
  std::string buffer_assignment;    // "<stem>-buffer-assignment[.txt][.gz]"
  std::string memory_usage_report;  // "<stem>-memory-usage-report[.txt][.gz]"
  std::string live_range;           // "<stem>-live-range[.txt][.gz]"
  // An after-optimizations module's saved compiled.memory_analysis():
  // "<module name>.memory_analysis.json", else "memory_analysis.json" when the module is the
  // folder's only optimized one.
  std::string memory_analysis;
  // A before-optimizations module: the optimized module files of the same "module_NNNN.name."
  // beside it ("*after_optimizations.txt[.gz]"), by name. Which of them holds the same module is
  // for the caller to read.
  std::vector<std::string> after_optimizations;
  // An after-optimizations module: the same module before optimizations
  // ("module_NNNN.name.before_optimizations.txt[.gz]" beside it), empty when there is none.
  std::string before_optimizations;
  // An after-optimizations module of XLA:TPU: the compile's target arguments
  // ("module_NNNN.name.cl_N.target_arguments.txt", written with the module before
  // optimizations), which name the TPU generation (dump/tpu_target.h).
  std::string target_arguments;
};

// The file names of one folder of a dump, indexed once, so that every module of a large dump is
// paired without listing the folder again.
class DumpFolder {
 public:
  // `dir` as the paths should start ("" for the working directory); `file_names` its regular files.
  DumpFolder(std::filesystem::path dir, std::vector<std::string> file_names);

  // Lists the regular files of `dir` (not its subfolders); none when it cannot be listed.
  static DumpFolder List(const std::filesystem::path& dir);

  // The files beside the module file `module_file_name` of this folder.
  ModuleFileSet FilesOf(const std::string& module_file_name) const;

 private:
  std::string PathOf(const std::string& name) const;

  std::filesystem::path dir_;
  std::vector<std::string> names_;                                         // sorted
  std::map<std::pair<std::string, std::string>, std::string> companions_;  // (stem, kind) -> name
  std::map<std::string, std::string> named_memory_analysis_;  // module name -> file name
  bool has_memory_analysis_ = false;                          // "memory_analysis.json"
  std::set<std::string> optimized_modules_;  // after-optimizations module files, one per module
  // Module name -> (module number, file) of its before-optimizations module files, and of its
  // XLA:TPU target-arguments files.
  std::map<std::string, std::vector<std::pair<uint64_t, std::string>>> unoptimized_;
  std::map<std::string, std::vector<std::pair<uint64_t, std::string>>> target_arguments_;
};

// The files beside `module_path` (its folder listed once); only the path when it is not a
// regular file (standard input, a pipe).
ModuleFileSet FindModuleFiles(const std::string& module_path);

}  // namespace spmdsim::dump
