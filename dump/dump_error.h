// What goes wrong reading XLA's files, typed: every function of dump/ that can fail returns a
// DumpResult<T>, the value or a DumpError saying what kind of failure it was, which file, and the
// message to print. dump/ decides no exit codes and prints nothing: the tool maps the kind to its
// exit code (analyzer/cli/command.h: kParse is 3, the others 2).
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace spmdsim::dump {

enum class DumpErrorKind {
  kIo,     // the bytes cannot be had: no such file, unreadable, too large, corrupt gzip
  kParse,  // the text is not in the format expected of it (HLO, a companion file, an OOM log)
  kUsage,  // the request cannot be met: stdin named twice, nothing matches --module/--stage
};

struct DumpError {
  DumpErrorKind kind = DumpErrorKind::kIo;
  std::string path;  // the file or directory concerned ("<stdin>", "<embedded>"); may be empty
  // Ready to print, naming the path itself where there is one: "dir: error: cannot list
  // directory: ...", the parser's "file:line:col: error: ..." with the offending line.
  std::string message;
};

// A value of T, or the DumpError that kept it from being read.
template <typename T>
class [[nodiscard]] DumpResult {
 public:
  DumpResult(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  DumpResult(DumpError error) : error_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }

  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

  // The error; only when !ok().
  const DumpError& error() const { return error_; }

 private:
  std::optional<T> value_;
  DumpError error_;
};

}  // namespace spmdsim::dump
