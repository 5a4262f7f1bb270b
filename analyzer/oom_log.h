// Reads the out-of-memory message XLA prints when a program does not fit, as users paste it
// (indentation, "..." elisions, log prefixes and Python tracebacks tolerated), in either form:
//
// XLA:GPU / XLA:CPU (xla/service/buffer_assignment.cc, BufferAssignment::ToVerboseString):
//   RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2110783616 bytes.
//   BufferAssignment OOM Debugging.
//   BufferAssignment stats:
//                parameter allocation:    1.02GiB
//           maybe_live_out allocation:    4.89GiB
//     preallocated temp fragmentation:         0B (0.00%)
//   ...
//   Peak buffers:
//       Buffer 1:            (XLA indents with tabs)
//           Size: 4.89GiB
//           Operator: op_name="jit(dot)/.../dot_general[...]" source_file="/.../gemma.py" ...
//           XLA Label: custom-call
//           Shape: f32[5104,257152]
//           ==========================
//       Buffer 3:
//           Size: 1004.50MiB
//           Entry Parameter Subshape: f16[2048,257152]
//           ==========================
//
// XLA:TPU (compile time):
//   RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm.
//   Used 20.54G of 15.48G hbm. Exceeded hbm capacity by 5.06G.
//   Total hbm usage >= 21.06G:  (reserved, program, arguments)
//   Output size 0B; shares 0B with arguments.
//   Program hbm requirement 20.54G:  (global, scoped, HLO temp)
//     Largest program allocations in hbm:
//     1. Size: 14.00G
//        Operator: op_name="..." source_file="..." source_line=64
//        Shape: s32[29360128,10]{1,0:T(8,128)}
//        Unpadded size: 1.09G
//        Extra memory due to padding: 12.91G (12.8x expansion)
//        XLA label: fusion.12 = fusion(param.3), kind=kLoop, calls=fused_computation.12
//        Allocation type: HLO temp
//        ==========================
//
// The listing is read once: JAX raises the message again inside the traceback, so a later copy of
// the same listing (the same buffer numbers and fields) is skipped and counted in
// `repeats_skipped`; a different listing later in the log is not read (a note says where).
//
// Sizes: XLA prints them rounded ("4.89GiB"). Where the buffer has a shape, its exact bytes come
// from the shape (ir/shape.h: a tiled TPU layout padded to whole tiles, a tuple its table of
// 8-byte pointers), provided they agree with the printed size within its rounding; otherwise, and
// when there is no shape, the printed figure is kept. `size_from` says which.
//
// Categories (largest first in `categories`): "parameter" (Entry Parameter Subshape, or a TPU
// allocation type naming an argument), "output" (live-out: the buffers whose sizes add up to the
// stats' maybe_live_out allocation; XLA does not mark them), "temporary", "random bits"
// (temporaries holding random bits, analyzer/oom_rng.h), "temporary or output" (no stats to tell).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "passes/rng_whatif.h"

