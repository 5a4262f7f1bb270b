// libFuzzer target over dump/'s readers of the files XLA writes besides HLO text
// (tools/fuzz.sh --target companion_files). The first byte chooses the reader (data[0] % 7, the
// selectors tools/fuzz_seeds.py --companion writes), the rest is the file:
//   0 buffer assignment   (`-buffer-assignment.txt`)    ParseXlaBufferAssignment
//   1 live range          (`-live-range.txt`)           ParseXlaLiveRange
//   2 memory-usage report (`-memory-usage-report.txt`)  ParseXlaMemoryUsageReport
//   3 memory_analysis.json                              ParseXlaMemoryAnalysis
//   5 OOM log (`spmdsim oom`)                           ReadOomLog
//   4 and 6 are the tool's own files (`check`'s baseline, a topology), read by
//   analyzer/command_inputs_fuzzer.cc: rejected here.
// A file that starts with the gzip magic is gunzipped first (Gunzip), as ReadFileContents does.
// What a reader 0-3 accepts is then written under its XLA name into a temporary dump folder
// beside a small module file: the directory loader (LoadInputs) and FindModuleFiles must both pair
// it with the module, and its Load* reader must read it back to the same figures.
//
// A finding is a sanitizer report (ASan/UBSan), a crash (an uncaught exception included), a
// timeout, an OOM or an abort() below. Build and run with tools/fuzz.sh --target companion_files;
// replay with `build-fuzz/dump/companion_files_fuzzer FILE`.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "dump/file_reader.h"
#include "dump/module_file_set.h"
#include "dump/module_loader.h"
#include "dump/oom_log.h"
#include "dump/size_text.h"
#include "dump/xla_memory_files.h"
#include "testing/fuzz_checks.h"

namespace spmdsim::dump {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxInputBytes = 256 * 1024;

// The module the fuzzed files are the companions of.
constexpr std::string_view kModuleFile = "module_0000.fuzz_companion.cpu_after_optimizations.txt";
constexpr std::string_view kModule =
    R"(HloModule fuzz_companion, is_scheduled=true, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%p)
}
)";

// Each reader's file name beside kModuleFile.
constexpr std::string_view kCompanionNames[] = {
    "module_0000.fuzz_companion.cpu_after_optimizations-buffer-assignment.txt",
    "module_0000.fuzz_companion.cpu_after_optimizations-live-range.txt",
    "module_0000.fuzz_companion.cpu_after_optimizations-memory-usage-report.txt",
    "memory_analysis.json",
};

[[noreturn]] void Failure(std::string_view what, std::string_view detail, std::string_view text) {
  testing::FuzzFailure("companion files fuzzer", what, detail, text);
}

// Keeps a computed value alive without doing arithmetic on it.
void Use(int64_t value) {
  static volatile uint64_t sink = 0;
  sink = sink ^ static_cast<uint64_t>(value);
}

void Write(const fs::path& path, std::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) Failure("cannot write", path.string(), "");
}

// One temporary dump folder per process holding the module file, removed at exit.
const fs::path& Folder() {
  static const fs::path folder = [] {
    const char* dir = std::getenv("TMPDIR");
    std::string name = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") +
                       "/spmdsim_companion_fuzz_XXXXXX";
    if (mkdtemp(name.data()) == nullptr) Failure("mkdtemp", name, "");
    static std::string removed = name;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(removed, ec);
    });
    Write(fs::path(name) / kModuleFile, kModule);
    return fs::path(name);
  }();
  return folder;
}

// The path `files` holds for `reader`.
const std::string& PairedPath(const ModuleFileSet& files, int reader) {
  const std::string* paths[] = {&files.buffer_assignment, &files.live_range,
                                &files.memory_usage_report, &files.memory_analysis};
  return *paths[reader];
}

