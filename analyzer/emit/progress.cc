#include "analyzer/emit/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "analyzer/emit/control_chars.h"

namespace spmdsim::analyzer {

Progress& Progress::Get() {
  static Progress progress;
  return progress;
}

Progress::Progress() {
  const char* forced = std::getenv("SPMDSIM_PROGRESS");
  if (forced != nullptr && *forced != '\0') {
    enabled_ = std::string(forced) != "0";
  } else {
    enabled_ = isatty(STDERR_FILENO) == 1;
  }
}

void Progress::Update(std::string_view what) {
  if (!enabled_) return;
  // Keep the line short enough not to wrap on an 80-column terminal.
  constexpr size_t kWidth = 78;
  std::string line = "spmdsim: ";
  line += EscapeControls(what, /*keep_newlines=*/false);
  if (line.size() > kWidth) line = line.substr(0, kWidth - 3) + "...";
  const size_t width = line.size();
  if (width < shown_) line.append(shown_ - width, ' ');
  std::fprintf(stderr, "\r%s", line.c_str());
  std::fflush(stderr);
  shown_ = width;
}

void Progress::Clear() {
  if (!enabled_ || shown_ == 0) return;
  std::fprintf(stderr, "\r%s\r", std::string(shown_, ' ').c_str());
  std::fflush(stderr);
  shown_ = 0;
}

}  // namespace spmdsim::analyzer
