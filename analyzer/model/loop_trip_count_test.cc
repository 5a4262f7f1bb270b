// Trip counts derived from a loop's condition and induction variable (passes/loop_trip_count.h)
// against the ones XLA states: on every while loop of every dump where XLA wrote
// known_trip_count (XLA:CPU and XLA:GPU), the derived count must equal it. XLA:TPU, and the XLA
// of JAX 0.4, write none; there every loop must still get a count.
#include "passes/loop_trip_count.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dump/module_loader.h"
#include "testing/corpus_test.h"

namespace spmdsim::analyzer {
namespace {

using nlohmann::json;

std::vector<std::string> AfterFiles(const json& program) {
  std::vector<std::string> files;
  if (program.contains("modules") && program.at("modules").is_array()) {
    for (const json& m : program.at("modules")) {
      if (m.contains("files")) files.push_back(m.at("files").at("after"));
    }
  }
  if (files.empty()) files.push_back(program.at("files").at("after"));
  return files;
}

SPMDSIM_CORPUS_TEST("trip counts from loop conditions equal XLA's known_trip_count", program) {
  int64_t stated = 0;
  int64_t loops = 0;
  for (const std::string& file : AfterFiles(program)) {
    dump::LoadOutcome outcome = dump::LoadInputs(std::string(SPMDSIM_TESTDATA_DIR) + "/" + file);
    REQUIRE_FALSE(outcome.failure);
    for (const dump::ModuleInput& input : outcome.inputs.modules) {
      for (const ir::HloComputation* computation : input.module->computations) {
        for (const ir::HloInstruction* instr : computation->instructions) {
          if (instr->opcode != ir::Opcode::kWhile) continue;
          ++loops;
          INFO(file << ": " << instr->name);
          const std::optional<int64_t> derived = passes::InductionTripCount(*instr);
          CHECK(derived.has_value());
          if (const std::optional<int64_t> known = passes::KnownTripCount(*instr)) {
            ++stated;
            CHECK(derived == known);
          }
        }
      }
    }
  }
  // Where XLA states counts (XLA:CPU and XLA:GPU since JAX 0.5's XLA), it states every loop's;
  // XLA:TPU states none.
  if (program.at("platform_kind") == "tpu") CHECK(stated == 0);
  if (stated > 0) CHECK(stated == loops);
}

}  // namespace
}  // namespace spmdsim::analyzer
