#include "analyzer/input_loader.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "analyzer/progress.h"
#include "ir/limits.h"
#include "ir/parser.h"

namespace spmdsim::analyzer {

std::string_view EmbeddedDumpName();
std::string_view EmbeddedDump();

namespace fs = std::filesystem;

namespace {

// Inputs (decompressed) beyond this are refused: a gzip bomb must not eat the machine.
constexpr size_t kMaxDecompressedBytes = ir::kMaxInputBytes;

// " matching 'x' of stage after_optimizations": what --module and --stage selected, if anything.
std::string SelectionText(const LoadOptions& options) {
  std::string text;
  if (!options.module_filter.empty()) text += " matching '" + options.module_filter + "'";
  if (options.stage != "all") text += " of stage " + options.stage + " (--stage)";
  return text;
}

std::string TooLarge(size_t limit) {
  return "more than " + std::to_string(limit >> 20) +
         " MiB of text, the most spmdsim reads in one input (ir/limits.h)";
}

bool IsGzip(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

// "module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt" -> the module file's stem
// "module_0000.jit_f.cpu_after_optimizations" plus the companion kind.
struct CompanionName {
  std::string stem;
  std::string kind;  // "buffer-assignment", "memory-usage-report", "live-range"
};

std::string StripSuffixes(std::string name) {
  for (std::string_view suffix : {".gz", ".txt"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      name.resize(name.size() - suffix.size());
    }
  }
  return name;
}

std::optional<CompanionName> AsCompanion(const std::string& file_name) {
  const std::string stem = StripSuffixes(file_name);
  for (std::string_view kind : {"buffer-assignment", "memory-usage-report", "live-range"}) {
    const std::string suffix = "-" + std::string(kind);
    if (stem.size() > suffix.size() && stem.ends_with(suffix)) {
      return CompanionName{stem.substr(0, stem.size() - suffix.size()), std::string(kind)};
    }
  }
  return std::nullopt;
}

std::string StageFromName(const std::string& file_name) {
  if (file_name.find("before_optimizations") != std::string::npos) return "before_optimizations";
  if (file_name.find("after_optimizations") != std::string::npos) return "after_optimizations";
  return "unknown";
}

// Parses one text into modules and appends them; returns a failure on a parse error.
std::optional<LoadFailure> ParseInto(const std::string& path, std::string text,
                                     const LoadOptions& options, LoadedInputs& out) {
  Progress::Get().Update("parsing " + fs::path(path).filename().string() + " (" +
                         std::to_string(text.size() >> 20) + " MiB)");
  auto source = std::make_shared<ir::SourceBuffer>(path, std::move(text));
  ir::ParseResult result = ir::ParseHloText(source);
  if (!result.ok()) return LoadFailure{kExitParse, result.error->ToString()};
  const std::string stage = StageFromName(fs::path(path).filename().string());
  if (options.stage != "all" && stage != options.stage) return std::nullopt;
  for (auto& module : result.modules) {
    if (!options.module_filter.empty() &&
        module->name.find(options.module_filter) == std::string_view::npos) {
      continue;
    }
    ModuleInput input;
    input.path = path;
    input.stage = stage;
    input.module = std::move(module);
    out.modules.push_back(std::move(input));
  }
  return std::nullopt;
}

// Where a file of a dump directory comes in the order XLA wrote the modules of one process:
// by folder, then by module (its lowest "module_NNNN" number among the files of that module
// name: XLA:TPU numbers a module's before- and after-optimizations dumps apart), then the
// after-optimizations form first, then the name.
struct DumpOrder {
  std::string folder;
  uint64_t module_number;
  int stage_rank;
  std::string name;
  auto operator<=>(const DumpOrder&) const = default;
};

// "module_0042.jit_step.cpu_after_optimizations.txt" -> 42 and "jit_step"; nullopt otherwise.
std::optional<std::pair<uint64_t, std::string>> ModuleNumberAndName(const std::string& name) {
  constexpr std::string_view kPrefix = "module_";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  size_t i = kPrefix.size();
  uint64_t number = 0;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9' && number < (uint64_t{1} << 60)) {
    number = number * 10 + static_cast<uint64_t>(name[i++] - '0');
  }
  if (i == kPrefix.size() || i >= name.size() || name[i] != '.') return std::nullopt;
  const size_t dot = name.find('.', i + 1);
  return std::make_pair(number, name.substr(i + 1, dot == std::string::npos ? dot : dot - i - 1));
}

void SortInDumpOrder(std::vector<fs::path>& files) {
  std::map<std::pair<std::string, std::string>, uint64_t> first_number;  // (folder, module name)
  for (const fs::path& file : files) {
    if (auto id = ModuleNumberAndName(file.filename().string())) {
      auto [it, added] =
          first_number.emplace(std::make_pair(file.parent_path().string(), id->second), id->first);
      if (!added) it->second = std::min(it->second, id->first);
    }
  }
  const auto key = [&](const fs::path& file) {
    const std::string name = file.filename().string();
    const std::string folder = file.parent_path().string();
    uint64_t number = UINT64_MAX;
    if (auto id = ModuleNumberAndName(name)) number = first_number[{folder, id->second}];
    const std::string stage = StageFromName(name);
    const int rank = stage == "after_optimizations" ? 0 : stage == "before_optimizations" ? 1 : 2;
    return DumpOrder{folder, number, rank, name};
  };
  std::vector<std::pair<DumpOrder, fs::path>> keyed;
  keyed.reserve(files.size());
  for (const fs::path& file : files) keyed.emplace_back(key(file), file);
  std::sort(keyed.begin(), keyed.end());
  for (size_t i = 0; i < files.size(); ++i) files[i] = std::move(keyed[i].second);
}

LoadOutcome LoadDirectory(const fs::path& dir, const LoadOptions& options) {
  LoadOutcome outcome;
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec)) files.push_back(it->path());
  }
  if (ec) {
    outcome.failure =
        LoadFailure{kExitUsage, dir.string() + ": error: cannot list directory: " + ec.message()};
    return outcome;
  }
  SortInDumpOrder(files);  // deterministic, in the order XLA wrote the modules
  // Companions by (directory, stem).
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::string>> companions;
  std::map<std::string, std::string> memory_analysis_by_dir;
  std::map<std::pair<std::string, std::string>, std::string> memory_analysis_by_name;
  int skipped = 0;
  for (const fs::path& file : files) {
    const std::string name = file.filename().string();
    const std::string parent = file.parent_path().string();
    if (auto companion = AsCompanion(name)) {
      companions[{parent, companion->stem}][companion->kind] = file.string();
      continue;
    }
    if (name == "memory_analysis.json") {
      memory_analysis_by_dir[parent] = file.string();
      continue;
    }
    // tools/gen_dumps.py names it after the function when one process compiled several.
    if (constexpr std::string_view kNamed = ".memory_analysis.json"; name.ends_with(kNamed)) {
      memory_analysis_by_name[{parent, name.substr(0, name.size() - kNamed.size())}] =
          file.string();
      continue;
    }
    if (name.ends_with(".json")) continue;  // sidecar data (cost analysis, program parameters)
    std::string error;
    Progress::Get().Update("reading " + name);
    auto text = ReadFileContents(file.string(), error);
    if (!text) {
      outcome.skipped_files.push_back(LoadFailure{kExitUsage, error});
      continue;
    }
    if (!ir::LooksLikeHloText(*text)) {
      ++skipped;
      continue;
    }
    // One module that cannot be parsed never hides the others.
    if (auto failure = ParseInto(file.string(), std::move(*text), options, outcome.inputs)) {
      outcome.skipped_files.push_back(*failure);
    }
  }
  for (ModuleInput& input : outcome.inputs.modules) {
    const fs::path file(input.path);
    const std::string parent = file.parent_path().string();
    auto it = companions.find({parent, StripSuffixes(file.filename().string())});
    if (it != companions.end()) {
      const auto& found = it->second;
      if (auto f = found.find("buffer-assignment"); f != found.end()) {
        input.buffer_assignment_path = f->second;
      }
      if (auto f = found.find("memory-usage-report"); f != found.end()) {
        input.memory_usage_report_path = f->second;
      }
      if (auto f = found.find("live-range"); f != found.end()) input.live_range_path = f->second;
    }
  }
  // memory_analysis.json describes the one optimized module of its directory.
  for (const auto& [parent, json_path] : memory_analysis_by_dir) {
    ModuleInput* only = nullptr;
    int count = 0;
    for (ModuleInput& input : outcome.inputs.modules) {
      if (fs::path(input.path).parent_path().string() == parent &&
          input.stage == "after_optimizations") {
        only = &input;
        ++count;
      }
    }
    if (count == 1) only->memory_analysis_path = json_path;
  }
  for (ModuleInput& input : outcome.inputs.modules) {
    const fs::path file(input.path);
    const auto id = ModuleNumberAndName(file.filename().string());
    if (!id || input.stage != "after_optimizations") continue;
    auto it = memory_analysis_by_name.find({file.parent_path().string(), id->second});
    if (it != memory_analysis_by_name.end()) input.memory_analysis_path = it->second;
  }
  if (skipped > 0) {
    outcome.inputs.notes.push_back("skipped " + std::to_string(skipped) +
                                   " file(s) that are not HLO text");
  }
  if (outcome.inputs.modules.empty() && !outcome.skipped_files.empty()) {
    // Nothing loaded: the first file's error decides the exit code, every error is printed.
    outcome.failure = outcome.skipped_files.front();
    outcome.skipped_files.erase(outcome.skipped_files.begin());
  } else if (outcome.inputs.modules.empty()) {
    outcome.failure =
        LoadFailure{kExitUsage, dir.string() + ": error: no HLO module found in this directory" +
                                    SelectionText(options)};
  }
  return outcome;
}

}  // namespace

