// The OOM log reader (dump/oom_log.h) on the logs of testdata/oom/: every entry as XLA listed it,
// figures read from their rounded text, a repeated listing read once. What spmdsim makes of a
// listing (exact sizes, categories, random bits) is tested in analyzer/model/oom_report_test.cc.
#include "dump/oom_log.h"

#include <catch2/catch.hpp>
#include <string>

#include "dump/file_reader.h"

namespace spmdsim::dump {
namespace {

OomLog Read(const std::string& name) {
  const DumpResult<std::string> text =
      ReadFileContents(std::string(SPMDSIM_TESTDATA_DIR) + "/oom/" + name);
  REQUIRE(text);
  DumpResult<OomLog> log = ReadOomLog(*text);
  REQUIRE(log);
  return std::move(*log);
}

TEST_CASE("oom log: the entries as listed, once though the traceback repeats them") {
  const OomLog log = Read("paligemma_gpu.log");
  CHECK(log.format == "buffer-assignment");
  REQUIRE(log.buffers.size() == 6);
  CHECK(log.repeats_skipped == 1);
  CHECK(log.repeat_lines == std::vector<int64_t>{69});
  const OomLogBuffer& logits = log.buffers[0];
  CHECK(logits.number == 1);
  CHECK(logits.size_text == "4.89GiB");
  CHECK(logits.shape == "f32[5104,257152]");
  CHECK(logits.source == "gemma.py:175");
  CHECK(log.buffers[2].entry_parameter == "f16[2048,257152]");
  REQUIRE(log.failed_allocation_bytes);
  CHECK(*log.failed_allocation_bytes == 2110783616);
  CHECK(log.stats.size() == 7);
}

TEST_CASE("oom log: TPU figures read from their rounded text") {
  const OomLog log = Read("tpu_hbm.log");
  CHECK(log.format == "tpu-hbm");
  CHECK(log.capacity.memory_space == "hbm");
  CHECK(log.capacity.used_bytes == 22054657065);  // "20.54G"
  REQUIRE(log.buffers.size() == 3);
  CHECK(log.buffers[0].size_text == "14.00G");
  CHECK(log.buffers[0].allocation_type == "HLO temp");
  CHECK(log.buffers[0].unpadded_size_bytes.has_value());
}

TEST_CASE("oom log: text without a listing is a parse error that says what to paste") {
  const DumpResult<OomLog> log = ReadOomLog("{\"schema_version\": 1}\n");
  REQUIRE_FALSE(log);
  CHECK(log.error().kind == DumpErrorKind::kParse);
  CHECK(log.error().message.find("paste the part of XLA's out-of-memory message") !=
        std::string::npos);
}

}  // namespace
}  // namespace spmdsim::dump
