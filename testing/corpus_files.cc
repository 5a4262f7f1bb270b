#include "testing/corpus_files.h"

#include <catch2/catch.hpp>

#include "dump/module_loader.h"

namespace spmdsim::testing {

std::string CorpusPath(const std::string& relative) {
  return relative.starts_with('/') ? relative : std::string(SPMDSIM_TESTDATA_DIR) + "/" + relative;
}

std::unique_ptr<ir::HloModule> LoadCorpusModule(const std::string& relative) {
  dump::LoadOutcome outcome = dump::LoadInputs(CorpusPath(relative));
  INFO((outcome.failure ? outcome.failure->message : ""));
  REQUIRE_FALSE(outcome.failure);
  REQUIRE(outcome.inputs.modules.size() == 1);
  return std::move(outcome.inputs.modules[0].module);
}

namespace {

template <typename T>
T Required(dump::DumpResult<T> result) {
  INFO((result ? "" : result.error().message));
  REQUIRE(result);
  return std::move(*result);
}

}  // namespace

dump::XlaLiveRange LoadCorpusLiveRange(const std::string& relative) {
  return Required(dump::LoadXlaLiveRange(CorpusPath(relative)));
}

dump::XlaBufferAssignment LoadCorpusBufferAssignment(const std::string& relative) {
  return Required(dump::LoadXlaBufferAssignment(CorpusPath(relative)));
}

}  // namespace spmdsim::testing
