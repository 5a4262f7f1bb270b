// Runs the built `spmdsim analyze` (SPMDSIM_BINARY) on a dump directory: the JSON `memory`
// section (docs/JSON_SCHEMA.md) and the text view come from the same figures.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyzer/emit/human_units.h"
#include "analyzer/test_support.h"

namespace spmdsim::analyzer {
namespace {

using test::RunOutput;
using test::RunSpmdsim;

const std::string kDump = std::string(SPMDSIM_TESTDATA_DIR) + "/dumps/mesh4x2_partitionable_remat";

TEST_CASE("analyze --format json: the memory section of both stages") {
  const RunOutput run = RunSpmdsim("analyze " + kDump + " --format json --timeline-points 16");
  REQUIRE(run.exit_code == 0);
  const nlohmann::json out = nlohmann::json::parse(run.out);
  CHECK(out.at("schema_version") == 1);
  REQUIRE(out.at("modules").size() == 2);
  bool saw_after = false;
  for (const auto& module : out.at("modules")) {
    const auto& memory = module.at("memory");
    for (const char* key : {"peak_bytes", "argument_bytes", "output_bytes", "alias_bytes",
                            "temp_bytes", "peak_instruction", "live_at_peak", "timeline", "xla"}) {
      CHECK(memory.contains(key));
    }
    CHECK(memory.at("peak_bytes") ==
          memory.at("argument_bytes").get<int64_t>() + memory.at("output_bytes").get<int64_t>() -
              memory.at("alias_bytes").get<int64_t>() + memory.at("temp_bytes").get<int64_t>());
    CHECK(memory.at("timeline").size() <= 16);
    const auto& live = memory.at("live_at_peak");
    REQUIRE(!live.empty());
    for (const char* key : {"size_bytes", "instruction", "opcode", "shape", "op_name", "source"}) {
      CHECK(live[0].contains(key));
    }
    if (module.at("stage") == "after_optimizations") {
      saw_after = true;
      CHECK(memory.at("schedule") == "module schedule");
      const auto& xla = memory.at("xla");
      REQUIRE(xla.is_object());
      CHECK(xla.at("source") == "memory_analysis.json");
      CHECK(xla.at("temp_bytes") == memory.at("temp_bytes"));
      CHECK(xla.at("argument_bytes") == memory.at("argument_bytes"));
      CHECK(xla.at("live_range").at("schedule_length") == memory.at("schedule_length"));
    } else {
      CHECK(memory.at("sizes_from_shardings") == true);
      CHECK(memory.at("schedule") == "dependency order (module not scheduled)");
    }
  }
  CHECK(saw_after);
}

TEST_CASE("analyze text: XLA's OOM-listing words and XLA's figures beside the prediction") {
  const RunOutput run = RunSpmdsim("analyze " + kDump + " --module jit_train_step --live 2");
  REQUIRE(run.exit_code == 0);
  for (const char* words : {"peak ", "XLA ", "(memory_analysis.json)", "Buffer 1:", "Size:",
                            "Operator: op_name=", "XLA Label:", "Shape:", "memory curve"}) {
    INFO(words);
    CHECK(run.out.find(words) != std::string::npos);
  }
  CHECK(run.out.find("Buffer 3:") == std::string::npos);
}

// `--at POSITION`: what is live there, as at the peak when it is the peak position; the live
// bytes are the curve's; a random-bit buffer is told by its category; past the end: exit 2.
TEST_CASE("analyze --at: what is live at one schedule position") {
  const std::string dump =
      std::string(SPMDSIM_TESTDATA_DIR) + "/dumps/dp8_partitionable_remat --stage after";
  const RunOutput plain = RunSpmdsim("analyze " + dump + " --format json --timeline-points 100000");
  REQUIRE(plain.exit_code == 0);
  const nlohmann::json memory = nlohmann::json::parse(plain.out).at("modules").at(0).at("memory");
  const int64_t peak = memory.at("peak_time");
  const RunOutput at_peak =
      RunSpmdsim("analyze " + dump + " --format json --at " + std::to_string(peak));
  REQUIRE(at_peak.exit_code == 0);
  const nlohmann::json live_at =
      nlohmann::json::parse(at_peak.out).at("modules").at(0).at("memory").at("live_at");
  CHECK(live_at.at("position") == peak);
  CHECK(live_at.at("instruction") == memory.at("peak_instruction"));
  const auto& listed = live_at.at("buffers");
  const auto& at_the_peak = memory.at("live_at_peak");
  REQUIRE(listed.size() == at_the_peak.size());
  CHECK(live_at.at("count") == listed.size());
  bool random_bits = false;
  for (size_t i = 0; i < listed.size(); ++i) {
    CHECK(listed[i].at("instruction") == at_the_peak[i].at("instruction"));
    CHECK(listed[i].at("size_bytes") == at_the_peak[i].at("size_bytes"));
    random_bits |= listed[i].at("category") == "random bits";
  }
  CHECK(random_bits);  // the dump's dropout bits are live at its peak
  // Every point of the whole curve (one point per position) has the live bytes --at gives.
  for (const auto& point : memory.at("timeline")) {
    if (point.at("time").get<int64_t>() % 97 != 0) continue;
    const RunOutput at = RunSpmdsim("analyze " + dump + " --format json --at " +
                                    std::to_string(point.at("time").get<int64_t>()));
    REQUIRE(at.exit_code == 0);
    CHECK(nlohmann::json::parse(at.out).at("modules").at(0).at("memory").at("live_at").at(
              "live_bytes") == point.at("live_bytes"));
  }
  const RunOutput text = RunSpmdsim("analyze " + dump + " --at " + std::to_string(peak));
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("live at position " + std::to_string(peak) + ": ") != std::string::npos);
  const int64_t length = memory.at("schedule_length");
  const std::string past_args = "analyze " + dump + " --at " + std::to_string(length);
  CHECK(RunSpmdsim(past_args).exit_code == 2);
  // The message is on stderr (RunSpmdsim drops it: piped through cat here).
  const RunOutput past = RunSpmdsim(past_args + " 2>&1 | cat");
  CHECK(past.out.find("error: --at " + std::to_string(length) + ": the schedule of") !=
        std::string::npos);
  CHECK(past.out.find("positions (0.." + std::to_string(length - 1) + ")") != std::string::npos);
}

TEST_CASE("analyze refuses a bad option value") {
  CHECK(RunSpmdsim("analyze " + kDump + " --sizes everything").exit_code == 2);
}

}  // namespace
}  // namespace spmdsim::analyzer

