// Runs the built `spmdsim analyze` (SPMDSIM_BINARY) on a dump directory: the JSON `memory`
// section (docs/JSON_SCHEMA.md) and the text view come from the same figures.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

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

TEST_CASE("analyze refuses a bad option value") {
  CHECK(RunSpmdsim("analyze " + kDump + " --sizes everything").exit_code == 2);
}

}  // namespace
}  // namespace spmdsim::analyzer
