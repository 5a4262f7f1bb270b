#include "analyzer/cli/command_suggestion.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

namespace spmdsim::analyzer {

size_t EditDistance(std::string_view a, std::string_view b) {
  // Three rows of the dynamic programme: i-2, i-1 and i.
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    before.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

std::optional<std::string> NearestCommand(std::string_view word,
                                          const std::vector<std::string>& commands) {
  std::string lower(word);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // A prefix of exactly one command (`coll` -> `collectives`).
  std::vector<const std::string*> prefixed;
  for (const std::string& c : commands) {
    if (lower.size() >= 2 && c.rfind(lower, 0) == 0) prefixed.push_back(&c);
  }
  if (prefixed.size() == 1) return *prefixed.front();
  const size_t allowed = lower.size() <= 4 ? 1 : 2;
  std::optional<std::string> best;
  size_t best_distance = allowed + 1;
  bool tie = false;
  for (const std::string& c : commands) {
    const size_t d = EditDistance(lower, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
      tie = false;
    } else if (d == best_distance) {
      tie = true;
    }
  }
  if (!best || tie) return std::nullopt;
  return best;
}

std::optional<std::string> UnknownCommandMessage(std::string_view word,
                                                 const std::vector<std::string>& commands,
                                                 bool is_path) {
  if (word.empty() || word.front() == '-') return std::nullopt;
  const std::string shown(word);
  if (is_path) {
    return fmt::format(
        "spmdsim: error: '{0}' is not a command; to analyse it: spmdsim analyze {0} (commands: "
        "{1})",
        shown, fmt::join(commands, ", "));
  }
  if (const std::optional<std::string> nearest = NearestCommand(word, commands)) {
    return fmt::format("spmdsim: error: unknown command '{}'; did you mean '{}'?", shown, *nearest);
  }
  return fmt::format("spmdsim: error: unknown command '{}' (commands: {}; spmdsim --help)", shown,
                     fmt::join(commands, ", "));
}

}  // namespace spmdsim::analyzer
