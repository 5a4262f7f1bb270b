// The comparison `spmdsim check` makes: each module's figures now against the baseline's and
// against absolute limits, as rows of a table (what was checked, its value before and now, the
// largest value that passes, and whether it did), plus the module's findings, each marked new when
// the baseline lacks its (kind, op_name). Every output format (text, JSON, GitHub annotations,
// JUnit, SARIF) renders this one result.
//
// Rules (docs/CI.md):
//   a compared value regresses when now > baseline + baseline * tolerance / 100 (tolerance 0:
//   any rise; from a baseline of 0, any rise, whatever the tolerance);
//   --max-peak / --max-wire are breached when peak / total wire bytes per device exceed them;
//   a finding is new when its (kind, op_name) is not among the baseline module's findings;
//   a module missing from the inputs, or absent from the baseline, is reported but does not fail;
//   a run that compared nothing fails: a baseline none of whose modules matches an input (a renamed
//   module, a wrong path), no module left after --stage, or neither a baseline nor a limit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/model/baseline.h"

namespace spmdsim::analyzer {

struct CheckOptions {
  // Percent a compared value may rise over its baseline before it counts as a regression.
  double tolerance_pct = 0;
  std::optional<int64_t> max_peak_bytes;  // --max-peak, per device
  std::optional<int64_t> max_wire_bytes;  // --max-wire, per device per step
  // --must-fit: a module whose peak exceeds what its device gives XLA (ModuleFigures::fit) fails,
  // and so does one whose device is not known.
  bool must_fit = false;
  // A run that only writes a baseline has nothing to compare, and that is not a failure.
  bool writing_baseline = false;
};

enum class CheckStatus { kOk, kRegressed, kBreached };

// "ok" | "regressed" | "breached"
const char* CheckStatusName(CheckStatus status);

// What a row checks. Compared with the baseline: the peak, temp, collective bytes (in all and
// per collective kind), materialized random bits, findings; against a limit: --max-peak,
// --max-wire, --must-fit.
enum class CheckMetric {
  kPeakBytes,
  kTempBytes,
  kWireBytes,
  kWireBytesOfKind,  // CheckRow::collective_kind names the kind
  kRngMaterializedBytes,
  kFindings,
  kMaxPeak,
  kMaxWire,
  kMustFit,
};

// "peak_bytes" | "temp_bytes" | "wire_bytes_per_device" | "wire_bytes_per_device[<kind>]" |
// "rng_materialized_bytes" | "findings" | "max_peak" | "max_wire" | "must_fit": the name every
// output format writes (docs/JSON_SCHEMA.md). `collective_kind` only for kWireBytesOfKind.
std::string CheckMetricName(CheckMetric metric, std::string_view collective_kind = {});

// One row of the table.
struct CheckRow {
  CheckMetric metric = CheckMetric::kPeakBytes;
  std::string collective_kind;  // kWireBytesOfKind: "all-reduce", ...
  std::string MetricName() const { return CheckMetricName(metric, collective_kind); }
  bool is_count = false;            // findings: counts, not bytes
  std::optional<int64_t> baseline;  // absent for limit rows
  int64_t now = 0;
  int64_t limit = 0;           // the largest value that passes
  std::string limit_label;     // "+0%", "--max-peak", "no new"
  bool limit_unknown = false;  // must_fit without a device: no limit to show
  CheckStatus status = CheckStatus::kOk;
  std::string message;  // one sentence, for annotations, JUnit and SARIF
  // "file.py:76" of the user's program where the largest growth at the peak comes from (memory
  // rows that regressed, with a baseline that keeps its peak groups); "" otherwise.
  std::string source;

  // (now - baseline) / baseline x 100; nullopt without a baseline or from a baseline of 0.
  std::optional<double> ChangePct() const;
};

struct CheckedFinding {
  CheckFinding finding;
  bool is_new = false;  // only with a baseline
};

enum class BaselineMatch {
  kNone,       // no --baseline given
  kMatched,    // compared with the baseline's module of the same (name, stage)
  kNewModule,  // analysed now, not in the baseline
  kMissing,    // in the baseline, not among the inputs (the figures are the baseline's)
};

// "none" | "matched" | "new-module" | "missing"
const char* BaselineMatchName(BaselineMatch match);

struct ModuleCheck {
  ModuleFigures figures;  // now; the baseline's for kMissing
  BaselineMatch match = BaselineMatch::kNone;
  std::vector<CheckRow> rows;
  std::vector<CheckedFinding> findings;
  // What grew at the peak since the baseline, largest first, when a memory row regressed.
  std::vector<PeakGrowth> grew;

  bool Passed() const;
};

struct CheckRun {
  CheckOptions options;
  bool has_baseline = false;
  std::string baseline_file;         // as given on the command line, for the reader
  std::vector<ModuleCheck> modules;  // input order, then modules missing from the inputs
  // Why nothing was compared, and how to match modules; empty when something was.
  std::string nothing_compared;
  // Input files that could not be read or parsed while others were: their modules went unchecked,
  // so the run fails whatever the others give.
  struct UnreadInput {
    std::string file;
    std::string message;  // its "file:line:col: error: ..." line
  };
  std::vector<UnreadInput> unread_inputs;

  bool Passed() const;
  // The file a "nothing compared" report points at: the baseline, else the first input.
  std::string NothingComparedFile() const;
  int64_t CountRows(CheckStatus status) const;
  int64_t NewFindings() const;
};

// Compares `now` with `baseline` (nullptr: limits only).
CheckRun RunChecks(const std::vector<ModuleFigures>& now,
                   const std::vector<ModuleFigures>* baseline, const CheckOptions& options);

}  // namespace spmdsim::analyzer
