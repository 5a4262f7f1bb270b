#include "dump/file_names.h"

#include <algorithm>
#include <map>
#include <string_view>

namespace spmdsim::dump {

namespace fs = std::filesystem;

std::string_view ModuleStageName(ModuleStage stage) {
  switch (stage) {
    case ModuleStage::kBeforeOptimizations:
      return "before_optimizations";
    case ModuleStage::kAfterOptimizations:
      return "after_optimizations";
    case ModuleStage::kUnknown:
      break;
  }
  return "unknown";
}

ModuleStage StageFromFileName(const std::string& file_name) {
  // XLA names a module's dumps "module_NNNN.<name>.<stage>.txt", the stage after the platform's
  // prefix ("cpu_", "sm_9.0a_gpu_"): it ends the stem. XLA:TPU also writes snapshots of the
  // compile around it ("after_optimizations_after_buffer_assignment", "..._before_buffer_
  // assignment"), which are not the module as compiled: unknown, as any other pass dump.
  std::string stem = WithoutTextSuffixes(file_name);
  if (stem.ends_with(".hlo")) stem.resize(stem.size() - 4);
  for (ModuleStage stage : {ModuleStage::kBeforeOptimizations, ModuleStage::kAfterOptimizations}) {
    if (stem.ends_with(ModuleStageName(stage))) return stage;
  }
  return ModuleStage::kUnknown;
}

std::string WithoutTextSuffixes(std::string file_name) {
  for (std::string_view suffix : {".gz", ".txt"}) {
    if (file_name.size() > suffix.size() && file_name.ends_with(suffix)) {
      file_name.resize(file_name.size() - suffix.size());
    }
  }
  return file_name;
}

std::optional<CompanionName> AsCompanionFile(const std::string& file_name) {
  const std::string stem = WithoutTextSuffixes(file_name);
  for (std::string_view kind : {"buffer-assignment", "memory-usage-report", "live-range"}) {
    const std::string suffix = "-" + std::string(kind);
    if (stem.size() > suffix.size() && stem.ends_with(suffix)) {
      return CompanionName{stem.substr(0, stem.size() - suffix.size()), std::string(kind)};
    }
  }
  return std::nullopt;
}

std::optional<std::string> AsMemoryAnalysisFile(const std::string& file_name) {
  if (file_name == "memory_analysis.json") return std::string();
  constexpr std::string_view kNamed = ".memory_analysis.json";
  if (file_name.ends_with(kNamed)) return file_name.substr(0, file_name.size() - kNamed.size());
  return std::nullopt;
}

std::optional<std::pair<uint64_t, std::string>> ModuleNumberAndName(const std::string& name) {
  constexpr std::string_view kPrefix = "module_";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  size_t i = kPrefix.size();
  uint64_t number = 0;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9' && number < (uint64_t{1} << 60)) {
    number = number * 10 + static_cast<uint64_t>(name[i++] - '0');
  }
  if (i == kPrefix.size() || i >= name.size() || name[i] != '.') return std::nullopt;
  const size_t dot = name.find('.', i + 1);
  return std::make_pair(number, name.substr(i + 1, dot == std::string::npos ? dot : dot - i - 1));
}

namespace {

struct DumpOrder {
  std::string folder;
  uint64_t module_number;
  int stage_rank;
  std::string name;
  auto operator<=>(const DumpOrder&) const = default;
};

}  // namespace

void SortInDumpOrder(std::vector<fs::path>& files) {
  std::map<std::pair<std::string, std::string>, uint64_t> first_number;  // (folder, module name)
  for (const fs::path& file : files) {
    if (auto id = ModuleNumberAndName(file.filename().string())) {
      auto [it, added] =
          first_number.emplace(std::make_pair(file.parent_path().string(), id->second), id->first);
      if (!added) it->second = std::min(it->second, id->first);
    }
  }
  const auto key = [&](const fs::path& file) {
    const std::string name = file.filename().string();
    const std::string folder = file.parent_path().string();
    uint64_t number = UINT64_MAX;
    if (auto id = ModuleNumberAndName(name)) number = first_number[{folder, id->second}];
    const ModuleStage stage = StageFromFileName(name);
    const int rank = stage == ModuleStage::kAfterOptimizations    ? 0
                     : stage == ModuleStage::kBeforeOptimizations ? 1
                                                                  : 2;
    return DumpOrder{folder, number, rank, name};
  };
  std::vector<std::pair<DumpOrder, fs::path>> keyed;
  keyed.reserve(files.size());
  for (const fs::path& file : files) keyed.emplace_back(key(file), file);
  std::sort(keyed.begin(), keyed.end());
  for (size_t i = 0; i < files.size(); ++i) files[i] = std::move(keyed[i].second);
}

}  // namespace spmdsim::dump
