// spmdsim's per-device memory figures against XLA's own, on every after_optimizations dump listed
// in testdata/manifest.json, each sized by the rules of the platform the dump names
// (analyzer/model/module_platform.h): argument, output and alias bytes must be equal, temp within
// 1% of compiled.memory_analysis() on CPU and GPU and within 2% of the HBM preallocated temp of the
// buffer assignment on TPU (libtpu's memory_analysis() temp is not made of the dump's
// allocations: the four-figures test below lists the TPU cells as known gaps for that reason).
#include <algorithm>
#include <catch2/catch.hpp>
#include <climits>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "analyzer/model/module_platform.h"
#include "dump/module_loader.h"
#include "dump/xla_memory_files.h"
#include "passes/memory/memory_analysis.h"
#include "testing/corpus_test.h"

namespace spmdsim::analyzer {
namespace {

nlohmann::json Manifest() {
  std::ifstream in(SPMDSIM_TESTDATA_DIR "/manifest.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

std::string Path(const nlohmann::json& program, const char* file) {
  return std::string(SPMDSIM_TESTDATA_DIR) + "/" + program.at("files").at(file).get<std::string>();
}

dump::ModuleInput LoadModule(const std::string& path) {
  dump::LoadOutcome outcome = dump::LoadInputs(path);
  INFO(path);
  REQUIRE_FALSE(outcome.failure);
  REQUIRE(outcome.inputs.modules.size() == 1);
  return std::move(outcome.inputs.modules[0]);
}

passes::PeakMemoryResult Analyze(const dump::ModuleInput& input,
                                 passes::MemoryAnalysisOptions options = {}) {
  options.platform = MemoryProfileOf(input);
  return passes::AnalyzePeakMemory(*input.module, options);
}

SPMDSIM_CORPUS_TEST(
    "argument/output/alias equal XLA's and temp is within 1% on every dump (TPU: 2% of HBM temp)",
    program) {
  const std::string name = program.at("name");
  const nlohmann::json& xla = program.at("memory_analysis");
  const dump::ModuleInput input = LoadModule(Path(program, "after"));
  const passes::PeakMemoryResult r = Analyze(input);
  INFO(name << " (" << passes::PlatformName(r.platform.platform) << " rules)");
  CHECK(r.argument_bytes == xla.at("argument_size_in_bytes").get<int64_t>());
  CHECK(r.output_bytes == xla.at("output_size_in_bytes").get<int64_t>());
  CHECK(r.alias_bytes == xla.at("alias_size_in_bytes").get<int64_t>());
  int64_t xla_temp = xla.at("temp_size_in_bytes").get<int64_t>();
  double tolerance = 0.01;
  if (r.platform.platform == passes::Platform::kTpu) {
    const auto assignment = dump::LoadXlaBufferAssignment(Path(program, "buffer_assignment"));
    REQUIRE(assignment);
    xla_temp = assignment->TempBytesOfColor(0);
    tolerance = 0.02;
  }
  const double error = static_cast<double>(r.temp_bytes - xla_temp) / static_cast<double>(xla_temp);
  INFO("temp: spmdsim " << r.temp_bytes << " B, XLA " << xla_temp << " B, error " << 100 * error
                        << "%");
  CHECK(std::abs(error) <= tolerance);
}

// Every module's platform is decided from the dump alone (file names, layouts, GPU backend
// configs), before and after optimizations, and is the one it was compiled for.
SPMDSIM_CORPUS_TEST("the platform each dump names is the one it was compiled for", program) {
  const std::string kind = program.at("platform_kind");
  for (const char* stage : {"after", "before"}) {
    const std::string path = Path(program, stage);
    dump::LoadOutcome outcome = dump::LoadInputs(path);
    REQUIRE_FALSE(outcome.failure);
    REQUIRE(outcome.inputs.modules.size() == 1);
    dump::ModuleInput& input = outcome.inputs.modules[0];
    // A lone file: a before-optimizations module takes its platform from the files beside it.
    input.files = dump::FindModuleFiles(path);
    INFO(path);
    const passes::PlatformProfile profile = MemoryProfileOf(input);
    CHECK(passes::PlatformName(profile.platform) == kind);
    CHECK(profile.decided_by == "the dump");
  }
}

// The values of the default memory space's heap (HBM on a TPU; other spaces are heaps of their
// own) by "name{index}", each at its offset: XLA's from its buffer-assignment file (tuple tables
// aside: allocations of their own, not heap values), and spmdsim's placements.
struct HeapOffsets {
  std::map<std::string, int64_t> xla;
  std::map<std::string, int64_t> ours;
};

HeapOffsets HeapOffsetsOf(const nlohmann::json& program) {
  const dump::ModuleInput input = LoadModule(Path(program, "after"));
  passes::MemoryAnalysisOptions options;
  options.record_placements = true;
  const passes::PeakMemoryResult r = Analyze(input, options);
  const auto assignment = dump::LoadXlaBufferAssignment(Path(program, "buffer_assignment"));
  REQUIRE(assignment);
  HeapOffsets offsets;
  for (const auto& allocation : assignment->allocations) {
    if (!allocation.preallocated_temp || allocation.color != 0) continue;
    for (const auto& value : allocation.values) {
      if (value.shape.empty() || value.shape.front() != '(') {
        offsets.xla[value.Key()] = value.offset;
      }
    }
  }
  for (const passes::Placement& p : r.placements) offsets.ours[p.value] = p.offset;
  return offsets;
}

std::set<std::string> Keys(const std::map<std::string, int64_t>& offsets) {
  std::set<std::string> keys;
  for (const auto& [value, offset] : offsets) keys.insert(value);
  return keys;
}

int64_t Lowest(const std::map<std::string, int64_t>& offsets) {
  int64_t low = INT64_MAX;
  for (const auto& [value, offset] : offsets) low = std::min(low, offset);
  return low;
}

SPMDSIM_CORPUS_TEST("the heap holds exactly the values XLA packs into its temp allocation",
                    program) {
  INFO(program.at("name").get<std::string>());
  const HeapOffsets offsets = HeapOffsetsOf(program);
  CHECK(Keys(offsets.ours) == Keys(offsets.xla));
}

// Where each value lies in the heap, against the offset XLA gives it, both taken from the heap's
// lowest offset (the tables XLA lays before the heap are not modelled value by value). This pins
// the packing order of each platform (XLA's two sorts on CPU and GPU, definition order on TPU's
// HBM), not only the heap's size.
SPMDSIM_CORPUS_TEST("the heap places every value at XLA's offset", program) {
  INFO(program.at("name").get<std::string>());
  const HeapOffsets offsets = HeapOffsetsOf(program);
  const int64_t xla_base = Lowest(offsets.xla);
  const int64_t our_base = Lowest(offsets.ours);
  int64_t compared = 0;
  int64_t misplaced = 0;
  for (const auto& [value, offset] : offsets.ours) {
    const auto xla = offsets.xla.find(value);
    if (xla == offsets.xla.end()) continue;
    ++compared;
    if (offset - our_base != xla->second - xla_base) {
      ++misplaced;
      UNSCOPED_INFO(value << ": heap offset " << offset - our_base << ", XLA "
                          << xla->second - xla_base);
    }
  }
  CHECK(compared == static_cast<int64_t>(offsets.xla.size()));
  CHECK(misplaced == 0);
}

TEST_CASE("seed dump: the dropout random bits are live at the peak") {
  const nlohmann::json manifest = Manifest();
  for (const auto& program : manifest.at("programs")) {
    if (program.at("name") != "seed_dp8_partitionable_remat") continue;
    const dump::ModuleInput input = LoadModule(Path(program, "after"));
    const passes::PeakMemoryResult r = Analyze(input);
    int dropout_bits = 0;
    for (const passes::LiveBuffer& b : r.live_at_peak) {
      if (b.shape != "u32[128,1024,768]") continue;
      CHECK(b.size_bytes == int64_t{128} * 1024 * 768 * 4);
      CHECK(b.op_name.find("dropout") != std::string::npos);
      CHECK_FALSE(b.source.empty());
      ++dropout_bits;
    }
    // Both dropouts of every block whose bits are being recomputed around the peak.
    CHECK(dropout_bits >= 2);
    CHECK(r.peak_bytes == r.argument_bytes + r.output_bytes - r.alias_bytes + r.temp_bytes);
    return;
  }
  FAIL("seed_dp8_partitionable_remat is not in the manifest");
}

// XLA's temporaries at the peak of its temp allocation: every value of the default memory
// space's preallocated temp with its offset (tuple tables aside: they are allocations of their
// own, not heap values), live over its range in XLA's live-range file; at each position the
// distinct offsets in use add up, and the first position where they add up most is the peak.
struct XlaHeapPeak {
  int64_t bytes = 0;
  std::vector<std::pair<int64_t, std::string>> live;  // (size, "name{index}"), largest first
};

XlaHeapPeak XlaPeakBuffers(const dump::XlaBufferAssignment& assignment,
                           const dump::XlaLiveRange& ranges) {
  struct Chunk {
    int64_t offset, size, start, end;
    std::string value;
  };
  std::vector<Chunk> chunks;
  for (const auto& allocation : assignment.allocations) {
    if (!allocation.preallocated_temp || allocation.color != 0) continue;
    for (const auto& value : allocation.values) {
      if (!value.shape.empty() && value.shape.front() == '(') continue;
      const auto range = ranges.ranges.find(value.Key());
      if (range == ranges.ranges.end()) continue;
      chunks.push_back(
          {value.offset, value.size, range->second.start, range->second.end, value.Key()});
    }
  }
  XlaHeapPeak best;
  for (int64_t t = 0; t <= ranges.max_time; ++t) {
    std::map<int64_t, std::pair<int64_t, std::string>> in_use;  // offset -> (size, a holder)
    for (const Chunk& c : chunks) {
      if (c.start > t || c.end < t) continue;
      auto& slot = in_use[c.offset];
      if (c.size > slot.first) slot = {c.size, c.value};
    }
    int64_t bytes = 0;
    for (const auto& [offset, slot] : in_use) bytes += slot.first;
    if (bytes <= best.bytes) continue;
    best.bytes = bytes;
    best.live.clear();
    for (const Chunk& c : chunks) {
      if (c.start <= t && t <= c.end) best.live.emplace_back(c.size, c.value);
    }
  }
  std::sort(best.live.begin(), best.live.end(), std::greater<>());
  return best;
}

SPMDSIM_CORPUS_TEST("the 20 largest temporaries at the peak are those XLA holds at its peak",
                    program) {
  INFO(program.at("name").get<std::string>());
  const dump::ModuleInput input = LoadModule(Path(program, "after"));
  passes::MemoryAnalysisOptions options;
  const passes::PeakMemoryResult r = Analyze(input, options);
  // The ground truth needs XLA's live-range file (JAX 0.4's XLA writes none).
  const bool has_live_range_file = program.at("files").at("live_range").is_string();
  REQUIRE(has_live_range_file);
  const auto assignment = dump::LoadXlaBufferAssignment(Path(program, "buffer_assignment"));
  const auto ranges = dump::LoadXlaLiveRange(Path(program, "live_range"));
  REQUIRE(assignment);
  REQUIRE(ranges);
  const XlaHeapPeak xla = XlaPeakBuffers(*assignment, *ranges);
  REQUIRE_FALSE(xla.live.empty());
  std::set<std::string> xla_live;
  for (const auto& [size, value] : xla.live) xla_live.insert(value);
  std::vector<int64_t> ours_sizes;
  for (const passes::LiveBuffer& b : r.live_at_peak) {
    if (b.kind != passes::LiveBufferKind::kTemp || ours_sizes.size() == 20) continue;
    ours_sizes.push_back(b.size_bytes);
    // Each of ours is a value XLA's assignment holds at its peak, named as XLA names it.
    INFO(b.instruction << b.index << " " << b.size_bytes << " B");
    CHECK(xla_live.count(b.instruction + b.index) == 1);
  }
  // The heap's peak: distinct offsets count once on XLA's side; spmdsim's heap at its peak tick
  // (shared buffers once) must hold the same bytes.
  CHECK(r.max_live_temp_bytes == xla.bytes);
  std::vector<int64_t> xla_sizes;
  for (const auto& [size, value] : xla.live) {
    if (xla_sizes.size() == ours_sizes.size()) break;
    xla_sizes.push_back(size);
  }
  CHECK(ours_sizes == xla_sizes);
}

SPMDSIM_CORPUS_TEST("XLA's buffer-assignment file and memory_analysis() give the same four figures",
                    program) {
  INFO(program.at("name").get<std::string>());
  const auto assignment = dump::LoadXlaBufferAssignment(Path(program, "buffer_assignment"));
  const auto analysis = dump::LoadXlaMemoryAnalysis(Path(program, "memory_analysis"));
  REQUIRE(assignment);
  REQUIRE(analysis);
  CHECK(assignment->ArgumentBytes() == analysis->Field("argument_size_in_bytes"));
  CHECK(assignment->OutputBytes() == analysis->Field("output_size_in_bytes"));
  CHECK(assignment->AliasBytes() == analysis->Field("alias_size_in_bytes"));
  CHECK(assignment->TempBytes() == analysis->Field("temp_size_in_bytes"));
}

}  // namespace
}  // namespace spmdsim::analyzer
