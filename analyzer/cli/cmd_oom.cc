// spmdsim oom LOGFILE [--format text|json] [--devices N] [--dump FILE|DIR [--module NAME]]
//     [--jax-version VERSION] [--device NAME] [--capacity SIZE] [--mem-fraction F]
// Reads XLA's out-of-memory message from a log as users paste it ("-" reads stdin): the
// allocation that failed, XLA's figures, the peak buffers once (a repeat in the traceback is
// skipped) with exact sizes from their shapes, largest first by category, and which of them hold
// random bits with what each RNG lowering or a remat fix would save of them. Works before anyone
// has the dump; with --dump (or --devices) the RNG what-if gets the device count, and a dump that
// is already rematerialized is not told to remat. Output: analyzer/views/oom_view.h.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "analyzer/cli/command.h"
#include "analyzer/emit/json_text.h"
#include "analyzer/model/memory_report.h"
#include "analyzer/model/module_platform.h"
#include "analyzer/model/module_report.h"
#include "analyzer/model/oom_report.h"
#include "analyzer/model/rng_report.h"
#include "analyzer/views/fit_view.h"
#include "analyzer/views/oom_view.h"
#include "analyzer/views/stats_view.h"
#include "dump/file_reader.h"
#include "ir/parser.h"
#include "passes/memory/remat_detection.h"

