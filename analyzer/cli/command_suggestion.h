// What to say when the first argument is not one of spmdsim's commands: the command it was
// probably meant to be (`analyse` -> `analyze`), or, for an existing file or folder, the
// command that reads it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spmdsim::analyzer {

// The number of single-character insertions, deletions, substitutions and swaps of adjacent
// characters that turn `a` into `b` (Damerau-Levenshtein, optimal string alignment).
size_t EditDistance(std::string_view a, std::string_view b);

// The command of `commands` nearest to `word`, when it is close enough to be a misspelling: at
// most one edit for words of up to four characters, two for longer ones; a prefix of exactly
// one command counts too. nullopt when none is, or when two are equally near.
std::optional<std::string> NearestCommand(std::string_view word,
                                          const std::vector<std::string>& commands);

// The message for an argument `word` given where a command was expected, or nullopt when
// `word` is an option (starts with '-'). `is_path` says whether it names an existing file or
// folder.
std::optional<std::string> UnknownCommandMessage(std::string_view word,
                                                 const std::vector<std::string>& commands,
                                                 bool is_path);

}  // namespace spmdsim::analyzer
