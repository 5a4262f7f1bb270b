// libFuzzer target over the files the commands take besides HLO text, as the commands use them
// (tools/fuzz.sh --target command_inputs). The readers of XLA's files are fuzzed alone, with the
// module file set and gzip, by dump/companion_files_fuzzer.cc; this target takes what they accept
// on through the views and adds the tool's own files. The first byte chooses the reader
// (data[0] % 7, the same selectors as dump/companion_files_fuzzer.cc), the rest is the file:
//   0 buffer assignment  (`-buffer-assignment.txt`)     dump::ParseXlaBufferAssignment
//   1 live range         (`-live-range.txt`)            dump::ParseXlaLiveRange
//   2 memory-usage report (`-memory-usage-report.txt`)  dump::ParseXlaMemoryUsageReport
//   3 memory_analysis.json                              dump::ParseXlaMemoryAnalysis
//   4 `check --baseline` JSON                           ParseBaseline
//   5 OOM log (`spmdsim oom`)                           ParseOomLog
//   6 `--topology FILE` JSON                            passes::ParseTopologyJson
// What a reader accepts then goes where the commands take it:
//   0-3  the file is written to a temporary file and named as the companion of a small module,
//        so that BuildMemoryReport loads it (gzip included) and derives XLA's figures from it, as
//        `analyze` does; the memory view is rendered as text and JSON;
//   4    the baseline is written back (BaselineToJson must read back to the same text) and
//        checked against itself, the small module's figures and no baseline, with the check's
//        text, JSON, SARIF, JUnit and GitHub outputs;
//   5    `spmdsim oom - [--format json]` runs on the text (stdin and stdout redirected);
//   6    the small module's collectives are timed on the topology, written as text and JSON (no
//        infinite or null time).
// Every JSON output must parse back with nlohmann::json::parse; a failure aborts after printing it.
//
// A finding is a sanitizer report (ASan/UBSan), a crash (an uncaught exception included), a
// timeout, an OOM or an abort() below. Build and run with tools/fuzz.sh --target command_inputs;
// replay with `build-fuzz/analyzer/command_inputs_fuzzer FILE`.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/cli/command.h"
#include "analyzer/emit/json_text.h"
#include "analyzer/model/baseline.h"
#include "analyzer/model/check_result.h"
#include "analyzer/model/module_report.h"
#include "analyzer/model/oom_report.h"
#include "analyzer/views/check_view.h"
#include "analyzer/views/ci_formats.h"
#include "analyzer/views/collectives_view.h"
#include "analyzer/views/memory_view.h"
#include "analyzer/views/sarif_report.h"
#include "analyzer/views/stats_view.h"
#include "dump/module_loader.h"
#include "dump/xla_memory_files.h"
#include "ir/parser.h"
#include "passes/collectives/collective_analysis.h"
#include "passes/collectives/topology.h"
#include "testing/fuzz_checks.h"

namespace spmdsim::analyzer {
namespace {

constexpr size_t kMaxInputBytes = 256 * 1024;

// A scheduled module with arguments, an output alias, temporaries, a loop and collectives: the
// module whose companion files the fuzzed ones pretend to be.
constexpr std::string_view kModule =
    R"(HloModule fuzz_companion, is_scheduled=true, input_output_alias={ {0}: (0, {}, may-alias) }, entry_computation_layout={(f32[64]{0}, u32[2]{0})->(f32[64]{0}, f32[8,8]{1,0})}, num_partitions=8

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(%x, %y)
}

%cond (s: (s32[], f32[64])) -> pred[] {
  %s = (s32[], f32[64]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (s.1: (s32[], f32[64])) -> (s32[], f32[64]) {
  %s.1 = (s32[], f32[64]{0}) parameter(0)
  %i.1 = s32[] get-tuple-element(%s.1), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i.1, %one)
  %v = f32[64]{0} get-tuple-element(%s.1), index=1
  %ar = f32[64]{0} all-reduce(%v), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%add
  ROOT %t = (s32[], f32[64]{0}) tuple(%next, %ar)
}

ENTRY %main (param.0: f32[64], param.1: u32[2]) -> (f32[64], f32[8,8]) {
  %param.0 = f32[64]{0} parameter(0), metadata={op_name="jit(step)/params" source_file="train.py" source_line=3}
  %param.1 = u32[2]{0} parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[64]{0}) tuple(%zero, %param.0)
  %while.1 = (s32[], f32[64]{0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"4"}}
  %out = f32[64]{0} get-tuple-element(%while.1), index=1
  %bits = u32[64]{0} custom-call(%param.1), custom_call_target="cu_threefry2x32", metadata={op_name="jit(step)/jvp()/threefry2x32"}
  %r = f32[8,8]{1,0} reshape(%out)
  %ag = f32[64]{0} all-gather(%out), channel_id=2, replica_groups=[1,8]<=[8], dimensions={0}, use_global_device_ids=true
  ROOT %root = (f32[64]{0}, f32[8,8]{1,0}) tuple(%ag, %r)
}
)";

