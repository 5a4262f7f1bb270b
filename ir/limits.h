// The limits spmdsim puts on what a dump may ask of it, stated once. Each is sized from the
// largest real systems and dumps with room to spare, and checked where the input is read (the
// parser, the file loader) with a located error, so the analyses may rely on them: no analysis
// needs its own depth cap, and every device, group and nesting loop is bounded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace spmdsim::ir {

// Devices in one program (replica_count x num_partitions, tile assignments, replica groups,
// source-target pairs). The largest single SPMD programs run today span ~50k TPU chips
// (multislice) or 16k-32k GPUs; 2^16 covers them.
inline constexpr int64_t kMaxDevices = int64_t{1} << 16;

// Rank of an iota device list's reshape dims (expansion costs devices x rank).
inline constexpr size_t kMaxIotaRank = 64;

// Longest chain of calls (fusion, call, while, conditional, async, to_apply...) from a
// computation nobody calls. XLA's own modules nest a few levels (a scanned layer's while holds
// fusions holding reducers: under 10); the analyses recurse once per level, and 256 levels stay
// far inside the stack of every build, sanitizers included.
inline constexpr int kMaxCallNesting = 256;

// Bytes of one input after decompression. The largest XLA text dumps are a few hundred MB; the
// IR takes ~2.3x the text in memory (docs/BENCHMARKS.md), so 2 GiB of text is ~5 GiB of RAM.
inline constexpr size_t kMaxInputBytes = size_t{2} << 30;

// Nesting of the JSON files read beside a dump (memory_analysis.json, topology files, baselines,
// backend configs). XLA's and spmdsim's own nest a few levels; a file nested deeper is refused
// before it is parsed, since each level costs a JSON value (a 51 KB gzip of "[" is 3.8 GB).
inline constexpr size_t kMaxJsonNesting = 64;

// The deepest nesting of [ and { in JSON text outside its strings, counted no further than
// `stop_after` (what exceeds a limit need not be scanned to its end).
inline size_t JsonNestingDepth(std::string_view text, size_t stop_after = kMaxJsonNesting) {
  size_t depth = 0;
  size_t deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = depth + 1 > deepest ? depth + 1 : deepest;
      if (++depth > stop_after) return depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace spmdsim::ir
