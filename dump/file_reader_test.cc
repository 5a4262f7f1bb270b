// Reading the files of a dump (dump/file_reader.h) and the typed errors of the loaders: what kind
// of failure, which file, and the message the tool prints.
#include "dump/file_reader.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>

#include "dump/module_loader.h"
#include "dump/xla_memory_files.h"

namespace spmdsim::dump {
namespace {

const std::string kDump = std::string(SPMDSIM_TESTDATA_DIR) + "/dumps/dp8_partitionable_remat/";

TEST_CASE("file reader: gzip files are decompressed whatever their name") {
  const DumpResult<std::string> text =
      ReadFileContents(kDump + "module_0000.jit_train_step.cpu_after_optimizations.txt.gz");
  REQUIRE(text);
  CHECK(text->starts_with("HloModule "));
  const DumpResult<std::string> plain =
      ReadFileContents(kDump +
                       "module_0000.jit_train_step.cpu_after_optimizations-memory-usage-"
                       "report.txt");
  REQUIRE(plain);
  CHECK_FALSE(IsGzip(*plain));
}

std::string RawBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The output buffer is sized from the trailer's length (a hint): the text must come out whole
// whatever the trailer says, and a trailer that lies is corrupt data, not a large allocation.
TEST_CASE("file reader: gzip output does not depend on the trailer's length hint") {
  const std::string gz =
      RawBytes(kDump + "module_0000.jit_train_step.cpu_after_optimizations.txt.gz");
  REQUIRE(IsGzip(gz));
  const DumpResult<std::string> text = Gunzip(gz);
  REQUIRE(text);
  REQUIRE(text->size() > gz.size());
  // Two members: the last one's trailer gives half the length.
  const DumpResult<std::string> twice = Gunzip(gz + gz);
  REQUIRE(twice);
  CHECK(*twice == *text + *text);
  for (const uint32_t forged : {uint32_t{1}, uint32_t{0xffffffff}}) {
    std::string lying = gz;
    for (size_t k = 0; k < 4; ++k) {
      lying[lying.size() - 4 + k] = static_cast<char>((forged >> (8 * k)) & 0xff);
    }
    const DumpResult<std::string> refused = Gunzip(lying);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message == "corrupt or truncated gzip data");
  }
}

TEST_CASE("file reader: errors are typed and name the file") {
  const DumpResult<std::string> missing = ReadFileContents("/nonexistent/f.txt");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().kind == DumpErrorKind::kIo);
  CHECK(missing.error().path == "/nonexistent/f.txt");
  CHECK(missing.error().message == "/nonexistent/f.txt: error: cannot open file");
  const DumpResult<std::string> dir = ReadFileContents(SPMDSIM_TESTDATA_DIR);
  REQUIRE_FALSE(dir);
  CHECK(dir.error().message == std::string(SPMDSIM_TESTDATA_DIR) + ": error: is a directory");

  const DumpResult<std::string> corrupt = Gunzip(std::string("\x1f\x8b\x08garbage", 10));
  REQUIRE_FALSE(corrupt);
  CHECK(corrupt.error().kind == DumpErrorKind::kIo);
  CHECK(corrupt.error().message == "corrupt or truncated gzip data");
}

TEST_CASE("loader: a missing input is kIo, text that does not parse kParse, no match kUsage") {
  const LoadOutcome missing = LoadInputs("/nonexistent/dump");
  REQUIRE(missing.failure);
  CHECK(missing.failure->kind == DumpErrorKind::kIo);
  CHECK(missing.failure->message == "/nonexistent/dump: error: no such file or directory");

  const LoadOutcome unparsed = LoadModuleText("m.txt", "HloModule m\n\nENTRY %e {\n");
  REQUIRE(unparsed.failure);
  CHECK(unparsed.failure->kind == DumpErrorKind::kParse);
  CHECK(unparsed.failure->path == "m.txt");
  CHECK(unparsed.failure->message.starts_with("m.txt:"));

  LoadOptions options;
  options.module_filter = "no_such_module";
  const LoadOutcome none = LoadInputs(kDump, options);
  REQUIRE(none.failure);
  CHECK(none.failure->kind == DumpErrorKind::kUsage);
  CHECK(none.failure->message.find("no HLO module found in this directory matching "
                                   "'no_such_module'") != std::string::npos);
}

TEST_CASE("companion readers: a file in another format is kParse and names the file") {
  const std::string path = kDump + "program.json";
  const DumpResult<XlaLiveRange> live = LoadXlaLiveRange(path);
  REQUIRE_FALSE(live);
  CHECK(live.error().kind == DumpErrorKind::kParse);
  CHECK(live.error().path == path);
  CHECK(live.error().message ==
        path + ": no 'HloLiveRange (max N):' header: not an XLA live-range file");
  const DumpResult<XlaBufferAssignment> missing = LoadXlaBufferAssignment(kDump + "none.txt");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().kind == DumpErrorKind::kIo);
}

}  // namespace
}  // namespace spmdsim::dump
