#include "dump/module_file_set.h"

#include <algorithm>
#include <string_view>

#include "dump/file_names.h"

namespace spmdsim::dump {

namespace fs = std::filesystem;

namespace {

// One entry per optimized module, however many forms of its file the folder holds.
std::string ModuleIdentity(const std::string& file_name) {
  if (auto id = ModuleNumberAndName(file_name)) return std::to_string(id->first) + "." + id->second;
  return WithoutTextSuffixes(file_name);
}

}  // namespace

DumpFolder::DumpFolder(fs::path dir, std::vector<std::string> file_names)
    : dir_(std::move(dir)), names_(std::move(file_names)) {
  std::sort(names_.begin(), names_.end());
  for (const std::string& name : names_) {
    if (auto companion = AsCompanionFile(name)) {
      // The first by name when several forms are there ("X.txt" before "X.txt.gz").
      companions_.emplace(std::make_pair(companion->stem, companion->kind), name);
    } else if (auto function = AsMemoryAnalysisFile(name)) {
      if (function->empty()) {
        has_memory_analysis_ = true;
      } else {
        named_memory_analysis_.emplace(*function, name);
      }
    } else if (name.ends_with(".target_arguments.txt")) {
      if (const auto id = ModuleNumberAndName(name)) {
        target_arguments_[id->second].emplace_back(id->first, name);
      }
    } else if (!name.ends_with(".json") &&
               StageFromFileName(name) == ModuleStage::kAfterOptimizations) {
      optimized_modules_.insert(ModuleIdentity(name));
    } else if (!name.ends_with(".json") &&
               StageFromFileName(name) == ModuleStage::kBeforeOptimizations) {
      if (const auto id = ModuleNumberAndName(name)) {
        unoptimized_[id->second].emplace_back(id->first, name);
      }
    }
  }
}

DumpFolder DumpFolder::List(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir.empty() ? fs::path(".") : dir, ec);
       !ec && it != fs::end(it); it.increment(ec)) {
    if (it->is_regular_file(ec)) names.push_back(it->path().filename().string());
  }
  return DumpFolder(dir, std::move(names));
}

std::string DumpFolder::PathOf(const std::string& name) const { return (dir_ / name).string(); }

ModuleFileSet DumpFolder::FilesOf(const std::string& module_file_name) const {
  ModuleFileSet files;
  files.module = PathOf(module_file_name);
  const std::string stem = WithoutTextSuffixes(module_file_name);
  const auto companion = [&](const char* kind) {
    auto it = companions_.find({stem, kind});
    return it == companions_.end() ? std::string() : PathOf(it->second);
  };
  files.buffer_assignment = companion("buffer-assignment");
  files.memory_usage_report = companion("memory-usage-report");
  files.live_range = companion("live-range");

  const ModuleStage stage = StageFromFileName(module_file_name);
  if (stage == ModuleStage::kAfterOptimizations) {
    const auto id = ModuleNumberAndName(module_file_name);
    const auto named = id ? named_memory_analysis_.find(id->second) : named_memory_analysis_.end();
    if (named != named_memory_analysis_.end()) {
      files.memory_analysis = PathOf(named->second);
    } else if (has_memory_analysis_ && optimized_modules_.size() == 1) {
      files.memory_analysis = PathOf("memory_analysis.json");
    }
  }

  // An optimized module's source: the before-optimizations file of the same module name, the
  // nearest at or below its number (XLA:TPU numbers the optimized module after the compiles it
  // ran in between: module_0000...before_optimizations, module_0003...after_optimizations).
  // Its target arguments are written with that source, so found the same way.
  if (stage == ModuleStage::kAfterOptimizations) {
    const auto id = ModuleNumberAndName(module_file_name);
    const auto nearest = [&](const auto& by_name) {
      const auto found = id ? by_name.find(id->second) : by_name.end();
      if (found == by_name.end()) return std::string();
      const std::pair<uint64_t, std::string>* best = nullptr;
      for (const auto& candidate : found->second) {
        if (candidate.first <= id->first && (best == nullptr || candidate.first > best->first)) {
          best = &candidate;
        }
      }
      return best == nullptr ? std::string() : PathOf(best->second);
    };
    files.before_optimizations = nearest(unoptimized_);
    files.target_arguments = nearest(target_arguments_);
  }

  // "module_0000.jit_f.before_optimizations.txt" -> "module_0000.jit_f.*after_optimizations.txt".
  const size_t at = module_file_name.find(".before_optimizations");
  if (stage == ModuleStage::kBeforeOptimizations && at != std::string::npos) {
    const std::string prefix = module_file_name.substr(0, at + 1);
    for (auto it = std::lower_bound(names_.begin(), names_.end(), prefix);
         it != names_.end() && it->starts_with(prefix); ++it) {
      const std::string_view optimized = ModuleStageName(ModuleStage::kAfterOptimizations);
      const size_t after = it->find(optimized);
      if (after == std::string::npos) continue;
      const std::string rest = it->substr(after + optimized.size());
      if (rest == ".txt" || rest == ".txt.gz") files.after_optimizations.push_back(PathOf(*it));
    }
  }
  return files;
}

ModuleFileSet FindModuleFiles(const std::string& module_path) {
  const fs::path file(module_path);
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return ModuleFileSet{module_path, {}, {}, {}, {}, {}};
  return DumpFolder::List(file.parent_path()).FilesOf(file.filename().string());
}

}  // namespace spmdsim::dump