std::optional<std::string> Gunzip(std::string_view data, std::string& error) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 32) != Z_OK) {
    error = "cannot initialise zlib";
    return std::nullopt;
  }
  std::string out;
  out.resize(std::min(std::max<size_t>(data.size() * 4, 1 << 16), kMaxDecompressedBytes));
  // Counted here, not by zlib: inflateReset (between concatenated members) zeroes total_out.
  size_t produced = 0;
  size_t consumed = 0;
  int ret = Z_OK;
  while (true) {
    if (produced >= out.size()) {
      if (out.size() >= kMaxDecompressedBytes) {
        inflateEnd(&stream);
        error = "decompresses to " + TooLarge(kMaxDecompressedBytes);
        return std::nullopt;
      }
      out.resize(std::min(out.size() * 2, kMaxDecompressedBytes));
    }
    const size_t in_chunk = std::min<size_t>(data.size() - consumed, 1u << 30);
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + consumed));
    stream.avail_in = static_cast<uInt>(in_chunk);
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    stream.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - produced, 1u << 30));
    const uInt out_before = stream.avail_out;
    ret = inflate(&stream, Z_NO_FLUSH);
    produced += out_before - stream.avail_out;
    consumed += in_chunk - stream.avail_in;
    if (ret == Z_STREAM_END) {
      // Concatenated gzip members are legal; continue with the next one if any input remains.
      if (consumed == data.size()) break;
      inflateReset(&stream);
      continue;
    }
    if (ret != Z_OK && ret != Z_BUF_ERROR) break;
    if (ret == Z_BUF_ERROR && consumed == data.size()) break;
  }
  const bool ok = ret == Z_STREAM_END;
  out.resize(produced);
  inflateEnd(&stream);
  if (!ok) {
    error = "corrupt or truncated gzip data";
    return std::nullopt;
  }
  return out;
}

