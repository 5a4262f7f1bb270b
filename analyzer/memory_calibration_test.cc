// spmdsim's per-device memory figures against XLA's own, on every after_optimizations dump listed
// in testdata/manifest.json: argument, output and alias bytes must be equal, temp within 2% of
// compiled.memory_analysis() (the test prints the error table; today every dump is exact).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "dump/module_loader.h"
#include "dump/xla_memory_files.h"
#include "passes/memory_analysis.h"
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

std::unique_ptr<ir::HloModule> LoadModule(const std::string& path) {
  dump::LoadOutcome outcome = dump::LoadInputs(path);
  INFO(path);
  REQUIRE_FALSE(outcome.failure);
  REQUIRE(outcome.inputs.modules.size() == 1);
  return std::move(outcome.inputs.modules[0].module);
}

SPMDSIM_CORPUS_TEST("argument/output/alias equal XLA's and temp is within 2% on every dump",
                    program) {
  const std::string name = program.at("name");
  const nlohmann::json& xla = program.at("memory_analysis");
  const auto module = LoadModule(Path(program, "after"));
  const passes::PeakMemoryResult r = passes::AnalyzePeakMemory(*module);
  INFO(name);
  CHECK(r.argument_bytes == xla.at("argument_size_in_bytes").get<int64_t>());
  CHECK(r.output_bytes == xla.at("output_size_in_bytes").get<int64_t>());
  CHECK(r.alias_bytes == xla.at("alias_size_in_bytes").get<int64_t>());
  const auto xla_temp = xla.at("temp_size_in_bytes").get<int64_t>();
  const double error = static_cast<double>(r.temp_bytes - xla_temp) / static_cast<double>(xla_temp);
  INFO("temp: spmdsim " << r.temp_bytes << " B, XLA " << xla_temp << " B, error " << 100 * error
                        << "%");
  CHECK(std::abs(error) <= 0.02);
}

SPMDSIM_CORPUS_TEST("the heap holds exactly the values XLA packs into its temp allocation",
                    program) {
  const std::string name = program.at("name");
  INFO(name);
  const auto module = LoadModule(Path(program, "after"));
  passes::MemoryAnalysisOptions options;
  options.record_placements = true;
  const passes::PeakMemoryResult r = passes::AnalyzePeakMemory(*module, options);
  const auto assignment = dump::LoadXlaBufferAssignment(Path(program, "buffer_assignment"));
  REQUIRE(assignment);
  std::set<std::string> xla_heap;
  for (const auto& allocation : assignment->allocations) {
    if (!allocation.preallocated_temp) continue;
    for (const auto& value : allocation.values) {
      if (value.shape.empty() || value.shape.front() != '(') xla_heap.insert(value.Key());
    }
  }
  std::set<std::string> ours;
  for (const passes::Placement& p : r.placements) ours.insert(p.value);
  CHECK(ours == xla_heap);
}

TEST_CASE("seed dump: the dropout random bits are live at the peak") {
  const nlohmann::json manifest = Manifest();
  for (const auto& program : manifest.at("programs")) {
    if (program.at("name") != "seed_dp8_partitionable_remat") continue;
    const auto module = LoadModule(Path(program, "after"));
    const passes::PeakMemoryResult r = passes::AnalyzePeakMemory(*module);
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