namespace spmdsim::analyzer {
namespace {

const std::string kSeedH100 =
    std::string(SPMDSIM_TESTDATA_DIR) + "/dumps/jax012_gpu8_seed_plain_dp_partitionable_remat";
const std::string kTpu4 =
    std::string(SPMDSIM_TESTDATA_DIR) + "/dumps/jax012_tpu4_flax_lm1b_replicated";

// XLA's own figures for the seed program on 8 H100s: argument + output - alias + temp of its
// memory_analysis.json, which the verdict compares with JAX's 75% of an H100's 81,559 MiB.
TEST_CASE("analyze: the first line says whether the step fits the device the dump names") {
  const RunOutput run = RunSpmdsim("analyze --stage after " + kSeedH100);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.rfind("jit_train_step: peak 92.01 GiB per device does not fit the H100 80GB "
                      "(59.74 GiB for XLA): over by 32.27 GiB\n",
                      0) == 0);
  const RunOutput json_run = RunSpmdsim("analyze --stage after --format json " + kSeedH100);
  const nlohmann::json fit = nlohmann::json::parse(json_run.out).at("modules").at(0).at("fit");
  CHECK(fit.at("fits") == false);
  CHECK(fit.at("device") == "h100-80gb");
  CHECK(fit.at("peak_bytes") == 98792009232);
  CHECK(fit.at("usable_bytes") == 64140607488);  // 0.75 x 81,559 MiB
  CHECK(fit.at("margin_bytes") == 64140607488 - 98792009232);
  // With a device that holds it: an H200 at JAX's default fraction.
  const RunOutput h200 = RunSpmdsim("analyze --stage after --device h200 " + kSeedH100);
  CHECK(h200.out.rfind("jit_train_step: peak 92.01 GiB per device fits the H200 141GB", 0) == 0);
  // An H100 given all its memory is still too small: no fraction is offered.
  const RunOutput all = RunSpmdsim("analyze --stage after --mem-fraction 1 " + kSeedH100);
  CHECK(all.out.find("does not fit") != std::string::npos);
  CHECK(all.out.find("fits with XLA_PYTHON_CLIENT_MEM_FRACTION") == std::string::npos);
  // The replicated kernel-lowered compile (57.88 GiB) under a fraction of .5: .73 would hold it.
  const RunOutput half =
      RunSpmdsim("analyze --stage after --mem-fraction .5 " + std::string(SPMDSIM_TESTDATA_DIR) +
                 "/dumps/jax012_gpu8_seed_flax_dp_replicated_kernel_remat");
  CHECK(half.out.find("does not fit the H100 80GB (39.82 GiB for XLA): over by 18.05 GiB; fits "
                      "with XLA_PYTHON_CLIENT_MEM_FRACTION=0.73") != std::string::npos);
}

TEST_CASE("analyze: a TPU dump needs --device for a verdict; bad devices are usage errors") {
  const RunOutput none = RunSpmdsim("analyze --stage after " + kTpu4);
  REQUIRE(none.exit_code == 0);
  CHECK(none.out.find("no fit verdict: the TPU generation is in the compile's "
                      "target_arguments.txt") != std::string::npos);
  const RunOutput v5e = RunSpmdsim("analyze --stage after --device tpu-v5e " + kTpu4);
  CHECK(v5e.out.find("fits the TPU v5e (15.75 GiB for XLA)") != std::string::npos);
  CHECK(RunSpmdsim("analyze --device h10 " + kTpu4).exit_code == 2);
  CHECK(RunSpmdsim("analyze --capacity lots " + kTpu4).exit_code == 2);
  CHECK(RunSpmdsim("analyze --mem-fraction 1.5 " + kTpu4).exit_code == 2);
  CHECK(RunSpmdsim("check --must-fit --stage after " + kTpu4).exit_code == 1);
  CHECK(RunSpmdsim("check --must-fit --stage after --capacity 15.75GiB " + kTpu4).exit_code == 0);
}

}  // namespace
}  // namespace spmdsim::analyzer

