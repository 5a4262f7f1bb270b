// What `spmdsim check` hands to CI systems besides its own text and JSON: GitHub Actions workflow
// annotations and a step-summary table, and a JUnit XML report. Each renders one CheckRun
// (analyzer/model/check_result.h); SARIF is in analyzer/views/sarif_report.h. Recipe and formats:
// docs/CI.md.
//
// Sample annotations (GITHUB_ACTIONS=true; remat checked against a noremat baseline):
//   ::error file=testdata/dumps/dp8_partitionable_remat/module_0000...txt.gz,title=spmdsim
//   peak_bytes regressed::jit_train_step (after_optimizations): peak_bytes rose from 2.84 MiB to
//   2.84 MiB (+1.00 KiB, +0.03%), more than the 0% tolerance
//   ::warning file=tools/gen_dumps.py,line=169,title=spmdsim rng-key-residual::jit_train_step
//   (after_optimizations): random values computed in the forward pass ...
//
// Sample JUnit (one testsuite per module, one testcase per row of the check table):
//   <testsuites name="spmdsim check" tests="8" failures="2" errors="0" skipped="0">
//     <testsuite name="jit_train_step (after_optimizations)" tests="6" failures="2" ...>
//       <testcase classname="spmdsim.check.jit_train_step.after_optimizations" name="peak_bytes">
//         <failure type="regressed" message="jit_train_step (after_optimizations): ...">...
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "analyzer/model/check_result.h"

namespace spmdsim::analyzer {

// "file.py:76" -> {"file.py", 76}; without a trailing ":<digits>", line 0 and the text as file.
struct SourceLocation {
  std::string file;
  int64_t line = 0;
};
SourceLocation SplitSource(std::string_view source);

// `path` relative to `root` when it lies under it ("/ws/a/b.py", "/ws" -> "a/b.py"); else as is.
std::string RelativeTo(std::string_view path, std::string_view root);

// GitHub workflow-command escaping: in a message, % -> %25, \r -> %0D, \n -> %0A; in a property
// value (file=, title=) also : -> %3A and , -> %2C.
std::string GithubEscapeData(std::string_view text);
std::string GithubEscapeProperty(std::string_view text);

// & < > " ' as character references; control characters and U+FFFE/U+FFFF, which XML 1.0
// cannot hold, as visible text (analyzer/emit/control_chars.h).
std::string XmlEscape(std::string_view text);

// Text from a dump in Markdown (a table cell or a list item), every ASCII punctuation character
// backslash-escaped: nothing in it ends a cell, opens a code span, starts HTML or a link.
std::string MarkdownCell(std::string_view text);
// Text from a dump as one Markdown code span that nothing in it can close.
std::string MarkdownCode(std::string_view text);

struct CiOutputOptions {
  // Paths under this directory are written relative to it (the repository checkout:
  // $GITHUB_WORKSPACE); empty = as found in the dump.
  std::string source_root;
};

// `::error ...` for every regression and breach and every new finding, `::warning ...` for every
// other finding that has a source file:line.
void PrintGithubAnnotations(const CheckRun& run, const CiOutputOptions& options, std::ostream& out);

// Markdown for $GITHUB_STEP_SUMMARY: the verdict, the table of checks, the new findings.
std::string GithubStepSummary(const CheckRun& run);

// JUnit XML: a testsuite per module, a testcase per check, a failure element per regression or
// breach; a module missing from the inputs or from the baseline is one skipped testcase.
std::string JunitXml(const CheckRun& run);

}  // namespace spmdsim::analyzer
