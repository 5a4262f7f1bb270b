// spmdsim check FILE|DIR... [--baseline FILE] [--write-baseline FILE] [--max-peak SIZE]
//                           [--max-wire SIZE] [--tolerance PCT] [--junit FILE] [--sarif FILE]
//                           [--source-root DIR] [--stage STAGE] [--format text|json]
//                           [--module NAME] [--must-fit] [--device NAME] [--capacity SIZE]
//                           [--mem-fraction F]
//
// The CI gate: each module's peak and temp memory, collective bytes (in total and by kind), RNG
// buffer bytes and findings, against a baseline written by an earlier run and against absolute
// limits (rules in analyzer/model/check_result.h, recipe in docs/CI.md). Exit 0 within limits, 1 on
// a regression, a breach or a new finding, 2 on a usage or I/O error (a bad size, an unreadable or
// invalid baseline, a report that cannot be written), 3 on input that cannot be parsed.
//
// Under GitHub Actions (GITHUB_ACTIONS=true) it also prints workflow annotations (to stdout; to
// stderr with --format json, where stdout holds the JSON) and appends a Markdown table to the file
// named by GITHUB_STEP_SUMMARY.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "analyzer/cli/command.h"
#include "analyzer/emit/json_text.h"
#include "analyzer/model/baseline.h"
#include "analyzer/model/check_result.h"
#include "analyzer/model/module_report.h"
#include "analyzer/views/check_view.h"
#include "analyzer/views/ci_formats.h"
#include "analyzer/views/sarif_report.h"
#include "dump/file_reader.h"
#include "dump/size_text.h"