namespace spmdsim::analyzer {
namespace {

struct OomCommandOptions {
  std::string path;
  std::string format = "text";
  int64_t devices = 0;  // 0: from --dump, else unknown
  std::string dump;
  std::string module_filter;
  std::string jax_version;
  DeviceChoice device;  // the fit verdict's device (with --dump)
};

// The dump's module the message is read against, kept loaded for the fit verdict, with its peak
// (the buffers live there stand in for a message that lists none).
struct OomDump {
  dump::LoadOutcome outcome;
  const dump::ModuleInput* chosen = nullptr;
  std::unique_ptr<passes::ModuleAnalyses> analyses;
  passes::MemoryAnalysisOptions memory;
  passes::PeakMemoryResult baseline;
};

// Buffers of the peak listed for a message without a listing: the largest, enough to show what
// dominates without a 1,000-line answer (the JSON of `analyze` has them all).
constexpr int64_t kPeakBuffersListed = 20;

// The device count and remat evidence of the dump's first after-optimizations module (the
// first module when none is). Returns an exit code; kExitOk on success.
int ReadDump(const OomCommandOptions& command, OomOptions& options, OomDump& loaded) {
  dump::LoadOptions load;
  load.module_filter = command.module_filter;
  loaded.outcome = dump::LoadInputs(command.dump, load);
  const dump::LoadOutcome& outcome = loaded.outcome;
  if (outcome.failure) {
    std::cerr << "spmdsim oom: --dump " << command.dump << ": " << outcome.failure->message << "\n";
    return ExitCodeOf(*outcome.failure);
  }
  const dump::ModuleInput* chosen = nullptr;
  for (const dump::ModuleInput& input : outcome.inputs.modules) {
    if (chosen == nullptr || (chosen->stage != dump::ModuleStage::kAfterOptimizations &&
                              input.stage == dump::ModuleStage::kAfterOptimizations)) {
      chosen = &input;
    }
  }
  if (chosen == nullptr) {
    std::cerr << "spmdsim oom: --dump " << command.dump << ": no module found\n";
    return kExitUsage;
  }
  loaded.chosen = chosen;
  if (options.devices == 0) {
    options.devices = chosen->module->num_partitions * chosen->module->replica_count;
    options.devices_from = "dump";
  }
  const passes::RematEvidence remat = passes::FindRemat(*chosen->module);
  if (remat.found) {
    options.dump_rematerialized = true;
    options.dump_remat_evidence = remat.kind + ": " + remat.instruction +
                                  (remat.op_name.empty() ? "" : " (" + remat.op_name + ")");
  }
  return kExitOk;
}

// The dump module's peak against its device: --device / --capacity, else the capacity the
// message states (XLA:TPU: "Used 20.54G of 15.48G hbm"), else the device the dump names.
// With the fixes ranked by the peak each gives when the step does not fit.
struct DumpVerdict {
  FitVerdict fit;
  FitFixes fixes;
};

void AnalyzeDumpPeak(OomDump& dumped) {
  const dump::ModuleInput& input = *dumped.chosen;
  dumped.analyses = std::make_unique<passes::ModuleAnalyses>(*input.module);
  // The whole listing: the fixes count the random bits among every buffer live at the peak (a cut
  // listing of the 20 largest read 0 B of them where the bits are smaller than those).
  dumped.memory.live_at_peak_limit = 0;
  dumped.memory.timeline_points = 1;
  dumped.baseline = BuildMemoryReport(input, dumped.memory, dumped.analyses.get()).prediction;
  dumped.memory.platform = dumped.baseline.platform;  // the rules the peak was sized by
}

DumpVerdict DumpFit(OomDump& dumped, const OomReport& report, const DeviceChoice& device) {
  const dump::ModuleInput& input = *dumped.chosen;
  const int64_t peak = dumped.baseline.peak_bytes;
  DumpVerdict out;
  // Without a device named, an XLA:TPU message's own capacity ("Used 20.54G of 15.48G hbm").
  DeviceChoice choice = device;
  if (device.device.empty() && !device.capacity && report.capacity.capacity_bytes) {
    choice.capacity = *report.capacity.capacity_bytes;
    choice.capacity_from = "the OOM message (" + report.capacity.capacity_text + " of " +
                           report.capacity.memory_space + ")";
  }
  out.fit = JudgeModuleFit(input, peak, choice, dumped.analyses.get());
  if (!out.fit.fits.value_or(true)) {
    out.fixes = BuildFitFixes(input, *dumped.analyses, dumped.baseline, dumped.memory, out.fit);
  }
  return out;
}

int RunOom(const OomCommandOptions& command) {
  // A dump folder where the log was expected: the dump goes with --dump.
  std::error_code ec;
  if (command.path != "-" && std::filesystem::is_directory(command.path, ec)) {
    std::cerr << "spmdsim oom: error: " << command.path
              << " is a folder; oom reads the OOM message (a log file, or - for standard input) "
                 "and takes the dump with --dump: spmdsim oom LOG --dump "
              << command.path << "\n";
    return kExitUsage;
  }
  // "-" is standard input, read as any file is: bounded, gunzipped when compressed.
  dump::DumpResult<std::string> contents = dump::ReadFileContents(command.path);
  if (!contents) {
    std::cerr << "spmdsim oom: " << contents.error().message << "\n";
    return kExitUsage;
  }
  std::string text = std::move(*contents);
  OomOptions options;
  options.concat = ConcatLoweringOf(command.jax_version);
  if (command.devices > 0) {
    options.devices = command.devices;
    options.devices_from = "--devices";
  }
  OomDump dumped;
  if (!command.dump.empty()) {
    if (const int status = ReadDump(command, options, dumped); status != kExitOk) return status;
    AnalyzeDumpPeak(dumped);
    const std::vector<passes::LiveBuffer>& live = dumped.baseline.live_at_peak;
    options.peak_buffers = PeakBuffersAsListed(
        {live.begin(), live.begin() + std::min<ptrdiff_t>(kPeakBuffersListed, live.size())});
  }
  std::string error;
  const std::optional<OomReport> report = ParseOomLog(text, error, options);
  if (!report) {
    if (ir::LooksLikeHloText(text)) {
      error +=
          "; this is an HLO module, not an OOM message: give it with --dump (spmdsim oom "
          "LOG --dump " +
          command.path + "), or see its memory with spmdsim analyze " + command.path;
    }
    std::cerr << "spmdsim oom: " << command.path << ": " << error << "\n";
    return kExitParse;
  }
  std::optional<DumpVerdict> fit;
  if (dumped.chosen != nullptr) fit = DumpFit(dumped, *report, command.device);
  if (command.format == "json") {
    nlohmann::ordered_json out;
    out["schema_version"] = kSchemaVersion;
    out["file"] = command.path;
    out["fit"] = fit ? FitToJson(fit->fit) : nlohmann::ordered_json();
    if (fit) AddFixesJson(fit->fixes, out["fit"]);
    PrintOomJson(std::move(out), *report, std::cout);
  } else {
    if (fit) {
      PrintFitText(*dumped.chosen, fit->fit, std::cout);
      const dump::OomCapacity& c = report->capacity;
      if (fit->fit.fits.value_or(false) && c.used_bytes && c.capacity_bytes &&
          *c.used_bytes > *c.capacity_bytes) {
        std::cout << "  note: the message says XLA needed " << c.used_text << " of "
                  << c.capacity_text << "; the --dump module's peak fits: is it the module that "
                  << "ran out (--module NAME)?\n";
      }
      PrintFixesText(fit->fixes, std::cout);
    }
    PrintOomText(*report, std::cout);
  }
  std::cout.flush();
  return std::cout.good() ? kExitOk : kExitUsage;
}

}  // namespace

void RegisterOomCommand(CLI::App& app, RunFn& run) {
  auto options = std::make_shared<OomCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "oom",
      "Read XLA's out-of-memory message from a log: the failed allocation, the peak buffers by "
      "category, which are random bits and what each fix would save");
  command->add_option("LOGFILE", options->path, "Log with XLA's OOM message ('-' for stdin)")
      ->required();
  command->add_option("--format", options->format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  command
      ->add_option("--devices", options->devices,
                   "Devices the random arrays are split over (default: the dump's partitions)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  command->add_option("--dump", options->dump,
                      "The program's dump (FILE|DIR): its device count and whether it is "
                      "already rematerialized");
  command->add_option("--module", options->module_filter,
                      "With --dump: only modules whose name contains this");
  AddJaxVersionOption(*command, options->jax_version);
  AddDeviceOptions(*command, options->device);
  command->callback([options, &run] { run = [options] { return RunOom(*options); }; });
}

}  // namespace spmdsim::analyzer
