// The OOM reader (analyzer/model/oom_report.h) on the logs of testdata/oom/: the PaliGemma GPU
// message pasted with its traceback copy, the TPU hbm message, and hostile text. Every figure
// asserted is computed from the fixture's shapes (f32[5104,257152] is 5104 x 257152 x 4 B).
#include "analyzer/model/oom_report.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "analyzer/model/oom_sizes.h"
#include "dump/file_reader.h"

namespace spmdsim::analyzer {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
// The PaliGemma listing, from its shapes.
constexpr int64_t kLogits = int64_t{5104} * 257152 * 4;         // f32[5104,257152]
constexpr int64_t kTableF32 = int64_t{2048} * 257152 * 4;       // f32[2048,257152]
constexpr int64_t kTableF16 = int64_t{2048} * 257152 * 2;       // f16[2048,257152]
constexpr int64_t kActivations = int64_t{16} * 319 * 2048 * 4;  // f32[16,319,2048]
constexpr int64_t kWorkspace = 4194304;                         // s8[4194304]
constexpr int64_t kTuple = 2 * 8;  // (f32[...], s8[...]): two 8-byte pointers

OomReport Parse(const std::string& name, const OomOptions& options = {}) {
  std::string error;
  const dump::DumpResult<std::string> text =
      dump::ReadFileContents(std::string(SPMDSIM_TESTDATA_DIR) + "/oom/" + name);
  REQUIRE(text);
  std::optional<OomReport> report = ParseOomLog(*text, error, options);
  REQUIRE(report);
  return std::move(*report);
}

const dump::OomFigure* Figure(const OomReport& report, const std::string& name) {
  for (const dump::OomFigure& f : report.stats) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST_CASE("oom paligemma listing is read once though the traceback repeats it") {
  const OomReport report = Parse("paligemma_gpu.log");
  REQUIRE(report.buffers.size() == 6);  // not 12: the traceback's copy is skipped
  CHECK(report.repeats_skipped == 1);
  CHECK(report.repeat_lines == std::vector<int64_t>{69});
  for (size_t i = 0; i < report.buffers.size(); ++i) {
    CHECK(report.buffers[i].number == static_cast<int64_t>(i) + 1);
  }
  CHECK(report.total_bytes == kLogits + kTableF32 + kTableF16 + kActivations + kWorkspace + kTuple);
  CHECK(report.total_bytes == 8455905296);  // "7.88GiB", not 15.75 GiB
  CHECK(report.notes.empty());

  // A different listing later in the log is not merged into the first; without either's message,
  // the larger is read.
  const std::string two =
      "Buffer 1:\n Size: 384.00MiB\n Shape: u32[128,1024,768]\n ====\n"
      "Buffer 1:\n Size: 1.00GiB\n Shape: f32[268435456]\n ====\n";
  std::string error;
  const std::optional<OomReport> other = ParseOomLog(two, error);
  REQUIRE(other);
  REQUIRE(other->buffers.size() == 1);
  CHECK(other->buffers[0].size_bytes == 1024 * kMiB);
  CHECK(other->repeats_skipped == 0);
  REQUIRE(other->notes.size() == 1);
  CHECK(other->notes[0].find("a listing of 1 buffers without its message at line 1 was not read; "
                             "the one at line 5 was: no listing comes with its error line and "
                             "figures: the largest") == 0);
}

TEST_CASE("oom paligemma every field: entry parameters stats failed allocation") {
  const OomReport report = Parse("paligemma_gpu.log");
  CHECK(report.format == "buffer-assignment");
  CHECK(report.message ==
        "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2110783616 bytes.");
  REQUIRE(report.failed_allocation_bytes);
  CHECK(*report.failed_allocation_bytes == 2110783616);  // XLA's exact figure, not the BFC's
  CHECK(report.failed_allocation_exact);

  const OomBuffer& logits = report.buffers[0];
  CHECK(logits.op_name ==
        "jit(dot)/jit(main)/dot_general[dimension_numbers=(((2,), (0,)), ((), ())) "
        "precision=None preferred_element_type=float32]");
  CHECK(logits.source_file == "/home/user/big_vision/big_vision/models/ppp/gemma.py");
  CHECK(logits.source_line == 175);
  CHECK(logits.source == "gemma.py:175");
  CHECK(logits.label == "custom-call");
  CHECK(logits.shape == "f32[5104,257152]");
  const OomBuffer& table = report.buffers[2];
  CHECK(table.entry_parameter == "f16[2048,257152]");
  CHECK(table.shape == "f16[2048,257152]");  // the Entry Parameter Subshape is its shape
  CHECK(table.op_name.empty());
  CHECK(table.label.empty());
  CHECK(report.buffers[3].entry_parameter == "f32[16,319,2048]");
  CHECK(report.buffers[5].shape == "(f32[5104,257152], s8[4194304])");

  // The stats block, every line, in XLA's order.
  REQUIRE(report.stats.size() == 7);
  const std::vector<std::string> names = {"parameter allocation",
                                          "constant allocation",
                                          "maybe_live_out allocation",
                                          "preallocated temp allocation",
                                          "preallocated temp fragmentation",
                                          "total allocation",
                                          "total fragmentation"};
  for (size_t i = 0; i < names.size(); ++i) {
    CHECK(report.stats[i].name == names[i]);
    CHECK(report.stats[i].block == "BufferAssignment stats");
  }
  CHECK(Figure(report, "parameter allocation")->bytes == 1095216660);  // 1.02GiB as printed
  CHECK(Figure(report, "maybe_live_out allocation")->text == "4.89GiB");
  CHECK(Figure(report, "constant allocation")->bytes == 0);
  CHECK(Figure(report, "total fragmentation")->bytes == 112);
  CHECK(Figure(report, "total fragmentation")->detail == "(0.00%)");
  CHECK(Figure(report, "preallocated temp fragmentation")->detail == "(0.00%)");
  CHECK_FALSE(report.capacity.used_bytes);  // a GPU message has no capacity line
}

TEST_CASE("oom tpu listing: capacity figures padded sizes allocation types") {
  const OomReport report = Parse("tpu_hbm.log");
  CHECK(report.format == "tpu-hbm");
  CHECK(report.message.find("RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of "
                            "memory in memory space hbm.") == 0);
  CHECK_FALSE(report.failed_allocation_bytes);
  CHECK(report.capacity.memory_space == "hbm");
  CHECK(report.capacity.used_text == "20.54G");
  CHECK(report.capacity.used_bytes == 22054657065);
  CHECK(report.capacity.capacity_text == "15.48G");
  CHECK(report.capacity.exceeded_text == "5.06G");
  CHECK(report.capacity.exceeded_bytes == 5433133629);
  std::map<std::string, std::string> stats;
  for (const dump::OomFigure& f : report.stats)
    stats[f.block + ": " + f.name] = f.text + " " + f.detail;
  CHECK(stats["Total hbm usage: total"] == "21.06G ");
  CHECK(stats["Total hbm usage: reserved"] == "530.00M ");
  CHECK(stats["Total hbm usage: arguments"] == "0B ");
  CHECK(stats["Output: output size"] == "0B ");
  CHECK(stats["Program hbm requirement: scoped"] == "173.0K ");
  CHECK(stats["Program hbm requirement: HLO temp"] ==
        "20.54G (33.9% utilization: Unpadded (6.97G) Padded (20.54G), 0.0% fragmentation (0B))");

  REQUIRE(report.buffers.size() == 3);
  const OomBuffer& one_hot = report.buffers[0];
  // s32[29360128,10]{1,0:T(8,128)}: the minor dim 10 padded to 128 lanes.
  CHECK(one_hot.size_bytes == int64_t{29360128} * 128 * 4);
  CHECK(one_hot.size_from == "shape");
  CHECK(one_hot.unpadded_size_bytes == 1170378588);  // "1.09G"
  CHECK(one_hot.padding_text == "12.91G (12.8x expansion)");
  CHECK(one_hot.allocation_type == "HLO temp");
  CHECK(one_hot.instruction == "fusion.12");
  CHECK(one_hot.category == "temporary");
  // f32[128,256,896,18]{0,3,2,1:T(8,128)}: dim 3 (second-minor) padded from 18 to 24.
  CHECK(report.buffers[1].size_bytes == int64_t{256} * 896 * 24 * 128 * 4);
  CHECK(report.buffers[1].instruction == "fusion.9.remat.1");
  CHECK(report.buffers[2].size_bytes == int64_t{512} * 1024 * 768 * 4);
  CHECK(report.buffers[2].category == "random bits");
}

TEST_CASE("oom categories: the f32 logits lead as output with no random bits") {
  const OomReport report = Parse("paligemma_gpu.log");
  REQUIRE(report.categories.size() == 4);
  CHECK(report.categories[0].category == "output");  // maybe_live_out 4.89GiB: the logits
  CHECK(report.categories[0].buffers == 1);
  CHECK(report.categories[0].bytes == kLogits);
  CHECK(report.categories[0].numbers == std::vector<int64_t>{1});
  CHECK(report.categories[1].category == "temporary");
  CHECK(report.categories[1].bytes == kTableF32 + kWorkspace + kTuple);
  CHECK(report.categories[1].numbers == std::vector<int64_t>{2, 5, 6});
  CHECK(report.categories[2].category == "parameter");
  CHECK(report.categories[2].bytes == kTableF16 + kActivations);
  CHECK(report.categories[2].numbers == std::vector<int64_t>{3, 4});
  CHECK(report.categories[3].category == "random bits");
  CHECK(report.categories[3].buffers == 0);
  CHECK(report.random_buffers == 0);
  CHECK(report.buffers[0].category == "output");
  CHECK(report.buffers[2].category == "parameter");

  // The story-000 listing: every buffer is random bits; no stats, so nothing else to tell.
  const OomReport seed = Parse("seed_000.log");
  REQUIRE(seed.categories.size() == 1);
  CHECK(seed.categories[0].category == "random bits");
  CHECK(seed.categories[0].bytes == 5 * 384 * kMiB);
}

TEST_CASE("oom sizes come from the shape: exact bytes not the rounded text") {
  const OomReport report = Parse("paligemma_gpu.log");
  const OomBuffer& logits = report.buffers[0];
  CHECK(logits.size_bytes == 5250015232);
  CHECK(logits.size_bytes == kLogits);
  CHECK(logits.listed_size_bytes == 5250597519);  // "4.89GiB" read as written
  CHECK(logits.shape_bytes == kLogits);
  CHECK(logits.size_from == "shape");
  CHECK(report.buffers[1].size_bytes == kTableF32);
  CHECK(report.buffers[2].size_bytes == kTableF16);  // from the Entry Parameter Subshape
  CHECK(report.buffers[3].size_bytes == kActivations);
  CHECK(report.buffers[5].size_bytes == kTuple);  // a tuple's pointer table

  // No shape: the listed figure; a shape that disagrees with the listing: the listed figure too.
  std::string error;
  const std::optional<OomReport> odd = ParseOomLog(
      "Buffer 1:\n Size: 1.50GiB\n ====\n"
      "Buffer 2:\n Size: 1.00MiB\n XLA Label: fusion\n Shape: f32[1024,1024]\n ====\n",
      error);
  REQUIRE(odd);
  CHECK(odd->buffers[0].size_bytes == 1536 * kMiB);
  CHECK(odd->buffers[0].size_from == "listed size");
  CHECK(odd->buffers[1].size_bytes == kMiB);
  CHECK(odd->buffers[1].size_from == "listed size");
  CHECK(odd->buffers[1].shape_bytes == 4 * kMiB);
  REQUIRE(odd->notes.size() == 1);
  CHECK(odd->notes[0].find("Buffer 2: its shape f32[1024,1024] holds 4194304 B") == 0);

  CHECK(RoundingSlack("16B") == 0);
  CHECK(RoundingSlack("4.89GiB") == (int64_t{1} << 30) / 200 + (int64_t{1} << 20) + 1);
  CHECK(RoundingSlack("38.7KiB") == 1024 / 20 + 1 + 1);
}

TEST_CASE("oom remat: not recommended to a program already rematerialized") {
  auto remat = [](const OomReport& r) {
    for (const OomSaving& s : r.savings) {
      if (s.fix == "remat") return s;
    }
    FAIL("no remat saving");
    return OomSaving{};
  };
  // Story 000's listing shows no remat: recomputing the forward bits frees all five.
  const OomReport seed = Parse("seed_000.log");
  CHECK_FALSE(seed.rematerialized);
  CHECK(remat(seed).recommended);
  CHECK(remat(seed).saving_bytes == 5 * 384 * kMiB);
  // The dump says the program is rematerialized already.
  OomOptions dump;
  dump.dump_rematerialized = true;
  dump.dump_remat_evidence = "jax.checkpoint: add.18783";
  const OomReport with_dump = Parse("seed_000.log", dump);
  CHECK(with_dump.rematerialized);
  CHECK(with_dump.remat_evidence == "the dump: jax.checkpoint: add.18783");
  CHECK_FALSE(remat(with_dump).recommended);
  CHECK(remat(with_dump).saving_bytes == 0);
  // The TPU listing's own op_names show jax.checkpoint.
  const OomReport tpu = Parse("tpu_hbm.log");
  CHECK(tpu.rematerialized);
  CHECK(tpu.remat_evidence.find("jax.checkpoint: Buffer 2") == 0);
  CHECK_FALSE(remat(tpu).recommended);
}

TEST_CASE("oom: a message without a listing is read with the --dump module's peak buffers") {
  const std::string text =
      "RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom: Ran out of memory on HBM, the total memory "
      "required for HLO temporaries (26.68G) exceeds available HBM (15.75G)\n";
  std::string error;
  const std::optional<OomReport> alone = ParseOomLog(text, error);
  REQUIRE(alone);
  CHECK(alone->buffers.empty());
  CHECK(alone->total_bytes == 0);
  OomOptions options;
  passes::LiveBuffer bits;
  bits.size_bytes = 402653184;
  bits.instruction = "fusion.7";
  bits.opcode = "fusion";
  bits.shape = "u32[128,1024,768]";
  bits.op_name = "jit(step)/jvp(model)/dropout/jit(_bernoulli)/jit(_uniform)/threefry2x32";
  bits.kind = passes::LiveBufferKind::kTemp;
  passes::LiveBuffer param = bits;
  param.size_bytes = 4096;
  param.shape = "f32[1024]";
  param.op_name = "";
  param.kind = passes::LiveBufferKind::kArgument;
  options.peak_buffers = PeakBuffersAsListed({bits, param});
  const std::optional<OomReport> with_dump = ParseOomLog(text, error, options);
  REQUIRE(with_dump);
  REQUIRE(with_dump->buffers.size() == 2);
  CHECK(with_dump->buffers[0].number == 1);
  CHECK(with_dump->buffers[0].size_bytes == 402653184);
  CHECK(with_dump->buffers[0].category == "random bits");
  CHECK(with_dump->buffers[1].category == "parameter");
  CHECK(with_dump->capacity.capacity_text == "15.75G");
  CHECK(with_dump->notes.back().find("live at spmdsim's peak of the --dump module") !=
        std::string::npos);
}

TEST_CASE("oom bad input gives a clear message and never crashes") {
  const std::vector<std::string> hostile = {
      "",
      "nothing to see here\n",
      "Buffer 99999999999999999999999:\n Size: 1GiB\n",
      "Buffer 1:\n Shape: f32[4]\n ====\n",  // no Size
      "1. Size:\n",
  };
  for (const std::string& text : hostile) {
    std::string error;
    CHECK_FALSE(ParseOomLog(text, error));
    CHECK(error.find("no out-of-memory message found") == 0);
  }
  // Survivable nonsense: read, never trusted past its limits.
  const std::vector<std::string> odd = {
      "Buffer 1:\n Size: 1e99GiB\n Shape: f32[999999999999,999999999999,999999999999]\n",
      "Buffer 1:\n Size: 9999999999PiB\n Shape: ((((((((f32[1]))))))))\n Operator: op_name=\"a\n",
      "Buffer 1:\n Size: 4B\n Operator: op_name=\"unterminated\nBuffer 2:\n Size: 8B\n",
      "Out of memory while trying to allocate 99999999999999999999999 bytes.\n1. Size: 1G\n",
      "BufferAssignment stats:\n maybe_live_out allocation: 1G\nBuffer 1:\n Size: 1G\n",
  };
  for (const std::string& text : odd) {
    std::string error;
    const std::optional<OomReport> report = ParseOomLog(text, error, {8, "--devices"});
    REQUIRE(report);
    CHECK_FALSE(report->buffers.empty());
  }
}

}  // namespace
}  // namespace spmdsim::analyzer