// Writes `file` (as it came, gzipped or not) as the companion `reader` reads and returns the path
// both pairings found.
std::string PairAsCompanion(int reader, std::string_view file) {
  const fs::path& folder = Folder();
  for (std::string_view name : kCompanionNames) {
    std::error_code ec;
    fs::remove(folder / name, ec);
  }
  const std::string path = (folder / kCompanionNames[reader]).string();
  Write(path, file);
  const LoadOutcome outcome = LoadInputs(folder.string());
  if (outcome.failure || outcome.inputs.modules.size() != 1) {
    Failure("the dump folder did not load its one module",
            outcome.failure ? outcome.failure->message : "", file);
  }
  const ModuleFileSet& loaded = outcome.inputs.modules[0].files;
  const ModuleFileSet found = FindModuleFiles((folder / kModuleFile).string());
  if (PairedPath(loaded, reader) != path || PairedPath(found, reader) != path) {
    Failure("the companion file was not paired with its module", PairedPath(loaded, reader),
            PairedPath(found, reader));
  }
  return path;
}

template <typename T>
const T& Accepted(const DumpResult<T>& result, std::string_view file) {
  if (!result) Failure("a file the reader accepted does not load", result.error().message, file);
  return *result;
}

// `text` is `file` gunzipped, when it was gzipped.
void ReadMemoryFile(int reader, std::string_view text, std::string_view file) {
  switch (reader) {
    case 0:
      if (const auto parsed = ParseXlaBufferAssignment(text)) {
        Use(parsed->ArgumentBytes());
        Use(parsed->OutputBytes());
        Use(parsed->AliasBytes());
        Use(parsed->TempBytes());
        for (const auto& allocation : parsed->allocations) {
          for (const auto& value : allocation.values) Use(value.Key().size());
        }
        const auto loaded = LoadXlaBufferAssignment(PairAsCompanion(reader, file));
        if (Accepted(loaded, file).TempBytes() != parsed->TempBytes()) {
          Failure("the buffer assignment loaded differs from the one parsed", "", file);
        }
      }
      break;
    case 1:
      if (const auto parsed = ParseXlaLiveRange(text)) {
        Use(parsed->peak_live_bytes);
        const auto loaded = LoadXlaLiveRange(PairAsCompanion(reader, file));
        if (Accepted(loaded, file).peak_live_bytes != parsed->peak_live_bytes) {
          Failure("the live ranges loaded differ from the ones parsed", "", file);
        }
      }
      break;
    case 2:
      if (const auto parsed = ParseXlaMemoryUsageReport(text)) {
        const auto loaded = LoadXlaMemoryUsageReport(PairAsCompanion(reader, file));
        if (Accepted(loaded, file).spaces.size() != parsed->spaces.size()) {
          Failure("the memory-usage report loaded differs from the one parsed", "", file);
        }
      }
      break;
    case 3:
      if (const auto parsed = ParseXlaMemoryAnalysis(text)) {
        Use(parsed->PeakBytes());
        const auto loaded = LoadXlaMemoryAnalysis(PairAsCompanion(reader, file));
        if (Accepted(loaded, file).fields != parsed->fields) {
          Failure("the memory_analysis.json loaded differs from the one parsed", "", file);
        }
      }
      break;
  }
}

void ReadOom(std::string_view file) {
  const DumpResult<OomLog> log = ReadOomLog(file);
  if (!log) return;
  Use(log->failed_allocation_bytes.value_or(0));
  for (const OomFigure& figure : log->stats) Use(figure.bytes);
  for (const OomLogBuffer& buffer : log->buffers) {
    Use(buffer.number);
    Use(buffer.source_line);
    Use(buffer.unpadded_size_bytes.value_or(0));
    Use(ParseSize(buffer.size_text).value_or(0));
  }
}

}  // namespace
}  // namespace spmdsim::dump

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spmdsim::dump;
  if (size == 0 || size > kMaxInputBytes) return -1;
  const int reader = data[0] % 7;
  if (reader == 4 || reader == 6) return -1;
  const std::string_view file(reinterpret_cast<const char*>(data) + 1, size - 1);
  // As ReadFileContents reads a file that starts with the gzip magic.
  std::string gunzipped;
  if (IsGzip(file)) {
    DumpResult<std::string> inflated = Gunzip(file);
    if (!inflated) return 0;
    gunzipped = std::move(*inflated);
  }
  const std::string_view text = IsGzip(file) ? std::string_view(gunzipped) : file;
  if (reader == 5) {
    ReadOom(text);
  } else {
    ReadMemoryFile(reader, text, file);
  }
  return 0;
}
