// The OOM log reader (dump/oom_log.h) on the logs of testdata/oom/: every entry as XLA listed it,
// figures read from their rounded text, a repeated listing read once. What spmdsim makes of a
// listing (exact sizes, categories, random bits) is tested in analyzer/model/oom_report_test.cc.
#include "dump/oom_log.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "dump/file_reader.h"
#include "dump/size_text.h"

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
  CHECK(log.error().message.find("paste XLA's whole out-of-memory message") != std::string::npos);
}

TEST_CASE("oom log: libtpu's E1000 without a listing gives used and available, in both forms") {
  const OomLog short_form = Read("tpu_e1000.log");
  CHECK(short_form.format == "tpu-hbm");
  CHECK(short_form.buffers.empty());
  CHECK(short_form.capacity.memory_space == "hbm");
  CHECK(short_form.capacity.used_text == "26.68G");
  CHECK(short_form.capacity.capacity_text == "15.75G");
  REQUIRE(short_form.capacity.capacity_bytes);
  CHECK(*short_form.capacity.capacity_bytes == ParseSize("15.75G"));
  CHECK(short_form.message.rfind("RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom:", 0) == 0);
  REQUIRE(short_form.notes.size() == 1);
  CHECK(short_form.notes[0].find("--dump") != std::string::npos);
  // Broken over three lines by the terminal, "memory space" ending one of them.
  const OomLog wrapped = Read("tpu_e1000_wrapped.log");
  CHECK(wrapped.capacity.memory_space == "hbm");
  CHECK(wrapped.capacity.used_text == "126.45G");
  CHECK(wrapped.capacity.capacity_text == "94.75G");
  CHECK(wrapped.capacity.exceeded_text == "31.70G");
  CHECK(wrapped.message ==
        "RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom: XLA:TPU compile permanent error. Ran out "
        "of memory in memory space hbm. Used 126.45G of 94.75G hbm. Exceeded hbm capacity by "
        "31.70G.");
}

TEST_CASE("oom log: public TPU logs, one with a glog prefix on its first line") {
  const OomLog v4 = Read("tpu_v4_easydel_166.log");
  CHECK(v4.capacity.capacity_text == "30.75G");
  REQUIRE(v4.buffers.size() == 1);
  CHECK(v4.buffers[0].shape == "f32[32,4096,4096]{1,2,0:T(8,128)}");
  CHECK(v4.buffers[0].instruction == "fusion.1265.remat3");
  const OomLog flowpm = Read("tpu_flowpm_27.log");
  CHECK(flowpm.capacity.used_text == "41.74G");
  REQUIRE(flowpm.buffers.size() == 1);
  CHECK(flowpm.buffers[0].padding_text == "31.00G (32.0x expansion)");
  CHECK(flowpm.buffers[0].op_type == "FloorMod");
}

TEST_CASE("oom log: of two pastes the complete message is read, whichever comes first") {
  // A piece of the listing pasted first (buffers 5 and 6, no message), then the whole message.
  const OomLog log = Read("paligemma_gpu_two_pastes.log");
  REQUIRE(log.buffers.size() == 6);
  CHECK(log.buffers[0].number == 1);
  REQUIRE(log.failed_allocation_bytes);
  CHECK(*log.failed_allocation_bytes == 2110783616);
  REQUIRE(log.notes.size() == 1);
  CHECK(log.notes[0].find("a listing of 2 buffers without its message at line 1 was not read") !=
        std::string::npos);
}

TEST_CASE("oom log: glog prefixes are read through, on every line") {
  const DumpResult<std::string> text =
      ReadFileContents(std::string(SPMDSIM_TESTDATA_DIR) + "/oom/paligemma_gpu.log");
  REQUIRE(text);
  std::string prefixed;
  size_t start = 0;
  while (start < text->size()) {
    const size_t end = std::min(text->find('\n', start), text->size());
    prefixed += "I0309 12:51:51.361715 140505975940928 run_docker.py:247] " +
                text->substr(start, end - start) + "\n";
    start = end + 1;
  }
  DumpResult<OomLog> log = ReadOomLog(prefixed);
  REQUIRE(log);
  CHECK(log->buffers.size() == 6);
  CHECK(log->stats.size() == 7);
  CHECK(log->buffers[0].source == "gemma.py:175");
}

}  // namespace
}  // namespace spmdsim::dump

namespace spmdsim::dump {
namespace {

// Every log of testdata/oom/ (a new one is checked without new code): it reads, and where the
// paste holds XLA's error line and figures, the listing read is the one that comes with them.
TEST_CASE("oom log: every log in testdata reads to its complete listing") {
  size_t logs = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(SPMDSIM_TESTDATA_DIR) + "/oom")) {
    if (entry.path().extension() != ".log") continue;
    ++logs;
    INFO(entry.path().string());
    const DumpResult<std::string> text = ReadFileContents(entry.path().string());
    REQUIRE(text);
    const DumpResult<OomLog> log = ReadOomLog(*text);
    REQUIRE(log);
    const bool has_error_line = text->find("RESOURCE_EXHAUSTED") != std::string::npos ||
                                text->find("Ran out of memory") != std::string::npos;
    const bool has_figures = text->find("BufferAssignment stats:") != std::string::npos ||
                             text->find("Ran out of memory") != std::string::npos;
    if (has_error_line) CHECK_FALSE(log->message.empty());
    if (has_figures) CHECK((!log->stats.empty() || !log->capacity.memory_space.empty()));
    for (const std::string& note : log->notes) {
      // A skipped listing never came with its message when the one read did not.
      if (note.find("with its message at line") != std::string::npos) {
        CHECK_FALSE(log->message.empty());
      }
    }
  }
  CHECK(logs >= 8);
}

}  // namespace
}  // namespace spmdsim::dump