[[noreturn]] void Failure(std::string_view what, std::string_view detail, std::string_view text) {
  testing::FuzzFailure("command inputs fuzzer", what, detail, text);
}

void CheckJson(std::string_view what, const std::string& text) {
  testing::CheckJsonParses("command inputs fuzzer", what, text);
}

// Keeps a computed value alive without doing arithmetic on it.
void Use(int64_t value) {
  static volatile uint64_t sink = 0;
  sink = sink ^ static_cast<uint64_t>(value);
}

// The small module, parsed once, as a directory load finds it (its companion paths are set per
// input).
dump::ModuleInput& Input() {
  static dump::ModuleInput input = [] {
    auto source = std::make_shared<ir::SourceBuffer>("companion.hlo", std::string(kModule));
    ir::ParseResult parsed = ir::ParseHloText(source);
    if (!parsed.ok() || parsed.modules.size() != 1) {
      Failure("the built-in module does not parse", parsed.ok() ? "" : parsed.error->ToString(),
              kModule);
    }
    dump::ModuleInput loaded;
    loaded.path = "<fuzz>/module_0000.fuzz_companion.cpu_after_optimizations.txt";
    loaded.stage = dump::ModuleStage::kAfterOptimizations;
    loaded.module = std::move(parsed.modules[0]);
    return loaded;
  }();
  input.files = {};
  return input;
}

// One temporary file per process, rewritten per input and removed at exit.
const std::string& TempPath() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    std::string name = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") +
                       "/spmdsim_command_inputs_fuzz_XXXXXX";
    const int fd = mkstemp(name.data());
    if (fd < 0) Failure("mkstemp", name, "");
    close(fd);
    static std::string removed = name;
    std::atexit([] { std::remove(removed.c_str()); });
    return name;
  }();
  return path;
}

void WriteTemp(std::string_view contents) {
  std::ofstream out(TempPath(), std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) Failure("cannot write", TempPath(), "");
}

// As `analyze` loads the companion files of a module and renders what it read.
void LoadAsCompanion(int reader, std::string_view file) {
  WriteTemp(file);
  dump::ModuleInput& input = Input();
  std::string* paths[] = {&input.files.buffer_assignment, &input.files.live_range,
                          &input.files.memory_usage_report, &input.files.memory_analysis};
  *paths[reader] = TempPath();
  const MemoryReport report = BuildMemoryReport(input, {});
  // The loader gunzips what starts with the gzip magic; other text must load as it parsed.
  const bool gzip = file.size() >= 2 && file[0] == '\x1f' && file[1] == '\x8b';
  if (!gzip && !report.xla.found) {
    Failure("a file the reader accepted was not loaded",
            report.xla.errors.empty() ? "" : report.xla.errors[0], file);
  }
  std::ostringstream text;
  PrintMemoryText(input, report, text);
  nlohmann::ordered_json modules = nlohmann::ordered_json::array();
  modules.push_back({{"memory", MemoryToJson(report)}});
  std::ostringstream json;
  PrintModulesJson(std::move(modules), json);
  CheckJson("analyze --format json with XLA's files", json.str());
}

void ReadMemoryFile(int reader, std::string_view file) {
  bool accepted = false;
  switch (reader) {
    case 0:
      if (const auto parsed = dump::ParseXlaBufferAssignment(file)) {
        accepted = true;
        Use(parsed->ArgumentBytes());
        Use(parsed->OutputBytes());
        Use(parsed->AliasBytes());
        Use(parsed->TempBytes());
        for (const auto& allocation : parsed->allocations) {
          for (const auto& value : allocation.values) Use(value.Key().size());
        }
      }
      break;
    case 1:
      if (const auto parsed = dump::ParseXlaLiveRange(file)) {
        accepted = true;
        Use(parsed->peak_live_bytes);
      }
      break;
    case 2:
      accepted = dump::ParseXlaMemoryUsageReport(file).ok();
      break;
    case 3:
      if (const auto parsed = dump::ParseXlaMemoryAnalysis(file)) {
        accepted = true;
        Use(parsed->PeakBytes());
      }
      break;
  }
  if (accepted) LoadAsCompanion(reader, file);
}

