// Reads the files of a dump whole: plain or gzip-compressed (what starts with the gzip magic is
// decompressed, whatever its name), "-" for standard input, at most ir::kMaxInputBytes of text
// after decompression (a gzip bomb must not eat the machine).
#pragma once

#include <string>
#include <string_view>

#include "dump/dump_error.h"

namespace spmdsim::dump {

// The name standard input ("-") goes by in messages and outputs.
inline constexpr std::string_view kStdinName = "<stdin>";

// Reads `path` ("-": standard input, which can be read once per process), gunzipping it when it
// starts with the gzip magic. Errors name the path: "f.txt: error: cannot open file" (kIo),
// "<stdin>: error: standard input (-) is named twice; ..." (kUsage).
DumpResult<std::string> ReadFileContents(const std::string& path);

// Whether `data` starts with the gzip magic (0x1f 0x8b).
bool IsGzip(std::string_view data);

// Gunzips a buffer (concatenated members included). kIo on corrupt or truncated data or past the
// input limit; the message names no file ("corrupt or truncated gzip data").
DumpResult<std::string> Gunzip(std::string_view data);

}  // namespace spmdsim::dump