namespace spmdsim::analyzer {

// A figure XLA printed rounded ("1.02GiB", "530.00M").
struct OomFigure {
  std::string block;  // "BufferAssignment stats", "Total hbm usage", "Program hbm requirement", ...
  std::string name;   // "parameter allocation", "reserved", "HLO temp", ...
  std::string text;   // as written
  int64_t bytes = 0;  // read from `text`
  std::string detail;  // what follows the figure: "(0.00%)", "(33.9% utilization: ...)"
};

// TPU: "Ran out of memory in memory space hbm. Used 20.54G of 15.48G hbm. Exceeded hbm capacity
// by 5.06G." Figures are read from XLA's rounded text.
struct OomCapacity {
  std::string memory_space;  // empty when the log has no such line
  std::optional<int64_t> used_bytes;
  std::optional<int64_t> capacity_bytes;
  std::optional<int64_t> exceeded_bytes;
  std::string used_text, capacity_text, exceeded_text;
};

struct OomBuffer {
  int64_t number = 0;  // "Buffer N" / "N. Size:": the rank in XLA's listing
  int64_t line = 0;    // 1-based line of the log where the entry starts
  // The size spmdsim uses: the shape's exact bytes or the listed figure, as `size_from` says.
  int64_t size_bytes = 0;
  std::string size_from;               // "shape" | "listed size"
  std::string size_text;               // as written: "4.89GiB"
  int64_t listed_size_bytes = 0;       // read from size_text
  std::optional<int64_t> shape_bytes;  // from the shape, when it parses
  std::string operator_text;           // the whole Operator line after "Operator: "
  std::string op_type;
  std::string op_name;
  std::string source;  // "gemma.py:175"
  std::string source_file;
  int64_t source_line = 0;
  std::string label;        // XLA Label (GPU/CPU: the opcode; TPU: "fusion.12 = fusion(...)...")
  std::string instruction;  // TPU: the instruction named by the label ("fusion.12")
  std::string shape;        // Shape, or the Entry Parameter Subshape
  std::string entry_parameter;     // "Entry Parameter Subshape: ..." when present
  std::string unpadded_size_text;  // TPU
  std::optional<int64_t> unpadded_size_bytes;
  std::string padding_text;     // TPU "Extra memory due to padding: 12.91G (12.8x expansion)"
  std::string allocation_type;  // TPU "Allocation type: HLO temp"
  std::string category;         // see the header comment
  // Random bits (analyzer/oom_rng.h).
  bool random = false;
  std::string role;   // "hash output (threefry2x32)", "counters (iota_2x32_shape)", ...
  std::string site;   // op_name scope
  std::string phase;  // forward | backward | other
};

struct OomCategory {
  std::string category;
  int64_t buffers = 0;
  int64_t bytes = 0;
  std::vector<int64_t> numbers;  // buffer numbers, largest first
};

struct OomSite {
  std::string site;
  std::string phase;
  int64_t buffers = 0;
  int64_t bytes = 0;    // listed at the peak
  int64_t largest = 0;  // its largest listed buffer
  std::string shape;    // of that buffer: the random tensor on one device
  int64_t local_elements = 0;
  int64_t global_elements = 0;  // local x devices; 0 when the device count is unknown
  // What each lowering would materialize for this site per device (passes/rng_whatif.h, the
  // model `rng sites` uses); only when the device count is known.
  std::optional<passes::RngWhatIf> whatif;
};

struct OomSaving {
  std::string fix;  // "fused", "rbg", "remat", "replicated"
  // Of the listed random buffers at the peak: their bytes minus what the fix materializes for
  // their sites; negative when the fix costs more. nullopt when it needs the device count.
  std::optional<int64_t> saving_bytes;
  std::optional<int64_t> materialized_bytes;  // what the fix materializes for these sites
  bool recommended = false;
  std::string explanation;
};

struct OomOptions {
  // Devices each random array is split over (--devices, or the dump's partitions); 0 = unknown.
  int64_t devices = 0;
  std::string devices_from;  // "--devices" | "dump"
  // The dump shows rematerialized computations (passes/remat_detection.h).
  bool dump_rematerialized = false;
  std::string dump_remat_evidence;  // "jax.checkpoint: instruction ... (op_name ...)"
};

struct OomReport {
  std::string format;   // "buffer-assignment" (GPU/CPU) | "tpu-hbm"
  std::string message;  // the error line, from its status code ("RESOURCE_EXHAUSTED: ...")
  // The allocation that failed: exact from "trying to allocate N bytes", else the rounded figure.
  std::optional<int64_t> failed_allocation_bytes;
  bool failed_allocation_exact = false;
  std::string failed_allocation_text;  // as written
  OomCapacity capacity;
  std::vector<OomFigure> stats;         // in the order printed
  std::vector<OomBuffer> buffers;       // as listed, once
  int64_t total_bytes = 0;              // sum of size_bytes
  int64_t repeats_skipped = 0;          // later copies of the same listing
  std::vector<int64_t> repeat_lines;    // where each skipped copy starts
  std::vector<OomCategory> categories;  // largest first
  int64_t random_buffers = 0;
  int64_t random_bytes = 0;
  std::vector<OomSite> sites;  // random sites, in order of first appearance
  std::vector<OomSaving> savings;
  int64_t devices = 0;  // as in OomOptions
  std::string devices_from;
  bool rematerialized = false;  // the listing's names or the dump show remat
  std::string remat_evidence;
  std::vector<std::string> notes;
  std::vector<std::string> header;  // log lines before the listing, when pasted (16 at most)
};

// Parses a pasted log. nullopt with `error` set when no "Buffer N:" / "N. Size:" entry with a
// size is found.
std::optional<OomReport> ParseOomLog(std::string_view text, std::string& error,
                                     const OomOptions& options = {});

}  // namespace spmdsim::analyzer
