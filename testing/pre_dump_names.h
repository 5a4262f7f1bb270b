// The names the corpus tests of passes/ used for the loader and XLA's files before they moved
// from analyzer/ to dump/: passes/rng/rng_site_analysis_test.cc, whose body is being changed
// elsewhere, still says analyzer::LoadInputs and analyzer::LoadXla*(path, error). Here they are
// dump/'s, with the old signatures. New tests use testing/corpus_files.h; this header goes once
// that test does.
#pragma once

#include <optional>
#include <string>

#include "dump/module_loader.h"
#include "dump/xla_memory_files.h"

namespace spmdsim::analyzer {

using dump::LoadInputs;
using dump::LoadOutcome;
using dump::ModuleInput;
using dump::XlaBufferAssignment;
using dump::XlaLiveRange;

inline std::optional<XlaBufferAssignment> LoadXlaBufferAssignment(const std::string& path,
                                                                  std::string& error) {
  dump::DumpResult<XlaBufferAssignment> result = dump::LoadXlaBufferAssignment(path);
  if (!result) {
    error = result.error().message;
    return std::nullopt;
  }
  return std::move(*result);
}

inline std::optional<XlaLiveRange> LoadXlaLiveRange(const std::string& path, std::string& error) {
  dump::DumpResult<XlaLiveRange> result = dump::LoadXlaLiveRange(path);
  if (!result) {
    error = result.error().message;
    return std::nullopt;
  }
  return std::move(*result);
}

}  // namespace spmdsim::analyzer
