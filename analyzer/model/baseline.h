// The figures `spmdsim check` compares, one record per module, and the baseline file that keeps
// them between runs (--write-baseline writes it, --baseline reads it; contract in docs/CI.md).
//
// The figures are taken from a ModuleReport (analyzer/model/module_report.h), so they are the
// numbers `analyze`, `collectives` and `rng sites` print. Only fields that are stable across
// compiles of the same program are kept: sizes, collective bytes by kind, and each finding's (kind,
// op_name); instruction names such as `while.555` change with every compile and are kept for people
// only.
//
// Sample baseline (--write-baseline testdata/dumps/dp8_partitionable_noremat, the
// after_optimizations module, one finding shown):
//   {"schema_version": 1, "kind": "spmdsim-baseline", "modules": [
//     {"name": "jit_train_step", "file": "testdata/dumps/.../module_0000...txt.gz",
//      "stage": "after_optimizations", "peak_bytes": 2978360, "temp_bytes": 1387320,
//      "argument_bytes": 1590284, "output_bytes": 1590520, "alias_bytes": 1589764,
//      "wire_bytes_per_device": 927367, "wire_by_kind": {"all-reduce": 927367},
//      "rng_materialized_bytes": 262767,
//      "findings": [{"kind": "rng-key-residual",
//                    "op_name": "jit(train_step)/jvp(TransformerModel)/.../att_dropout/.../while",
//                    "site": "while.555", "bytes": 32768}]}]}
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/model/device_memory.h"
#include "analyzer/model/fit_fixes.h"
#include "analyzer/model/module_report.h"
#include "analyzer/model/peak_groups.h"

namespace spmdsim::analyzer {

// A finding as the check sees it. The baseline file stores kind, op_name, site and bytes; the rest
// is filled only for the modules analysed in this run.
struct CheckFinding {
  std::string kind;  // rng-key-residual | rng-depends-on-partition | rng-replicated-collectives
  std::string op_name;
  std::string site;  // anchor instruction; informative only (changes between compiles)
  int64_t bytes = 0;
  std::string severity;  // "info" | "warning"
  std::string source;    // "file.py:76", empty when unknown
  std::string message;
};

struct ModuleFigures {
  std::string name;
  std::string file;
  std::string stage;
  int64_t peak_bytes = 0;  // argument + output - alias + temp, per device
  int64_t temp_bytes = 0;
  int64_t argument_bytes = 0;
  int64_t output_bytes = 0;
  int64_t alias_bytes = 0;
  int64_t wire_bytes_per_device = 0;            // per step, loop multipliers applied
  std::map<std::string, int64_t> wire_by_kind;  // the same, by collective kind
  int64_t rng_materialized_bytes = 0;           // buffers of every RNG site
  std::vector<CheckFinding> findings;
  // What is live at the peak, by category and (op_name, shape) group (peak_groups.h): what a
  // failed check says grew. Empty in a baseline written before it was kept.
  PeakComposition peak;
  // Whether the peak fits the module's device; only for the modules analysed in this run (the
  // baseline file does not keep it).
  std::optional<FitVerdict> fit;
  FitFixes fixes;  // ranked (fit_fixes.h); only for this run's modules
};

// The figures of a module as the baseline file and `check --format json` write them: peak_bytes,
// temp_bytes, argument/output/alias_bytes, wire_bytes_per_device, wire_by_kind,
// rng_materialized_bytes (no identity, no findings).
nlohmann::ordered_json FiguresToJson(const ModuleFigures& figures);

ModuleFigures FiguresFromReport(const ModuleReport& report);

// Current version of the baseline file's layout.
inline constexpr int kBaselineSchemaVersion = 1;
inline constexpr std::string_view kBaselineKind = "spmdsim-baseline";

nlohmann::ordered_json BaselineToJson(const std::vector<ModuleFigures>& modules);

// Reads a baseline file's text. nullopt and `error` ("modules[0].peak_bytes: expected a
// non-negative integer") when it is not JSON or not a baseline of this version.
std::optional<std::vector<ModuleFigures>> ParseBaseline(std::string_view text, std::string& error);

}  // namespace spmdsim::analyzer
