// How subcommands plug into the CLI: each cmd_<name>.cc defines Register<Name>Command, which adds
// its CLI11 subcommand and, when that subcommand is chosen, sets `run` to the work to do. main()
// parses, runs `run`, and returns its exit code; nothing below main exits.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/model/device_memory.h"
#include "dump/dump_error.h"
#include "dump/module_loader.h"

namespace spmdsim::analyzer {

using RunFn = std::function<int()>;

// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitUsage = 2;  // usage or I/O error
inline constexpr int kExitParse = 3;  // input that cannot be parsed

// The exit code of an input that could not be loaded: 3 for text that does not parse, else 2.
int ExitCodeOf(const dump::DumpError& error);

// The tool's version: `--version`, and the SARIF driver's version.
inline constexpr std::string_view kSpmdsimVersion = "0.1.0";

// Options every analysing command takes.
struct InputOptions {
  std::vector<std::string> inputs;  // files or directories ("-": stdin); none = the demo dump
  std::string format = "text";      // text | json
  std::string module_filter;        // --module
  std::string stage = "all";        // --stage: all | before_optimizations | after_optimizations
  std::string platform = "auto";    // --platform: auto | cpu | gpu | tpu
  std::string jax_version;          // --jax-version (commands with the RNG what-if); empty: today's
};

// Adds the shared input options (positional FILE|DIR..., --format unless `with_format` is false,
// --module, --stage, --platform) to a subcommand.
void AddInputOptions(CLI::App& command, InputOptions& options, bool with_format = true);

// Adds --platform alone (for commands with their own inputs): auto, cpu, gpu or tpu.
void AddPlatformOption(CLI::App& command, std::string& platform);

// Adds --jax-version: the JAX (jaxlib) release that compiled the dump, for the RNG what-if.
void AddJaxVersionOption(CLI::App& command, std::string& version);

// Adds --device NAME, --capacity SIZE and --mem-fraction F: the device the fit verdict compares
// the peak with (analyzer/model/device_memory.h); an unknown name or size is a usage error.
void AddDeviceOptions(CLI::App& command, DeviceChoice& choice);

// Adds --stage alone (for commands with their own inputs): all, before, after,
// before_optimizations, after_optimizations or unknown; stored as "all" or the full stage name.
void AddStageOption(CLI::App& command, std::string& stage);

// Writes `text` to the file `path`, or to standard output for "-"; false (message printed, naming
// `what`) when it cannot be written. `append` adds to the end of an existing file.
bool WriteOutput(const std::string& path, std::string_view text, std::string_view what,
                 bool append = false);

// Adds --timeline-points (points of the memory curve, at least 1) for commands that show it.
void AddTimelinePointsOption(CLI::App& command, int64_t& points);

// A whole number option that must be at least 1, with a plain message otherwise.
CLI::Validator AtLeastOne();
// A number option that must not be negative (a percentage), with a plain message otherwise.
CLI::Validator NotNegative();

// Loads every input; on failure prints the message to stderr and returns its exit code. Modules
// after optimizations come first, then those of unknown stage, then those before optimizations.
// A file that could not be read or parsed while others loaded is reported, and the command goes
// on; `deferred_exit_code` is then that file's exit code (3 for a parse error), which main()
// returns at the end unless the command's own is worse.
struct LoadedOrExit {
  std::vector<dump::ModuleInput> modules;
  int exit_code = kExitOk;
  int deferred_exit_code = kExitOk;
  // The files (or inputs) that could not be read or parsed while others loaded, in order.
  std::vector<dump::DumpError> skipped;
};
LoadedOrExit LoadAllInputs(const InputOptions& options);

// The demo dump compiled into the binary (tools/embed_file.cmake).
dump::LoadOutcome LoadEmbeddedDump();

// Whether a command given no input says on stderr that it analyses the demo dump (true but for
// `spmdsim` alone, which is the demo: main() turns it off).
void SetAnnounceEmbeddedDump(bool announce);

// The exit code of inputs skipped by LoadAllInputs so far in this process (0 if none): main()
// combines it with the command's own, so that every command ends with 3 after a parse error.
int DeferredLoadExitCode();

void RegisterStatsCommand(CLI::App& app, RunFn& run);
void RegisterCollectivesCommand(CLI::App& app, RunFn& run);
void RegisterRngCommand(CLI::App& app, RunFn& run);
void RegisterAnalyzeCommand(CLI::App& app, RunFn& run);
void RegisterOomCommand(CLI::App& app, RunFn& run);
void RegisterCheckCommand(CLI::App& app, RunFn& run);
void RegisterDiffCommand(CLI::App& app, RunFn& run);
void RegisterReportCommand(CLI::App& app, RunFn& run);
// `rng sites`, added under the `rng` subcommand by RegisterRngCommand.
void RegisterRngSitesSubcommand(CLI::App& rng, RunFn& run);

}  // namespace spmdsim::analyzer
