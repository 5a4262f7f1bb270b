// "Is this module partitioned yet?" is decided once (passes/module_facts.h), and the content rule
// agrees with XLA's own file names on every module of the corpus, including after-optimizations
// modules with their schedule taken away (as XLA's benchmark modules are written). Every command
// then agrees about it.
#include "passes/module_facts.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyzer/test_support.h"
#include "dump/module_loader.h"
#include "testing/corpus_test.h"

namespace spmdsim::analyzer {
namespace {

using nlohmann::json;

// Every module file of a cell: its own "files", or each module's of a several-module process.
std::vector<json> ModuleFiles(const json& program) {
  if (program.contains("modules") && program.at("modules").is_array() &&
      !program.at("modules").empty() && program.at("modules").at(0).contains("files")) {
    std::vector<json> files;
    for (const json& m : program.at("modules")) files.push_back(m.at("files"));
    return files;
  }
  return {program.at("files")};
}

dump::ModuleInput LoadOne(const std::string& relative) {
  dump::LoadOutcome outcome = dump::LoadInputs(std::string(SPMDSIM_TESTDATA_DIR) + "/" + relative);
  REQUIRE_FALSE(outcome.failure);
  REQUIRE(outcome.inputs.modules.size() == 1);
  return std::move(outcome.inputs.modules.front());
}

SPMDSIM_CORPUS_TEST("the module's own text says whether it is partitioned as XLA's names do",
                    program) {
  for (const json& files : ModuleFiles(program)) {
    if (files.contains("before")) {
      const dump::ModuleInput before = LoadOne(files.at("before"));
      INFO(before.path);
      CHECK(passes::IsUnpartitioned(*before.module) == (before.module->num_partitions > 1));
      CHECK(passes::IsUnpartitioned(*before.module, passes::StageHint::kBeforeOptimizations) ==
            (before.module->num_partitions > 1));
    }
    dump::ModuleInput after = LoadOne(files.at("after"));
    INFO(after.path);
    CHECK_FALSE(passes::IsUnpartitioned(*after.module));
    // Without its schedule (XLA's benchmark modules, hand-edited dumps): still per device.
    after.module->is_scheduled = false;
    CHECK_FALSE(passes::IsUnpartitioned(*after.module));
  }
}

// An after-optimizations module without `is_scheduled=true` read from standard input (no file
// name to go by): memory is sized from its shapes, exactly as XLA sized it, and analyze,
// collectives and rng sites agree that it is partitioned.
TEST_CASE("an unscheduled partitioned module is sized from its shapes by every command") {
  for (const std::string cell :
       {"dp8_partitionable_remat", "jax012_gpu8_flax_dp_partitionable_remat",
        "jax012_tpu4_flax_dp_partitionable_remat"}) {
    INFO(cell);
    const json& manifest = testing::CorpusJson("manifest.json");
    const json* program = nullptr;
    for (const json& p : manifest.at("programs")) {
      if (p.at("name") == cell) program = &p;
    }
    REQUIRE(program != nullptr);
    const std::string dir = std::string(SPMDSIM_TESTDATA_DIR) + "/";
    const std::string after = dir + program->at("files").at("after").get<std::string>();
    const std::string unscheduled = "--version >/dev/null; zcat " + after +
                                    " | sed '1s/, is_scheduled=true//' | " + SPMDSIM_BINARY;
    const test::RunOutput file = test::RunSpmdsim("analyze --format json " + after);
    const test::RunOutput piped = test::RunSpmdsim(unscheduled + " analyze --format json -");
    REQUIRE(file.exit_code == 0);
    REQUIRE(piped.exit_code == 0);
    const json a = json::parse(file.out).at("modules").at(0).at("memory");
    const json b = json::parse(piped.out).at("modules").at(0).at("memory");
    for (const char* field : {"argument_bytes", "output_bytes", "alias_bytes"}) {
      INFO(field);
      CHECK(a.at(field) == b.at(field));
    }
    const json rng = json::parse(test::RunSpmdsim(unscheduled + " rng sites --format json -").out);
    CHECK(rng.at("modules").at(0).at("rng").at("partitioned") == true);
    const json collectives =
        json::parse(test::RunSpmdsim(unscheduled + " collectives --format json -").out);
    CHECK_FALSE(collectives.at("modules").at(0).at("collectives").contains("predicted"));
  }
}

}  // namespace
}  // namespace spmdsim::analyzer
