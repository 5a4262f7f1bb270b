#include "analyzer/command.h"

#include <algorithm>
#include <iostream>

#include "analyzer/progress.h"

namespace spmdsim::analyzer {

void AddInputOptions(CLI::App& command, InputOptions& options) {
  command.add_option("inputs", options.inputs,
                     "HLO text files (.txt or .txt.gz) or --xla_dump_to directories; "
                     "none analyses the embedded demo dump");
  command.add_option("--format", options.format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  command.add_option("--module", options.module_filter,
                     "Only modules whose name contains this text");
}

namespace {
int g_deferred_exit_code = kExitOk;

void Defer(LoadedOrExit& result, int code) {
  result.deferred_exit_code = std::max(result.deferred_exit_code, code);
  g_deferred_exit_code = std::max(g_deferred_exit_code, code);
}
}  // namespace

int DeferredLoadExitCode() { return g_deferred_exit_code; }

LoadedOrExit LoadAllInputs(const InputOptions& options) {
  LoadedOrExit result;
  const auto take = [&](LoadOutcome outcome) {
    Progress::Get().Clear();
    for (const LoadFailure& skipped : outcome.skipped_files) {
      std::cerr << skipped.message << "\n";
      Defer(result, skipped.exit_code);
    }
    if (!outcome.skipped_files.empty() && !outcome.inputs.modules.empty()) {
      std::cerr << "note: " << outcome.skipped_files.size()
                << " file(s) skipped; the other modules are analysed\n";
    }
    if (outcome.failure) {
      std::cerr << outcome.failure->message << "\n";
      result.exit_code = outcome.failure->exit_code;
      return false;
    }
    for (const std::string& note : outcome.inputs.notes) std::cerr << "note: " << note << "\n";
    for (auto& module : outcome.inputs.modules) {
      for (const auto& warning : module.module->warnings) std::cerr << warning.ToString() << "\n";
      const int64_t hidden =
          module.module->warning_count - static_cast<int64_t>(module.module->warnings.size());
      if (hidden > 0) {
        std::cerr << module.path << ": warning: " << hidden << " more warning(s) not shown\n";
      }
      result.modules.push_back(std::move(module));
    }
    return true;
  };
  if (options.inputs.empty()) {
    take(LoadEmbeddedDump());
    return result;
  }
  // Every input is loaded; one that fails is reported and the others are still analysed.
  int failed = kExitOk;
  for (const std::string& input : options.inputs) {
    LoadOptions load;
    load.module_filter = options.module_filter;
    if (!take(LoadInputs(input, load))) {
      failed = std::max(failed, result.exit_code);
      result.exit_code = kExitOk;
    }
  }
  if (result.modules.empty()) {
    result.exit_code = std::max(failed, result.deferred_exit_code);
  } else if (failed != kExitOk) {
    Defer(result, failed);
  }
  return result;
}

}  // namespace spmdsim::analyzer