namespace {

// Reads `path` whole (a file, a pipe, /dev/stdin), decompressing gzip; messages name `name`.
std::optional<std::string> ReadWhole(const std::string& path, const std::string& name,
                                     std::string& error) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    error = name + ": error: is a directory";
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = name + ": error: cannot open file";
    return std::nullopt;
  }
  std::string data;
  // A regular file is read in one piece into a buffer of its size (no growing copies: a 100 MB
  // dump would otherwise be copied several times); pipes and the like are streamed.
  const auto size = fs::is_regular_file(path, ec) ? fs::file_size(path, ec) : 0;
  if (!ec && size > kMaxDecompressedBytes) {
    error = name + ": error: " + TooLarge(kMaxDecompressedBytes);
    return std::nullopt;
  }
  if (!ec && size > 0) {
    data.resize(size);
    in.read(data.data(), static_cast<std::streamsize>(size));
    data.resize(static_cast<size_t>(in.gcount()));  // a file that shrank meanwhile
    if (in.bad()) {
      error = name + ": error: read failed";
      return std::nullopt;
    }
  } else {
    // A pipe or device: read in pieces, no further than the limit.
    std::vector<char> chunk(size_t{1} << 20);
    while (in) {
      in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      data.append(chunk.data(), static_cast<size_t>(in.gcount()));
      if (data.size() > kMaxDecompressedBytes) {
        error = name + ": error: " + TooLarge(kMaxDecompressedBytes);
        return std::nullopt;
      }
    }
    if (in.bad()) {
      error = name + ": error: read failed";
      return std::nullopt;
    }
  }
  if (!IsGzip(data)) return data;
  std::string gz_error;
  auto text = Gunzip(data, gz_error);
  if (!text) error = name + ": error: " + gz_error;
  return text;
}

}  // namespace

