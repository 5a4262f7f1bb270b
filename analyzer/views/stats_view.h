// The `stats` view: one result struct, rendered as text or JSON.
//
// Sample text output:
//   module jit_train_step  (testdata/.../module_0000.jit_train_step.cpu_after_optimizations.txt)
//     stage: after_optimizations   scheduled: yes   partitions: 8   replicas: 1
//     computations: 190   instructions: 4182
//     parameters: 74 (1.52 MiB)   outputs: 1.52 MiB
//     collectives: all-reduce 58
//     custom calls: (none)
//     top opcodes: fusion 1064, parameter 1010, get-tuple-element 402, ...
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "dump/module_loader.h"
#include "passes/stats_analysis.h"

namespace spmdsim::analyzer {

// The identity fields every command's module object starts with: name, file, stage.
nlohmann::ordered_json ModuleIdentityJson(const dump::ModuleInput& input);

nlohmann::ordered_json StatsToJson(const passes::StatsResult& stats);
void PrintStatsText(const dump::ModuleInput& input, const passes::StatsResult& stats,
                    std::ostream& out);

// Current version of the JSON output's schema (docs/JSON_SCHEMA.md).
inline constexpr int kSchemaVersion = 1;

// Writes the JSON document every per-module command prints:
// {"schema_version": kSchemaVersion, "modules": [...]}.
void PrintModulesJson(nlohmann::ordered_json modules, std::ostream& out);

}  // namespace spmdsim::analyzer