void RenderCheckRun(const CheckRun& run) {
  std::ostringstream text;
  PrintCheckText(run, text);
  CheckJson("check --format json", JsonText(CheckToJson(run)));
  CheckJson("check --sarif", JsonText(SarifLog(run, {"0.1.0", "/work"})));
  testing::CheckXml("command inputs fuzzer", "check --junit", JunitXml(run));
  PrintGithubAnnotations(run, {"/work"}, text);
  testing::CheckMarkdownTables("command inputs fuzzer", "check step summary",
                               GithubStepSummary(run));
}

void ReadBaseline(std::string_view file) {
  std::string error;
  const std::optional<std::vector<ModuleFigures>> baseline = ParseBaseline(file, error);
  if (!baseline) return;
  const std::string written = JsonText(BaselineToJson(*baseline));
  std::optional<std::vector<ModuleFigures>> reread = ParseBaseline(written, error);
  if (!reread) Failure("a baseline written back does not parse", error, written);
  if (JsonText(BaselineToJson(*reread)) != written) {
    Failure("a baseline changed when written back", JsonText(BaselineToJson(*reread)), written);
  }
  std::vector<ModuleFigures> now = {FiguresFromReport(BuildModuleReport(Input(), {}))};
  // The baseline's modules as inputs too (name and stage match, every figure equal).
  std::vector<ModuleFigures> same = *baseline;
  CheckOptions options;
  options.tolerance_pct = 1;
  options.max_peak_bytes = 1 << 20;
  RenderCheckRun(RunChecks(same, &*baseline, {}));
  RenderCheckRun(RunChecks(now, &*baseline, options));
  now.insert(now.end(), same.begin(), same.end());
  RenderCheckRun(RunChecks(now, &*baseline, {}));
  RenderCheckRun(RunChecks(same, nullptr, options));
}

// `spmdsim oom - [--format json]` with the text on stdin.
void RunOomCommand(std::string_view file) {
  for (const bool json : {false, true}) {
    CLI::App app;
    RunFn run;
    RegisterOomCommand(app, run);
    app.parse(json ? "oom - --format json" : "oom -", false);
    if (!run) Failure("`spmdsim oom -` did not parse its options", "", "");
    std::istringstream in{std::string(file)};
    std::ostringstream out;
    std::streambuf* cin = std::cin.rdbuf(in.rdbuf());
    std::streambuf* cout = std::cout.rdbuf(out.rdbuf());
    std::streambuf* cerr = std::cerr.rdbuf(out.rdbuf());
    const int status = run();
    std::cin.rdbuf(cin);
    std::cout.rdbuf(cout);
    std::cerr.rdbuf(cerr);
    std::cin.clear();
    if (json && status == kExitOk) CheckJson("oom --format json", out.str());
  }
}

void ReadOomLog(std::string_view file) {
  std::string error;
  if (const auto report = ParseOomLog(file, error)) {
    Use(report->total_bytes);
    RunOomCommand(file);
  }
}

void ReadTopology(std::string_view file) {
  std::string error;
  const std::optional<passes::Topology> topology = passes::ParseTopologyJson(file, error);
  if (!topology) return;
  passes::CollectiveOptions options;
  options.topology = &*topology;
  const passes::CollectiveResult result = passes::AnalyzeCollectives(*Input().module, options);
  // Times are written in human units (never a 300-digit or an infinite figure) and JSON numbers
  // are finite.
  std::ostringstream text;
  PrintCollectivesText(Input(), result, text);
  if (text.str().find(" inf") != std::string::npos ||
      text.str().find(" nan") != std::string::npos) {
    Failure("collectives text with an infinite time", "", text.str());
  }
  CheckJson("collectives --format json with a topology", JsonText(CollectivesToJson(result)));
  if (JsonText(CollectivesToJson(result)).find("null") != std::string::npos) {
    Failure("collectives JSON with a null number", "", JsonText(CollectivesToJson(result)));
  }
}

}  // namespace
}  // namespace spmdsim::analyzer

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > spmdsim::analyzer::kMaxInputBytes) return -1;
  const int reader = data[0] % 7;
  const std::string_view file(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (reader) {
    case 0:
    case 1:
    case 2:
    case 3:
      spmdsim::analyzer::ReadMemoryFile(reader, file);
      break;
    case 4:
      spmdsim::analyzer::ReadBaseline(file);
      break;
    case 5:
      spmdsim::analyzer::ReadOomLog(file);
      break;
    case 6:
      spmdsim::analyzer::ReadTopology(file);
      break;
  }
  return 0;
}
