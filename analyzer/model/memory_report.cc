#include "analyzer/model/memory_report.h"

#include <fmt/format.h>

#include <filesystem>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "analyzer/model/module_platform.h"

namespace spmdsim::analyzer {

namespace {

namespace fs = std::filesystem;

std::string FileName(const std::string& path) { return fs::path(path).filename().string(); }

// Of the names a companion file gives its values, how many are no instruction of `module`, out
// of how many: a file of another module names few of this one's.
struct NameMatch {
  int64_t names = 0;
  int64_t unknown = 0;
  bool Foreign() const { return names > 0 && 2 * unknown > names; }
};

std::unordered_set<std::string_view> InstructionNames(const ir::HloModule& module) {
  std::unordered_set<std::string_view> names;
  for (const ir::HloComputation* computation : module.computations) {
    for (const ir::HloInstruction* instr : computation->instructions) names.insert(instr->name);
  }
  return names;
}

// "name{1}" -> "name".
std::string_view InstructionOf(std::string_view value) { return value.substr(0, value.find('{')); }

NameMatch MatchNames(const dump::XlaBufferAssignment& file,
                     const std::unordered_set<std::string_view>& known) {
  NameMatch match;
  for (const auto& allocation : file.allocations) {
    for (const auto& value : allocation.values) {
      ++match.names;
      match.unknown += known.count(value.name) == 0 ? 1 : 0;
    }
  }
  return match;
}

NameMatch MatchNames(const dump::XlaLiveRange& file,
                     const std::unordered_set<std::string_view>& known) {
  NameMatch match;
  for (const auto& [value, range] : file.ranges) {
    ++match.names;
    match.unknown += known.count(InstructionOf(value)) == 0 ? 1 : 0;
  }
  return match;
}

// Drops a companion file whose names are mostly not the module's (paired by its file name with
// a module it does not describe), with the reason among the report's errors.
template <typename File>
void DropForeign(std::optional<File>& file, const std::string& path,
                 const std::unordered_set<std::string_view>& known,
                 std::vector<std::string>& errors) {
  if (!file) return;
  const NameMatch match = MatchNames(*file, known);
  if (!match.Foreign()) return;
  errors.push_back(fmt::format(
      "{}: {} of its {} values name no instruction of this module: the file of another module, "
      "not used",
      FileName(path), match.unknown, match.names));
  file.reset();
}

}  // namespace

MemoryReport BuildMemoryReport(const dump::ModuleInput& input,
                               const passes::MemoryAnalysisOptions& options,
                               passes::ModuleAnalyses* analyses) {
  MemoryReport report;
  passes::MemoryAnalysisOptions sized = options;
  sized.platform = MemoryProfileOf(input, analyses);
  report.prediction = analyses != nullptr ? passes::AnalyzePeakMemory(*analyses, sized)
                                          : passes::AnalyzePeakMemory(*input.module, sized);
  XlaMemoryFigures& xla = report.xla;
  const auto load = [&](const std::string& path, auto loader, auto& slot) {
    if (path.empty()) return;
    auto loaded = loader(path);
    if (loaded) {
      slot = std::move(*loaded);
      xla.found = true;
    } else {
      xla.errors.push_back(loaded.error().message);
    }
  };
  // The files the loader paired with the module (dump/module_file_set.h).
  const dump::ModuleFileSet& paths = input.files;
  load(paths.memory_analysis, dump::LoadXlaMemoryAnalysis, xla.memory_analysis);
  load(paths.buffer_assignment, dump::LoadXlaBufferAssignment, xla.buffer_assignment);
  load(paths.memory_usage_report, dump::LoadXlaMemoryUsageReport, xla.memory_usage_report);
  load(paths.live_range, dump::LoadXlaLiveRange, xla.live_range);
  if (xla.buffer_assignment || xla.live_range) {
    const std::unordered_set<std::string_view> known = InstructionNames(*input.module);
    DropForeign(xla.buffer_assignment, paths.buffer_assignment, known, xla.errors);
    DropForeign(xla.live_range, paths.live_range, known, xla.errors);
  }
  if (xla.memory_analysis) {
    const dump::XlaMemoryAnalysis& m = *xla.memory_analysis;
    xla.argument_bytes = m.Field("argument_size_in_bytes");
    xla.output_bytes = m.Field("output_size_in_bytes");
    xla.alias_bytes = m.Field("alias_size_in_bytes");
    xla.temp_bytes = m.Field("temp_size_in_bytes");
    xla.source = FileName(paths.memory_analysis);
  } else if (xla.buffer_assignment) {
    const dump::XlaBufferAssignment& b = *xla.buffer_assignment;
    xla.argument_bytes = b.ArgumentBytes();
    xla.output_bytes = b.OutputBytes();
    xla.alias_bytes = b.AliasBytes();
    xla.temp_bytes = b.TempBytes();
    xla.source = FileName(paths.buffer_assignment);
  }
  // XLA:TPU: memory_analysis() temp is not made of the allocations in the dump; the HBM
  // preallocated temp of the buffer assignment is what spmdsim matches and reports beside its own.
  if (sized.platform.platform == passes::Platform::kTpu && xla.buffer_assignment) {
    if (xla.memory_analysis) xla.memory_analysis_temp_bytes = xla.temp_bytes;
    xla.temp_bytes = xla.buffer_assignment->TempBytesOfColor(0);
    xla.temp_source = FileName(paths.buffer_assignment) + ", HBM preallocated temp";
    if (xla.source.empty()) xla.source = FileName(paths.buffer_assignment);
  } else if (xla.buffer_assignment &&
             xla.buffer_assignment->TempBytes() != xla.buffer_assignment->TempBytesOfColor(0)) {
    // XLA:GPU/CPU with temporaries in another memory space (host offload's pinned host, S(5)):
    // spmdsim's figures are the device memory's, so XLA's beside them are too, the host apart.
    if (xla.memory_analysis) xla.memory_analysis_temp_bytes = xla.temp_bytes;
    xla.temp_bytes = xla.buffer_assignment->TempBytesOfColor(0);
    xla.temp_source = FileName(paths.buffer_assignment) +
                      ", device (color 0) preallocated temp; other memory spaces hold " +
                      std::to_string(xla.buffer_assignment->TempBytes() - xla.temp_bytes) +
                      " bytes of temp";
    if (xla.source.empty()) xla.source = FileName(paths.buffer_assignment);
  }
  if (xla.buffer_assignment) {
    const passes::PeakMemoryResult& p = report.prediction;
    xla.temp_bytes_by_space[p.memory_space] =
        xla.buffer_assignment->TempBytesOfColor(p.memory_space);
    for (const passes::MemorySpaceUsage& space : p.memory_spaces) {
      xla.temp_bytes_by_space[space.space] = xla.buffer_assignment->TempBytesOfColor(space.space);
    }
  }
  if (!xla.source.empty()) {
    xla.peak_bytes =
        passes::PeakBytes(xla.argument_bytes, xla.output_bytes, xla.alias_bytes, xla.temp_bytes);
  }
  return report;
}

std::string MemorySpaceLabel(const passes::MemorySpaceUsage& space) {
  const std::string number = "S(" + std::to_string(space.space) + ")";
  return space.name == number ? number : space.name + " (" + number + ")";
}

}  // namespace spmdsim::analyzer
