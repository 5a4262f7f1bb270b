#include "dump/tpu_target.h"

#include "dump/file_reader.h"

namespace spmdsim::dump {

namespace {

// The value after `key` on its line ("version: TPU_VERSION_X" -> "TPU_VERSION_X"), quotes taken
// off; empty when the key is not there.
std::string_view ValueOf(std::string_view text, std::string_view key) {
  size_t at = 0;
  while ((at = text.find(key, at)) != std::string_view::npos) {
    // The key starts a line (after its indentation).
    const size_t line_start =
        text.rfind('\n', at) == std::string_view::npos ? 0 : text.rfind('\n', at) + 1;
    if (text.substr(line_start, at - line_start).find_first_not_of(" \t") ==
        std::string_view::npos) {
      size_t begin = at + key.size();
      size_t end = text.find('\n', begin);
      if (end == std::string_view::npos) end = text.size();
      std::string_view value = text.substr(begin, end - begin);
      while (!value.empty() && (value.front() == ' ' || value.front() == '"'))
        value.remove_prefix(1);
      while (!value.empty() &&
             (value.back() == ' ' || value.back() == '"' || value.back() == '\r')) {
        value.remove_suffix(1);
      }
      return value;
    }
    at += key.size();
  }
  return {};
}

}  // namespace

std::optional<std::string> TpuGenerationFromTargetArguments(std::string_view text) {
  const std::string_view version = ValueOf(text, "version:");
  const bool lite = ValueOf(text, "variant:") == "lite";
  if (version == "TPU_VERSION_VIPERFISH") return lite ? "v5e" : "v5p";
  if (version == "TPU_VERSION_GHOSTLITE" && !lite) return "v6e";
  return std::nullopt;
}

std::optional<std::string> ReadTpuGeneration(const std::string& path) {
  if (path.empty()) return std::nullopt;
  auto contents = ReadFileContents(path);
  if (!contents.ok()) return std::nullopt;
  return TpuGenerationFromTargetArguments(*contents);
}

}  // namespace spmdsim::dump
