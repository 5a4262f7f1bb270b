#include "analyzer/cli/command.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>

#include "analyzer/emit/progress.h"
#include "analyzer/model/rng_report.h"
#include "dump/file_reader.h"
#include "dump/size_text.h"

namespace spmdsim::analyzer {

// Defined by the source tools/embed_file.cmake writes over the demo dump.
std::string_view EmbeddedDumpName();
std::string_view EmbeddedDump();

int ExitCodeOf(const dump::DumpError& error) {
  return error.kind == dump::DumpErrorKind::kParse ? kExitParse : kExitUsage;
}

void AddInputOptions(CLI::App& command, InputOptions& options, bool with_format) {
  command.add_option("inputs", options.inputs,
                     "HLO text files (.txt or .txt.gz), --xla_dump_to directories, or - for "
                     "standard input; none analyses the embedded demo dump");
  if (with_format) {
    command.add_option("--format", options.format, "Output format")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
  }
  command.add_option("--module", options.module_filter,
                     "Only modules whose name contains this text");
  AddStageOption(command, options.stage);
  AddPlatformOption(command, options.platform);
}

void AddPlatformOption(CLI::App& command, std::string& platform) {
  command
      .add_option("--platform", platform,
                  "The platform whose buffer-assignment rules size memory: cpu, gpu, tpu, or "
                  "auto (decided from the dump: file names, layouts, custom calls)")
      ->check(CLI::IsMember({"auto", "cpu", "gpu", "tpu"}))
      ->capture_default_str();
}

void AddJaxVersionOption(CLI::App& command, std::string& version) {
  command
      .add_option("--jax-version", version,
                  "The JAX (jaxlib) release that compiled the dump, such as 0.4.30: the what-if of "
                  "replicated threefry follows its XLA (before 0.5.0 a sharded concatenation is "
                  "all-reduced, not all-gathered); default today's")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return ParseJaxVersion(text) ? "" : "must be a release such as 0.4.30, not " + text;
          },
          "VERSION"));
}

void AddDeviceOptions(CLI::App& command, DeviceChoice& choice) {
  command
      .add_option("--device", choice.device,
                  "The device the peak must fit, for the fit verdict (default: the one the dump "
                  "names, sm_9.0a -> h100-80gb): " +
                      DeviceNames())
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return FindDevice(text) != nullptr
                       ? ""
                       : "unknown device " + text + "; known: " + DeviceNames() +
                             " (or --capacity SIZE)";
          },
          "NAME"));
  command
      .add_option_function<std::string>(
          "--capacity",
          [&choice](const std::string& text) { choice.capacity = dump::ParseSize(text); },
          "The memory XLA may use per device, for the fit verdict (e.g. 79GiB); overrides the "
          "device's")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return dump::ParseSize(text)
                       ? ""
                       : "must be a size such as 79GiB or \"15.75 GiB\", not " + text;
          },
          "SIZE"));
  command
      .add_option_function<double>(
          "--mem-fraction", [&choice](const double& value) { choice.mem_fraction = value; },
          "GPU: the share of the device's memory the client gives XLA "
          "(XLA_PYTHON_CLIENT_MEM_FRACTION; default JAX's .75)")
      ->check(CLI::Range(0.01, 1.0));
}

void AddStageOption(CLI::App& command, std::string& stage) {
  command
      .add_option("--stage", stage,
                  "Only modules of this stage: after (what the devices run, exact), before "
                  "(before XLA's passes: estimates), unknown, or all")
      ->transform(CLI::Transformer(std::map<std::string, std::string>{
          {"before", "before_optimizations"}, {"after", "after_optimizations"}}))
      ->check(CLI::IsMember({"all", "before_optimizations", "after_optimizations", "unknown"}))
      ->capture_default_str();
}

bool WriteOutput(const std::string& path, std::string_view text, std::string_view what,
                 bool append) {
  if (path == "-") {
    std::cout << text;
    std::cout.flush();
    if (std::cout.good()) return true;
    std::cerr << "error: cannot write the " << what << " to standard output\n";
    return false;
  }
  std::ofstream out(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  out << text;
  out.close();
  if (out) return true;
  std::cerr << "error: cannot write the " << what << " to " << path << "\n";
  return false;
}

void AddTimelinePointsOption(CLI::App& command, int64_t& points) {
  command
      .add_option("--timeline-points", points,
                  "Points of the memory curve (each the maximum of its stretch)")
      ->check(AtLeastOne())
      ->capture_default_str();
}

CLI::Validator AtLeastOne() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size() || value < 1) {
          return "must be a whole number of at least 1, not " + text;
        }
        return "";
      },
      "INT>=1");
}

