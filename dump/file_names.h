// What the names of the files XLA writes with --xla_dump_to say, from the name alone:
//
//   module_0042.jit_step.cpu_after_optimizations.txt[.gz]       a module; stage, number 42,
//                                                               module name jit_step
//   module_0042.jit_step.cpu_after_optimizations-buffer-assignment.txt
//   module_0042.jit_step.cpu_after_optimizations-memory-usage-report.txt
//   module_0042.jit_step.cpu_after_optimizations-live-range.txt
//                                                               its companions: stem + kind
//   memory_analysis.json, jit_step.memory_analysis.json         compiled.memory_analysis() as
//                                                               tools/gen_dumps.py saves it
//
// and the order XLA wrote the files of one process in. Nothing here touches the disk.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spmdsim::dump {

// Which of XLA's dumps of a module a file is: --xla_dump_to writes the module as JAX handed it
// (before_optimizations) and as compiled (after_optimizations); other names say neither.
enum class ModuleStage { kUnknown, kBeforeOptimizations, kAfterOptimizations };

// "before_optimizations", "after_optimizations" or "unknown" (the words of the file names, the
// JSON and --stage).
std::string_view ModuleStageName(ModuleStage stage);

ModuleStage StageFromFileName(const std::string& file_name);

// The name without ".gz" and then ".txt": the stem a module file and its companions share.
std::string WithoutTextSuffixes(std::string file_name);

// "module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt" -> the module file's stem
// "module_0000.jit_f.cpu_after_optimizations" and the kind "buffer-assignment" (or
// "memory-usage-report", "live-range"); nullopt for any other name.
struct CompanionName {
  std::string stem;
  std::string kind;
};
std::optional<CompanionName> AsCompanionFile(const std::string& file_name);

// "memory_analysis.json" -> "" (the folder's one optimized module), "jit_f.memory_analysis.json"
// -> "jit_f" (tools/gen_dumps.py names it after the function when one process compiled several);
// nullopt for any other name.
std::optional<std::string> AsMemoryAnalysisFile(const std::string& file_name);

// "module_0042.jit_step.cpu_after_optimizations.txt" -> 42 and "jit_step"; nullopt otherwise.
std::optional<std::pair<uint64_t, std::string>> ModuleNumberAndName(const std::string& file_name);

// Sorts the files of a dump in the order XLA wrote the modules of one process: by folder, then by
// module (its lowest "module_NNNN" number among the files of that module name: XLA:TPU numbers a
// module's before- and after-optimizations dumps apart), then the after-optimizations form
// first, then the name.
void SortInDumpOrder(std::vector<std::filesystem::path>& files);

}  // namespace spmdsim::dump