std::optional<std::string> ReadFileContents(const std::string& given, std::string& error) {
  // "-" is standard input, which can be read once.
  static bool stdin_taken = false;
  const bool from_stdin = given == "-";
  const std::string name = from_stdin ? std::string(kStdinName) : given;
  if (from_stdin && std::exchange(stdin_taken, true)) {
    error = name + ": error: standard input (-) is named twice; it can be read once";
    return std::nullopt;
  }
  return ReadWhole(from_stdin ? "/dev/stdin" : given, name, error);
}

LoadOutcome LoadInputs(const std::string& path, const LoadOptions& options) {
  const bool from_stdin = path == "-";
  const std::string name = from_stdin ? std::string(kStdinName) : path;
  if (!from_stdin) {
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status)) {
      return {{}, LoadFailure{kExitUsage, path + ": error: no such file or directory"}};
    }
    if (fs::is_directory(status)) return LoadDirectory(path, options);
  }
  LoadOutcome outcome;
  std::string error;
  auto text = ReadFileContents(path, error);
  if (!text) {
    outcome.failure = LoadFailure{kExitUsage, error};
    return outcome;
  }
  if (auto failure = ParseInto(name, std::move(*text), options, outcome.inputs)) {
    outcome.failure = failure;
    return outcome;
  }
  if (outcome.inputs.modules.empty()) {
    outcome.failure =
        LoadFailure{kExitUsage, name + ": error: no module found" + SelectionText(options)};
  }
  return outcome;
}

LoadOutcome LoadEmbeddedDump() {
  LoadOutcome outcome;
  std::string error;
  auto text = Gunzip(EmbeddedDump(), error);
  if (!text) {
    outcome.failure = LoadFailure{kExitUsage, "<embedded>: error: " + error};
    return outcome;
  }
  const std::string path = "<embedded>/" + std::string(EmbeddedDumpName());
  if (auto failure = ParseInto(path, std::move(*text), {}, outcome.inputs)) {
    outcome.failure = failure;
  }
  return outcome;
}

}  // namespace spmdsim::analyzer
