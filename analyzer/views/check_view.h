// The `check` view: one CheckRun (analyzer/model/check_result.h) rendered as text or JSON.
//
// Sample text output (`spmdsim check testdata/dumps/dp8_partitionable_remat --stage
// after_optimizations --baseline B`, B written from testdata/dumps/dp8_partitionable_noremat the
// same way; the limit column (+0% on every row) left out, long lines cut with "..."):
//   spmdsim check: baseline B, tolerance +0%
//   module jit_train_step (after_optimizations)  testdata/dumps/dp8_partitionable_remat/...txt.gz
//     now: peak 2.84 MiB, temp 1.32 MiB, collectives 905.63 KiB per device per step, rng buffers
//     513.04 KiB, 4 findings
//     metric                              baseline        now                change  status
//     peak_bytes                          2.84 MiB   2.84 MiB    +1.00 KiB (+0.03%)  REGRESSED
//     temp_bytes                          1.32 MiB   1.32 MiB    +1.00 KiB (+0.07%)  REGRESSED
//     wire_bytes_per_device             905.63 KiB 905.63 KiB          0 B (+0.00%)  ok
//     wire_bytes_per_device[all-reduce] 905.63 KiB 905.63 KiB          0 B (+0.00%)  ok
//     rng_materialized_bytes            256.61 KiB 513.04 KiB +256.43 KiB (+99.93%)  REGRESSED
//     findings                                   4          4                 4 new  REGRESSED
//     new finding rng-key-residual (warning) at /work/main/tools/gen_dumps.py:169: random ...
//     ...
//   FAILED: 4 regressions, 0 limit breaches, 4 new findings, in 1 of 1 module
//
// JSON: {"schema_version", "baseline", "tolerance_pct", "max_peak_bytes", "max_wire_bytes",
// "modules": [{name, file, stage, "check": {"baseline", "passed", "figures", "checks"[],
// "findings"[]}}], "regressions", "breaches", "new_findings", "nothing_compared", "passed"}
// (docs/JSON_SCHEMA.md, section check).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "analyzer/model/check_result.h"

namespace spmdsim::analyzer {

nlohmann::ordered_json CheckToJson(const CheckRun& run);
void PrintCheckText(const CheckRun& run, std::ostream& out);

// Cells of the table, shared with the GitHub step summary: a value ("2.84 MiB", or a count), the
// change ("+1.00 KiB (+0.03%)"; "(new)" from a baseline of 0; "4 new" findings), the limit ("+0%",
// "--max-peak 2.00 MiB"), the status ("ok", "REGRESSED", "BREACHED").
std::string CheckCellValue(const CheckRow& row, int64_t value);
std::string CheckCellChange(const CheckRow& row);
std::string CheckCellLimit(const CheckRow& row);
std::string CheckCellStatus(const CheckRow& row);

// What a module on one side only means: "in the baseline, not among the inputs: not checked" or
// "not in the baseline: limits only".
const char* OneSideText(BaselineMatch match);

// "PASSED: ...", "FAILED: nothing was compared: <why>" or "FAILED: 2 regressions, 0 limit breaches,
// 4 new findings, in 1 of 2 modules".
std::string CheckVerdict(const CheckRun& run);

}  // namespace spmdsim::analyzer
