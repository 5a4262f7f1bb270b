// What the corpus tests of ir/ and passes/ need of the whole stack: a module of testdata/ loaded
// as spmdsim loads it (dump/module_loader.h: gzip, the file's stage) and XLA's own files beside
// it (dump/xla_memory_files.h), so that those layers' tests need not include dump/ or analyzer/.
// Each helper REQUIREs (Catch2) that what it reads is there and readable.
//
//   const auto module = testing::LoadCorpusModule(program.at("files").at("after"));
//   const dump::XlaLiveRange xla =
//   testing::LoadCorpusLiveRange(program.at("files").at("live_range"));
#pragma once

#include <memory>
#include <string>

#include "dump/xla_memory_files.h"
#include "ir/hlo.h"

namespace spmdsim::testing {

// testdata/<relative> (SPMDSIM_TESTDATA_DIR); a path that starts with '/' is kept.
std::string CorpusPath(const std::string& relative);

// The one module of a corpus file.
std::unique_ptr<ir::HloModule> LoadCorpusModule(const std::string& relative);

// XLA's live ranges and buffer assignment written beside a corpus module.
dump::XlaLiveRange LoadCorpusLiveRange(const std::string& relative);
dump::XlaBufferAssignment LoadCorpusBufferAssignment(const std::string& relative);

}  // namespace spmdsim::testing
