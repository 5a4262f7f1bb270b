// XLA's figures beside spmdsim's (analyzer/model/memory_report.h) compare like with like: where
// XLA's buffer assignment puts temporaries in another memory space (host offload's pinned host,
// color 5), memory_analysis()'s temp counts them too, and the figure beside spmdsim's device
// temp is the device's (color 0) alone.
#include "analyzer/model/memory_report.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "dump/file_reader.h"
#include "dump/module_loader.h"

namespace spmdsim::analyzer {
namespace {

namespace fs = std::filesystem;

const std::string kCell = std::string(SPMDSIM_TESTDATA_DIR) +
                          "/dumps/jax012_gpu8_plain_dp_partitionable_remat/module_0001.jit_train_"
                          "step.sm_9.0a_gpu_after_optimizations";

TEST_CASE("XLA's temp beside spmdsim's is the device's when the host holds temporaries too") {
  const fs::path dir = fs::temp_directory_path() / "spmdsim_memory_report_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string stem = "module_0001.jit_train_step.sm_9.0a_gpu_after_optimizations";
  fs::copy_file(kCell + ".txt.gz", dir / (stem + ".txt.gz"));
  // The real buffer assignment, with one more preallocated temp in the pinned host (color 5),
  // and memory_analysis() counting it in temp as XLA:GPU does.
  const dump::DumpResult<std::string> assignment =
      dump::ReadFileContents(kCell + "-buffer-assignment.txt.gz");
  REQUIRE(assignment);
  constexpr int64_t kHostTemp = 1 << 20;
  std::ofstream(dir / (stem + "-buffer-assignment.txt"))
      << "allocation 99999: size " << kHostTemp << ", color 5, page 0, preallocated-temp:\n"
      << *assignment;
  std::ifstream in(fs::path(kCell).parent_path() / "memory_analysis.json");
  nlohmann::json analysis = nlohmann::json::parse(in);
  const int64_t device_temp = analysis.at("temp_size_in_bytes");
  analysis["temp_size_in_bytes"] = device_temp + kHostTemp;
  std::ofstream(dir / "memory_analysis.json") << analysis.dump();

  dump::LoadOutcome outcome = dump::LoadInputs((dir / (stem + ".txt.gz")).string());
  REQUIRE_FALSE(outcome.failure);
  const MemoryReport report = BuildMemoryReport(outcome.inputs.modules.at(0), {});
  CHECK(report.xla.temp_bytes == device_temp);
  CHECK(report.xla.memory_analysis_temp_bytes == device_temp + kHostTemp);
  CHECK(report.xla.temp_source.find("device (color 0) preallocated temp") != std::string::npos);
  CHECK(report.xla.peak_bytes == report.prediction.peak_bytes);  // exact on XLA:GPU
  fs::remove_all(dir);
}

}  // namespace
}  // namespace spmdsim::analyzer

namespace spmdsim::analyzer {
namespace {

// A buffer-assignment and live-range file of another program renamed to pair with this module:
// their values name none of its instructions, so they are not XLA's figures for it.
TEST_CASE("companion files of another module are not used as XLA's figures, and say why") {
  const fs::path dir = fs::temp_directory_path() / "spmdsim_foreign_companions_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string stem = "module_0001.jit_train_step.sm_9.0a_gpu_after_optimizations";
  fs::copy_file(kCell + ".txt.gz", dir / (stem + ".txt.gz"));
  const std::string other = std::string(SPMDSIM_TESTDATA_DIR) +
                            "/dumps/dp8_partitionable_remat/module_0000.jit_train_step.cpu_after_"
                            "optimizations";
  fs::copy_file(other + "-buffer-assignment.txt.gz", dir / (stem + "-buffer-assignment.txt.gz"));
  fs::copy_file(other + "-live-range.txt.gz", dir / (stem + "-live-range.txt.gz"));
  dump::LoadOutcome outcome = dump::LoadInputs((dir / (stem + ".txt.gz")).string());
  REQUIRE_FALSE(outcome.failure);
  const MemoryReport report = BuildMemoryReport(outcome.inputs.modules.at(0), {});
  CHECK_FALSE(report.xla.buffer_assignment);
  CHECK_FALSE(report.xla.live_range);
  REQUIRE(report.xla.errors.size() == 2);
  CHECK(report.xla.errors[0].find("name no instruction of this module: the file of another "
                                  "module, not used") != std::string::npos);
  // The module's own files are kept (every corpus cell: memory_calibration_test.cc).
  dump::LoadOutcome own = dump::LoadInputs(kCell + ".txt.gz");
  REQUIRE_FALSE(own.failure);
  const MemoryReport kept = BuildMemoryReport(own.inputs.modules.at(0), {});
  CHECK(kept.xla.buffer_assignment);
  CHECK(kept.xla.live_range);
  CHECK(kept.xla.errors.empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace spmdsim::analyzer

namespace spmdsim::analyzer {
namespace {

// XLA's per-space temp is read once, in the model, for every space the prediction reports; every
// view labels a space the same way (a space named by its number alone is not named twice).
TEST_CASE("XLA's temp of each memory space and the spaces' labels, on a TPU step") {
  const std::string cell = std::string(SPMDSIM_TESTDATA_DIR) +
                           "/dumps/jax012_tpu16_flax_dp_partitionable_remat/module_0003.jit_train_"
                           "step.cl_1004524046.after_optimizations.txt.gz";
  dump::LoadOutcome outcome = dump::LoadInputs(cell);
  REQUIRE_FALSE(outcome.failure);
  passes::MemoryAnalysisOptions options;
  options.platform = passes::PlatformProfile::For(passes::Platform::kTpu);
  const MemoryReport report = BuildMemoryReport(outcome.inputs.modules.at(0), options);
  REQUIRE(report.xla.buffer_assignment);
  REQUIRE_FALSE(report.prediction.memory_spaces.empty());
  for (const passes::MemorySpaceUsage& space : report.prediction.memory_spaces) {
    CHECK(report.xla.TempBytesOfSpace(space.space) ==
          report.xla.buffer_assignment->TempBytesOfColor(space.space));
    const std::string label = MemorySpaceLabel(space);
    const std::string number = "S(" + std::to_string(space.space) + ")";
    CHECK(label.find(number) != std::string::npos);
    CHECK(label.find(number) == label.rfind(number));  // once
  }
  CHECK(report.xla.TempBytesOfSpace(0) == report.xla.buffer_assignment->TempBytesOfColor(0));
  CHECK(report.xla.TempBytesOfSpace(12345) == -1);
  passes::MemorySpaceUsage vmem;
  vmem.space = 1;
  vmem.name = "VMEM";
  CHECK(MemorySpaceLabel(vmem) == "VMEM (S(1))");
}

}  // namespace
}  // namespace spmdsim::analyzer