namespace spmdsim::analyzer {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// A dump folder's text opens with one row per module, the same figures as each module's JSON,
// the largest after-optimizations peak marked; one module has no summary.
TEST_CASE("analyze text: several modules open with a one-screen summary of their peaks") {
  for (const std::string& dir : {std::string(SPMDSIM_TESTDATA_DIR) +
                                     "/dumps/jax012_gpu8_seed_flax_dp_partitionable_kernel_remat",
                                 kDump}) {
    const RunOutput json_run = RunSpmdsim("analyze " + dir + " --format json --timeline-points 1");
    const RunOutput text_run = RunSpmdsim("analyze " + dir + " --timeline-points 1");
    REQUIRE(json_run.exit_code == 0);
    REQUIRE(text_run.exit_code == 0);
    const nlohmann::json modules = nlohmann::json::parse(json_run.out).at("modules");
    REQUIRE(modules.size() >= 2);
    const std::vector<std::string> lines = Lines(text_run.out);
    INFO(text_run.out.substr(0, 3000));
    REQUIRE(lines.size() > modules.size() + 2);
    CHECK(lines[0].rfind(std::to_string(modules.size()) + " modules; the largest peak is ", 0) ==
          0);
    CHECK(lines[1].find("module") != std::string::npos);
    int64_t top_peak = -1;
    size_t top = 0;
    for (size_t i = 0; i < modules.size(); ++i) {
      const nlohmann::json& m = modules[i];
      const int64_t peak = m.at("memory").at("peak_bytes");
      const std::string& row = lines[2 + i];
      CHECK(row.find(m.at("name").get<std::string>()) != std::string::npos);
      CHECK(row.find(HumanBytes(peak)) != std::string::npos);
      if (m.at("stage") == "after_optimizations" && peak > top_peak) {
        top_peak = peak;
        top = i;
      }
      const nlohmann::json& fit = m.at("fit");
      if (fit.at("fits").is_boolean()) {
        CHECK(row.find(fit.at("fits").get<bool>() ? "yes (" : "no: over ") != std::string::npos);
      }
    }
    REQUIRE(top_peak >= 0);
    CHECK(lines[2 + top].rfind("  * ", 0) == 0);
    CHECK(lines[0].find(HumanBytes(top_peak) + " per device") != std::string::npos);
    CHECK(lines[2 + modules.size()].empty());
    CHECK(lines[3 + modules.size()].rfind(modules[0].at("name").get<std::string>() + ": peak ",
                                          0) == 0);
  }
  const RunOutput one = RunSpmdsim("analyze " + kDump + " --stage after --timeline-points 1");
  CHECK(one.out.find("modules; the largest peak") == std::string::npos);
}

}  // namespace
}  // namespace spmdsim::analyzer
