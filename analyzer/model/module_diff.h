// What changed between two versions of a module (`spmdsim diff A B`), from their ModuleReports
// (analyzer/model/module_report.h): the memory terms, the buffers live at the peak, collectives by
// kind, RNG sites by mode and kind, and the findings that came and went. Renderings in
// analyzer/views/diff_view.h.
//
// Buffers live at the peak are grouped by (op_name, shape), because instruction names change
// between compiles while what a buffer holds and where it comes from do not: a group is
// "appeared" when only B has it, "disappeared" when only A has it, "changed" when both have it
// with different total bytes. Findings are matched by (kind, op_name), as `check` does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/model/module_report.h"

namespace spmdsim::analyzer {

struct DiffOptions {
  // Buffer groups listed per category (appeared / disappeared / changed), largest |change| first.
  size_t top = 10;
};

// A figure in A and in B.
struct Delta {
  int64_t a = 0;
  int64_t b = 0;
  int64_t Change() const;                   // b - a, saturating
  std::optional<double> ChangePct() const;  // nullopt when a is 0 and b is not
};

struct LiveGroupDiff {
  std::string op_name;
  std::string shape;
  std::string source;  // of the group's first buffer in B, else in A
  Delta buffers;       // buffers of the group
  Delta bytes;         // their total size
};

// One category of groups: the `top` largest by |bytes change|, and totals over all of them.
struct LiveCategory {
  std::vector<LiveGroupDiff> top;
  int64_t groups = 0;        // all groups of the category
  int64_t change_bytes = 0;  // sum of their bytes change
};

struct LiveDiff {
  LiveCategory appeared;
  LiveCategory disappeared;
  LiveCategory changed;
  int64_t unchanged_groups = 0;
  Delta buffers;  // buffers live at the peak, in all
};

struct CollectiveKindDiff {
  std::string kind;
  Delta ops;   // instructions
  Delta runs;  // executions per step
  Delta wire_bytes_per_device;
};

struct RngGroupDiff {
  std::string mode;
  std::string kind;
  Delta sites;
  Delta materialized_bytes;
};

struct ModuleDiff {
  Delta peak_bytes;
  Delta temp_bytes;
  Delta argument_bytes;
  Delta output_bytes;
  Delta alias_bytes;
  LiveDiff live;
  std::vector<CollectiveKindDiff> collectives;  // by kind name
  Delta wire_bytes_per_device;                  // per step, all kinds
  std::vector<RngGroupDiff> rng;                // by (mode, kind)
  Delta rng_sites;
  Delta rng_materialized_bytes;
  Delta rng_wire_bytes_per_device;
  std::vector<passes::RngFinding> findings_added;    // in B, not in A
  std::vector<passes::RngFinding> findings_removed;  // in A, not in B
};

ModuleDiff DiffModules(const ModuleReport& a, const ModuleReport& b, const DiffOptions& options);

}  // namespace spmdsim::analyzer
