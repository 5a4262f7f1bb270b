#include "dump/module_loader.h"

#include <filesystem>
#include <map>
#include <utility>

#include "dump/file_names.h"
#include "dump/file_reader.h"
#include "dump/tpu_target.h"
#include "ir/parser.h"
#include "ir/source.h"

namespace spmdsim::dump {

namespace fs = std::filesystem;

namespace {

// " matching 'x' of stage after_optimizations": what --module and --stage selected, if anything.
std::string SelectionText(const LoadOptions& options) {
  std::string text;
  if (!options.module_filter.empty()) text += " matching '" + options.module_filter + "'";
  if (options.stage != "all") text += " of stage " + options.stage + " (--stage)";
  return text;
}

void Report(const LoadOptions& options, const std::string& what) {
  if (options.progress) options.progress(what);
}

// Parses one text into modules and appends those selected, each with `files()` (computed once,
// when one is); returns the error when the text does not parse.
template <typename FilesOf>
std::optional<DumpError> ParseInto(const std::string& path, std::string text,
                                   const LoadOptions& options, LoadedInputs& out,
                                   FilesOf files_of) {
  Report(options, "parsing " + fs::path(path).filename().string() + " (" +
                      std::to_string(text.size() >> 20) + " MiB)");
  auto source = std::make_shared<ir::SourceBuffer>(path, std::move(text));
  ir::ParseResult result = ir::ParseHloText(source);
  if (!result.ok()) return DumpError{DumpErrorKind::kParse, path, result.error->ToString()};
  const ModuleStage stage = StageFromFileName(fs::path(path).filename().string());
  if (options.stage != "all" && ModuleStageName(stage) != options.stage) return std::nullopt;
  std::optional<ModuleFileSet> files;
  std::optional<std::string> generation;
  for (auto& module : result.modules) {
    if (!options.module_filter.empty() &&
        module->name.find(options.module_filter) == std::string_view::npos) {
      continue;
    }
    if (!files) files = files_of();
    if (!generation) generation = ReadTpuGeneration(files->target_arguments).value_or("");
    ModuleInput input;
    input.path = path;
    input.stage = stage;
    input.module = std::move(module);
    input.files = *files;
    input.tpu_generation = *generation;
    out.modules.push_back(std::move(input));
  }
  return std::nullopt;
}

LoadOutcome LoadDirectory(const fs::path& dir, const LoadOptions& options) {
  LoadOutcome outcome;
  std::vector<fs::path> files;
  // The folder and its subfolders (symbolic links to folders not followed, as XLA writes none).
  // A subfolder that cannot be listed is skipped and named, like a file that cannot be read; the
  // folder given must be listable.
  std::vector<fs::path> pending{dir};
  while (!pending.empty()) {
    const fs::path folder = std::move(pending.back());
    pending.pop_back();
    std::error_code ec;
    auto it = fs::directory_iterator(folder, ec);
    for (; !ec && it != fs::end(it); it.increment(ec)) {
      std::error_code kind;
      if (it->is_symlink(kind) ? false : it->is_directory(kind)) {
        pending.push_back(it->path());
      } else if (it->is_regular_file(kind)) {
        files.push_back(it->path());
      }
    }
    if (!ec) continue;
    DumpError error{DumpErrorKind::kIo, folder.string(),
                    folder.string() + ": error: cannot list directory: " + ec.message()};
    if (folder == dir) {
      outcome.failure = std::move(error);
      return outcome;
    }
    error.message += "; its files are skipped";
    outcome.skipped_files.push_back(std::move(error));
  }
  SortInDumpOrder(files);  // deterministic, in the order XLA wrote the modules
  // Each folder's names indexed once for pairing its modules with their companions.
  std::map<std::string, std::vector<std::string>> names_by_folder;
  for (const fs::path& file : files) {
    names_by_folder[file.parent_path().string()].push_back(file.filename().string());
  }
  std::map<std::string, DumpFolder> folders;
  for (auto& [folder, names] : names_by_folder) {
    folders.emplace(folder, DumpFolder(folder, std::move(names)));
  }
  int skipped = 0;
  int protos = 0;  // XLA's binary dumps (`.pb`, `.pbtxt`): what XLA writes without text dumps on
  for (const fs::path& file : files) {
    const std::string name = file.filename().string();
    if (name.ends_with(".pb") || name.ends_with(".pbtxt") || name.ends_with(".pb.gz")) {
      ++protos;
      continue;
    }
    // Companion files and sidecar data (memory and cost analysis, program parameters).
    if (AsCompanionFile(name) || name.ends_with(".json")) continue;
    Report(options, "reading " + name);
    DumpResult<std::string> text = ReadFileContents(file.string());
    if (!text) {
      outcome.skipped_files.push_back(text.error());
      continue;
    }
    if (!ir::LooksLikeHloText(*text)) {
      ++skipped;
      continue;
    }
    // One module that cannot be parsed never hides the others.
    const DumpFolder& folder = folders.at(file.parent_path().string());
    if (auto failure = ParseInto(file.string(), std::move(*text), options, outcome.inputs,
                                 [&] { return folder.FilesOf(name); })) {
      outcome.skipped_files.push_back(std::move(*failure));
    }
  }
  if (skipped > 0) {
    outcome.inputs.notes.push_back("skipped " + std::to_string(skipped) +
                                   " file(s) that are not HLO text");
  }
  if (outcome.inputs.modules.empty() && !outcome.skipped_files.empty()) {
    // Nothing loaded: the first file's error decides, every error is reported.
    outcome.failure = std::move(outcome.skipped_files.front());
    outcome.skipped_files.erase(outcome.skipped_files.begin());
  } else if (outcome.inputs.modules.empty()) {
    std::string message =
        dir.string() + ": error: no HLO module found in this directory" + SelectionText(options);
    if (protos > 0) {
      message += "; it holds " + std::to_string(protos) +
                 " protobuf dump file(s) (.pb), which spmdsim does not read: dump HLO text "
                 "with XLA_FLAGS=\"--xla_dump_to=" +
                 dir.string() + " --xla_dump_hlo_as_text\"";
    }
    outcome.failure = DumpError{DumpErrorKind::kUsage, dir.string(), std::move(message)};
  } else if (protos > 0) {
    outcome.inputs.notes.push_back("skipped " + std::to_string(protos) +
                                   " protobuf dump file(s) (.pb): spmdsim reads the HLO text "
                                   "dumps beside them");
  }
  return outcome;
}

}  // namespace

LoadOutcome LoadInputs(const std::string& path, const LoadOptions& options) {
  const bool from_stdin = path == "-";
  const std::string name = from_stdin ? std::string(kStdinName) : path;
  if (!from_stdin) {
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status)) {
      return {
          {}, DumpError{DumpErrorKind::kIo, path, path + ": error: no such file or directory"}, {}};
    }
    if (fs::is_directory(status)) return LoadDirectory(path, options);
  }
  LoadOutcome outcome;
  DumpResult<std::string> text = ReadFileContents(path);
  if (!text) {
    outcome.failure = text.error();
    return outcome;
  }
  // XLA's binary dumps (`.pb`) hold a serialized proto, not text: say what to dump instead of
  // showing a line of binary as the place of a syntax error.
  const std::string_view head = std::string_view(*text).substr(0, 4096);
  if (head.find('\0') != std::string_view::npos || name.ends_with(".pb") ||
      name.ends_with(".pb.gz")) {
    outcome.failure = DumpError{
        DumpErrorKind::kParse, name,
        name +
            ":1:1: error: binary data, not HLO text (XLA's protobuf dump?); spmdsim reads "
            "the text dumps XLA writes with XLA_FLAGS=\"--xla_dump_to=DIR "
            "--xla_dump_hlo_as_text\""};
    return outcome;
  }
  const auto files_of = [&] { return from_stdin ? ModuleFileSet{} : FindModuleFiles(path); };
  if (auto failure = ParseInto(name, std::move(*text), options, outcome.inputs, files_of)) {
    outcome.failure = std::move(failure);
    return outcome;
  }
  if (outcome.inputs.modules.empty()) {
    outcome.failure = DumpError{DumpErrorKind::kUsage, name,
                                name + ": error: no module found" + SelectionText(options)};
  }
  return outcome;
}

LoadOutcome LoadModuleText(const std::string& path, std::string text, const LoadOptions& options) {
  LoadOutcome outcome;
  outcome.failure =
      ParseInto(path, std::move(text), options, outcome.inputs, [] { return ModuleFileSet{}; });
  return outcome;
}

}  // namespace spmdsim::dump