namespace spmdsim::analyzer {
namespace {

struct CheckCommandOptions {
  InputOptions input;
  std::string baseline;                 // --baseline: compare with this file
  std::string write_baseline;           // --write-baseline: save this run's figures here
  std::optional<std::string> max_peak;  // --max-peak SIZE, per device
  std::optional<std::string> max_wire;  // --max-wire SIZE, per device per step
  double tolerance_pct = 0;             // any rise regresses
  std::string junit;
  std::string sarif;
  std::string source_root;   // default: $GITHUB_WORKSPACE
  DeviceChoice device;       // the fit verdict's device (--device, --capacity, --mem-fraction)
  bool must_fit = false;     // --must-fit
  bool stage_given = false;  // --stage on the command line (else: after optimizations, if any)
};

// Without --stage, check gates what the devices run: the after-optimizations modules when there
// are any (the before-optimizations ones are estimates, and a baseline of both stages warns of
// "modules on one side" as soon as one side dumps only one). Says what it left out.
void KeepWhatRuns(std::vector<dump::ModuleInput>& modules) {
  const auto runs = [](const dump::ModuleInput& m) {
    return m.stage == dump::ModuleStage::kAfterOptimizations;
  };
  if (std::none_of(modules.begin(), modules.end(), runs)) return;
  const auto others = std::count_if(modules.begin(), modules.end(),
                                    [&](const dump::ModuleInput& m) { return !runs(m); });
  if (others == 0) return;
  std::erase_if(modules, [&](const dump::ModuleInput& m) { return !runs(m); });
  std::cerr << "note: check compares the " << modules.size()
            << " after-optimizations module(s), what the devices run; --stage all adds the "
            << others << " other(s)\n";
}

// A module's file as the baseline keeps it: relative to the input (folder) it was found in, so
// that a baseline written on one machine reads the same on another.
std::string BaselinePath(const std::string& file, const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  for (const std::string& input : inputs) {
    if (input == file) return fs::path(file).filename().string();
    std::error_code ec;
    if (!fs::is_directory(input, ec)) continue;
    const fs::path relative = fs::path(file).lexically_relative(fs::path(input));
    if (!relative.empty() && *relative.begin() != "..") return relative.string();
  }
  return file;
}

// Parses a --max-* size into `value`; false (message printed) when it is not one.
bool ParseLimit(const std::string& flag, const std::optional<std::string>& text,
                std::optional<int64_t>& value) {
  if (!text) return true;
  value = dump::ParseSize(*text);
  if (value) return true;
  std::cerr << "error: " << flag << " \"" << *text
            << "\" is not a size; expected a number with an optional unit: B, KiB, MiB, GiB, "
               "TiB, PiB (KB, MB, ... read as binary), e.g. 1.5GiB or \"300 MiB\"\n";
  return false;
}

std::optional<std::vector<ModuleFigures>> ReadBaseline(const std::string& path) {
  const dump::DumpResult<std::string> text = dump::ReadFileContents(path);
  if (!text) {
    std::cerr << text.error().message << " (--baseline)\n";
    return std::nullopt;
  }
  std::string error;
  std::optional<std::vector<ModuleFigures>> modules = ParseBaseline(*text, error);
  if (!modules) std::cerr << "error: baseline " << path << ": " << error << "\n";
  return modules;
}

std::string AbsoluteRoot(const std::string& root) {
  if (root.empty()) return root;
  std::string path = std::filesystem::absolute(root).lexically_normal().string();
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

int RunCheck(const CheckCommandOptions& options) {
  int to_stdout = 0;
  for (const std::string* path : {&options.write_baseline, &options.junit, &options.sarif}) {
    to_stdout += *path == "-" ? 1 : 0;
  }
  if (to_stdout > 1) {
    std::cerr << "error: only one of --write-baseline, --junit and --sarif can be - (standard "
                 "output)\n";
    return kExitUsage;
  }
  const bool stdout_taken = to_stdout == 1;
  CheckOptions check;
  check.tolerance_pct = options.tolerance_pct;
  check.writing_baseline = !options.write_baseline.empty();
  check.must_fit = options.must_fit;
  if (!ParseLimit("--max-peak", options.max_peak, check.max_peak_bytes) ||
      !ParseLimit("--max-wire", options.max_wire, check.max_wire_bytes)) {
    return kExitUsage;
  }
  std::optional<std::vector<ModuleFigures>> baseline;
  if (!options.baseline.empty()) {
    baseline = ReadBaseline(options.baseline);
    if (!baseline) return kExitUsage;
  }
  LoadedOrExit loaded = LoadAllInputs(options.input);
  if (loaded.exit_code != kExitOk) return loaded.exit_code;
  if (!options.stage_given) KeepWhatRuns(loaded.modules);

  std::vector<ModuleFigures> now;
  for (const dump::ModuleInput& input : loaded.modules) {
    ModuleReportOptions report;
    report.device = options.device;
    now.push_back(FiguresFromReport(BuildModuleReport(input, report)));
  }
  if (!options.write_baseline.empty()) {
    std::vector<ModuleFigures> kept = now;
    for (ModuleFigures& m : kept) m.file = BaselinePath(m.file, options.input.inputs);
    if (!WriteOutput(options.write_baseline, JsonText(BaselineToJson(kept)) + "\n", "baseline")) {
      return kExitUsage;
    }
  }

  CheckRun run = RunChecks(now, baseline ? &*baseline : nullptr, check);
  run.baseline_file = options.baseline;
  for (const dump::DumpError& skipped : loaded.skipped) {
    // The located error line; its excerpt of the source went to stderr with it.
    run.unread_inputs.push_back(
        {skipped.path, skipped.message.substr(0, skipped.message.find('\n'))});
  }
  const bool json = options.input.format == "json";
  // A report written to stdout (-) takes it; the check's own output then goes to stderr.
  std::ostream& verdict = stdout_taken ? std::cerr : std::cout;
  if (json) {
    verdict << JsonText(CheckToJson(run)) << "\n";
  } else {
    PrintCheckText(run, verdict);
  }

  CiOutputOptions ci;
  const char* workspace = std::getenv("GITHUB_WORKSPACE");
  ci.source_root = AbsoluteRoot(!options.source_root.empty() ? options.source_root
                                : workspace                  ? workspace
                                                             : "");
  const char* actions = std::getenv("GITHUB_ACTIONS");
  if (actions != nullptr && std::string_view(actions) == "true") {
    PrintGithubAnnotations(run, ci, json || stdout_taken ? std::cerr : std::cout);
    const char* summary = std::getenv("GITHUB_STEP_SUMMARY");
    if (summary != nullptr && *summary != '\0' &&
        !WriteOutput(summary, GithubStepSummary(run) + "\n", "step summary", /*append=*/true)) {
      return kExitUsage;
    }
  }
  if (!options.junit.empty() && !WriteOutput(options.junit, JunitXml(run), "JUnit report")) {
    return kExitUsage;
  }
  if (!options.sarif.empty()) {
    const SarifOptions sarif{std::string(kSpmdsimVersion), ci.source_root};
    if (!WriteOutput(options.sarif, JsonText(SarifLog(run, sarif)) + "\n", "SARIF log")) {
      return kExitUsage;
    }
  }
  std::cout.flush();
  if (!std::cout.good()) return kExitUsage;
  return run.Passed() ? kExitOk : kExitCheckFailed;
}

}  // namespace

void RegisterCheckCommand(CLI::App& app, RunFn& run) {
  auto options = std::make_shared<CheckCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "check",
      "CI gate: peak/temp memory, collective bytes, RNG buffers and findings against a baseline "
      "and limits; exit 1 on a regression (docs/CI.md)");
  AddInputOptions(*command, options->input);
  command->get_option("inputs")->required()->description(
      "HLO text files (.txt or .txt.gz) or --xla_dump_to directories");
  command->add_option("--baseline", options->baseline,
                      "Compare with this baseline (written by --write-baseline)");
  command->add_option("--write-baseline", options->write_baseline,
                      "Write this run's figures as a baseline to FILE");
  command->add_option_function<std::string>(
      "--max-peak", [options](const std::string& size) { options->max_peak = size; },
      "Fail when a module's peak memory per device exceeds SIZE (e.g. 16GiB)");
  command->add_option_function<std::string>(
      "--max-wire", [options](const std::string& size) { options->max_wire = size; },
      "Fail when a module's collective bytes per device per step exceed SIZE");
  command->add_flag("--must-fit", options->must_fit,
                    "Fail when a module's peak exceeds what its device gives XLA (the fit "
                    "verdict's device: --device, --capacity, or the one the dump names)");
  AddDeviceOptions(*command, options->device);
  command
      ->add_option("--tolerance", options->tolerance_pct,
                   "Percent a value may rise over the baseline before it regresses")
      ->check(NotNegative())
      ->capture_default_str();
  command->add_option("--junit", options->junit, "Also write a JUnit XML report to FILE");
  command->add_option("--sarif", options->sarif, "Also write a SARIF 2.1.0 log to FILE");
  command->add_option("--source-root", options->source_root,
                      "Write source paths under DIR relative to it in annotations and SARIF "
                      "(default: $GITHUB_WORKSPACE)");
  command->callback([options, command, &run] {
    options->stage_given = command->count("--stage") > 0;
    run = [options] { return RunCheck(*options); };
  });
}

}  // namespace spmdsim::analyzer
