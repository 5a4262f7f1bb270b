// A one-line progress report on stderr for work that takes seconds (a 100 MB dump, a directory
// of modules): "spmdsim: parsing module_0000...txt.gz (2/5)", rewritten in place and erased when
// the work is done. Shown only when stderr is a terminal, so logs, pipes and CI stay clean;
// SPMDSIM_PROGRESS=1 forces it on, SPMDSIM_PROGRESS=0 off.
#pragma once

#include <string_view>

namespace spmdsim::analyzer {

class Progress {
 public:
  // The process's progress line.
  static Progress& Get();

  bool enabled() const { return enabled_; }
  // Replaces the line with "spmdsim: <what>".
  void Update(std::string_view what);
  // Erases the line (before normal output, and at the end).
  void Clear();

 private:
  Progress();
  bool enabled_ = false;
  size_t shown_ = 0;  // characters on the line now
};

}  // namespace spmdsim::analyzer