CLI::Validator NotNegative() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size() || !(value >= 0) ||
            !std::isfinite(value)) {
          return "must be a number of at least 0, not " + text;
        }
        return "";
      },
      "NUMBER>=0");
}

namespace {
int g_deferred_exit_code = kExitOk;

// What runs on the devices first: the modules after optimizations (exact), then those of unknown
// stage, then the ones before optimizations (estimates); the order XLA wrote them otherwise.
void OptimizedFirst(std::vector<dump::ModuleInput>& modules) {
  const auto rank = [](const dump::ModuleInput& input) {
    return input.stage == dump::ModuleStage::kAfterOptimizations ? 0
           : input.stage == dump::ModuleStage::kUnknown          ? 1
                                                                 : 2;
  };
  std::stable_sort(
      modules.begin(), modules.end(),
      [&](const dump::ModuleInput& a, const dump::ModuleInput& b) { return rank(a) < rank(b); });
}

void Defer(LoadedOrExit& result, int code) {
  result.deferred_exit_code = std::max(result.deferred_exit_code, code);
  g_deferred_exit_code = std::max(g_deferred_exit_code, code);
}

// The loader's progress reports, on the terminal's progress line.
void ShowProgress(const std::string& what) { Progress::Get().Update(what); }

}  // namespace

int DeferredLoadExitCode() { return g_deferred_exit_code; }

namespace {
bool g_announce_embedded_dump = true;
}  // namespace

void SetAnnounceEmbeddedDump(bool announce) { g_announce_embedded_dump = announce; }

dump::LoadOutcome LoadEmbeddedDump() {
  dump::DumpResult<std::string> text = dump::Gunzip(EmbeddedDump());
  if (!text) {
    dump::LoadOutcome outcome;
    outcome.failure = dump::DumpError{text.error().kind, "<embedded>",
                                      "<embedded>: error: " + text.error().message};
    return outcome;
  }
  dump::LoadOptions options;
  options.progress = ShowProgress;
  return dump::LoadModuleText("<embedded>/" + std::string(EmbeddedDumpName()), std::move(*text),
                              options);
}

LoadedOrExit LoadAllInputs(const InputOptions& options) {
  LoadedOrExit result;
  const auto take = [&](dump::LoadOutcome outcome) {
    Progress::Get().Clear();
    for (const dump::DumpError& skipped : outcome.skipped_files) {
      std::cerr << skipped.message << "\n";
      Defer(result, ExitCodeOf(skipped));
      result.skipped.push_back(skipped);
    }
    if (!outcome.skipped_files.empty() && !outcome.inputs.modules.empty()) {
      std::cerr << "note: " << outcome.skipped_files.size()
                << " file(s) skipped; the other modules are analysed\n";
    }
    if (outcome.failure) {
      std::cerr << outcome.failure->message << "\n";
      result.skipped.push_back(*outcome.failure);
      result.exit_code = ExitCodeOf(*outcome.failure);
      return false;
    }
    for (const std::string& note : outcome.inputs.notes) std::cerr << "note: " << note << "\n";
    for (auto& module : outcome.inputs.modules) {
      if (options.platform != "auto") module.platform = options.platform;
      module.jax_version = options.jax_version;
      for (const auto& warning : module.module->warnings) std::cerr << warning.ToString() << "\n";
      const int64_t hidden =
          module.module->warning_count - static_cast<int64_t>(module.module->warnings.size());
      if (hidden > 0) {
        std::cerr << module.path << ": warning: " << hidden << " more warning(s) not shown\n";
      }
      result.modules.push_back(std::move(module));
    }
    return true;
  };
  if (options.inputs.empty()) {
    if (g_announce_embedded_dump) {
      std::cerr << "note: no input given: this is the demo dump built into spmdsim ("
                << EmbeddedDumpName()
                << "); give a dump file or an --xla_dump_to folder to analyse yours\n";
    }
    take(LoadEmbeddedDump());
    return result;
  }
  // Every input is loaded; one that fails is reported and the others are still analysed.
  int failed = kExitOk;
  for (const std::string& input : options.inputs) {
    dump::LoadOptions load;
    load.module_filter = options.module_filter;
    load.stage = options.stage;
    load.progress = ShowProgress;
    if (!take(dump::LoadInputs(input, load))) {
      failed = std::max(failed, result.exit_code);
      result.exit_code = kExitOk;
    }
  }
  if (result.modules.empty()) {
    result.exit_code = std::max(failed, result.deferred_exit_code);
  } else if (failed != kExitOk) {
    Defer(result, failed);
  }
  OptimizedFirst(result.modules);
  return result;
}

}  // namespace spmdsim::analyzer
