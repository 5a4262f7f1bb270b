// The fit verdict (analyzer/model/device_memory.h): the device table and its names, the device
// read from a dump, the overrides of the command line, and on every corpus dump the verdict on
// XLA's own peak (memory_analysis.json) against the device the manifest says it was compiled for.
#include "analyzer/model/device_memory.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "analyzer/model/memory_report.h"
#include "testing/corpus_test.h"

namespace spmdsim::analyzer {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

ModulePlatform Gpu(const std::string& arch) { return {PlatformKind::kGpu, arch}; }

TEST_CASE("device table: every name and alias finds its own device, whatever the case") {
  std::set<std::string> seen;
  for (const DeviceSpec& spec : DeviceTable()) {
    CHECK(seen.insert(std::string(spec.name)).second);
    CHECK(FindDevice(spec.name) == &spec);
    CHECK(spec.memory_bytes > spec.reserved_bytes);
    CHECK_FALSE(spec.source.empty());
  }
  CHECK(FindDevice("H100")->name == "h100-80gb");
  CHECK(FindDevice("h800")->name == "h100-80gb");
  CHECK(FindDevice("V5E")->name == "tpu-v5e");
  CHECK(FindDevice("trillium")->name == "tpu-v6e");
  CHECK(FindDevice("h10") == nullptr);
  CHECK(FindDevice("") == nullptr);
  CHECK(FindDevice("h100,h800") == nullptr);  // one name, not the alias list
}

TEST_CASE("device from the dump: a compute capability picks its most common device, said so") {
  const DeviceCapacity h100 = ResolveDeviceCapacity({}, Gpu("9.0a"));
  REQUIRE(h100.known);
  CHECK(h100.device == "h100-80gb");
  CHECK(h100.memory_bytes == 81559 * kMiB);
  CHECK(h100.memory_fraction == kJaxDefaultGpuMemFraction);
  CHECK(h100.usable_bytes == static_cast<int64_t>(81559.0 * kMiB * 0.75));
  CHECK(h100.decided_by.find("sm_9.0a") != std::string::npos);
  CHECK(h100.decided_by.find("h200") != std::string::npos);  // the other sm_9.0 device
  CHECK(ResolveDeviceCapacity({}, Gpu("8.0")).device == "a100-80gb");
  CHECK(ResolveDeviceCapacity({}, Gpu("10.0a")).device == "b200");
  // No device of that arch, no arch, TPU and CPU: no verdict, and the reason says what to pass.
  for (const ModulePlatform& platform :
       {Gpu("12.0"), Gpu(""), ModulePlatform{PlatformKind::kTpu, ""},
        ModulePlatform{PlatformKind::kCpu, ""}, ModulePlatform{}}) {
    const DeviceCapacity none = ResolveDeviceCapacity({}, platform);
    CHECK_FALSE(none.known);
    CHECK(none.unknown.find("--capacity") != std::string::npos);
  }
}

TEST_CASE("device from the command line: --device, --mem-fraction, --capacity") {
  DeviceChoice choice;
  choice.device = "h200";
  choice.mem_fraction = 0.9;
  const DeviceCapacity h200 = ResolveDeviceCapacity(choice, Gpu("9.0a"));
  CHECK(h200.device == "h200");
  CHECK(h200.usable_bytes == static_cast<int64_t>(143771.0 * kMiB * 0.9));
  CHECK(h200.decided_by == "--device h200");

  choice = {};
  choice.device = "v5e";
  const DeviceCapacity v5e = ResolveDeviceCapacity(choice, {PlatformKind::kTpu, ""});
  CHECK(v5e.usable_bytes == 16 * 1024 * kMiB - 256 * kMiB);  // libtpu's 15.75G
  CHECK_FALSE(v5e.memory_fraction);

  choice = {};
  choice.capacity = 1000;
  const DeviceCapacity any = ResolveDeviceCapacity(choice, {PlatformKind::kCpu, ""});
  CHECK(any.known);
  CHECK(any.usable_bytes == 1000);
  CHECK(any.decided_by == "--capacity");
}

TEST_CASE("verdict: fits up to the usable byte, and the GPU memory fraction that would fit") {
  DeviceChoice choice;
  choice.device = "h100";
  const DeviceCapacity h100 = ResolveDeviceCapacity(choice, {});
  CHECK(*JudgeFit(h100.usable_bytes, h100).fits);
  const FitVerdict over = JudgeFit(h100.usable_bytes + 1, h100);
  CHECK_FALSE(*over.fits);
  CHECK(over.margin_bytes == -1);
  CHECK(GpuFractionThatFits(over) == Approx(0.76));
  // More than the whole device: no fraction fits.
  CHECK_FALSE(GpuFractionThatFits(JudgeFit(h100.memory_bytes + 1, h100)));
  CHECK_FALSE(JudgeFit(1, ResolveDeviceCapacity({}, {})).fits);
}

// Every GPU cell was compiled for H100 SXM (manifest "platforms"): the verdict names it, and
// compares XLA's own figures from memory_analysis() with 75% of its memory.
SPMDSIM_CORPUS_TEST("the fit verdict of every GPU corpus dump is XLA's peak against an H100",
                    program) {
  if (program.at("platform_kind") != "gpu") return;
  const nlohmann::json& file = program.at("files").at("after");
  const nlohmann::json& analysis = program.at("files").at("memory_analysis");
  if (!file.is_string() || !analysis.is_string()) return;
  INFO(file.get<std::string>());
  dump::LoadOutcome outcome =
      dump::LoadInputs(std::string(SPMDSIM_TESTDATA_DIR) + "/" + file.get<std::string>());
  REQUIRE_FALSE(outcome.failure);
  const dump::ModuleInput& input = outcome.inputs.modules.at(0);
  std::ifstream in(std::string(SPMDSIM_TESTDATA_DIR) + "/" + analysis.get<std::string>());
  const nlohmann::json xla = nlohmann::json::parse(in);
  // What the runtime allocates for one run: the arguments, the outputs not donated, the temp
  // allocation (memory_analysis()'s peak_memory_in_bytes is the heap's, without the arguments).
  const int64_t xla_peak = xla.at("argument_size_in_bytes").get<int64_t>() +
                           xla.at("output_size_in_bytes").get<int64_t>() -
                           xla.at("alias_size_in_bytes").get<int64_t>() +
                           xla.at("temp_size_in_bytes").get<int64_t>();
  passes::MemoryAnalysisOptions options;
  options.platform = MemoryProfileOf(input);
  const int64_t peak = BuildMemoryReport(input, options).prediction.peak_bytes;
  const FitVerdict verdict = JudgeModuleFit(input, peak, {});
  CHECK(verdict.capacity.device == "h100-80gb");
  REQUIRE(verdict.fits);
  CHECK(*verdict.fits == (xla_peak <= verdict.capacity.usable_bytes));
  CHECK(verdict.peak_bytes == xla_peak);
}

}  // namespace
}  // namespace spmdsim::analyzer
