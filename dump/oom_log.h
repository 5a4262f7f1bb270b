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
// libtpu's compile-time OOM (E1000) may list nothing:
//   RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom: Ran out of memory on HBM, the total memory
//   required for HLO temporaries (26.68G) exceeds available HBM (15.75G)
// which is read as its capacity figures with no buffers. glog/absl line prefixes
// ("I0309 12:51:51.361715 140505975940928 run_docker.py:247] ") are read through, and a status
// line the terminal broke is joined.
//
// Each listing is read once: JAX raises the message again inside the traceback, so a later copy
// of the same listing (the same buffer numbers and fields) is skipped and counted in
// `repeats_skipped`. Of listings that are not copies of one another (a piece pasted first, then
// the whole message), the one that comes with its error line and figures is read, else the
// largest; a note says which was read and why.
//
// Only what the log says is read here, with XLA's rounded figures read as bytes (dump/size_text.h);
// what spmdsim makes of it (exact sizes from the shapes, categories, random bits and what each fix
// would save) is analyzer/model/oom_report.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dump/dump_error.h"

namespace spmdsim::dump {

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

// One peak buffer as XLA listed it.
struct OomLogBuffer {
  int64_t number = 0;         // "Buffer N" / "N. Size:": the rank in XLA's listing
  int64_t line = 0;           // 1-based line of the log where the entry starts
  std::string size_text;      // as written: "4.89GiB"
  std::string operator_text;  // the whole Operator line after "Operator: "
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
};

// What the message says besides its listing of buffers.
struct OomMessage {
  std::string format;   // "buffer-assignment" (GPU/CPU) | "tpu-hbm"
  std::string message;  // the error line, from its status code ("RESOURCE_EXHAUSTED: ...")
  // The allocation that failed: exact from "trying to allocate N bytes", else the rounded figure.
  std::optional<int64_t> failed_allocation_bytes;
  bool failed_allocation_exact = false;
  std::string failed_allocation_text;  // as written
  OomCapacity capacity;
  std::vector<OomFigure> stats;       // in the order printed
  int64_t repeats_skipped = 0;        // later copies of the same listing
  std::vector<int64_t> repeat_lines;  // where each skipped copy starts
  std::vector<std::string> notes;
  std::vector<std::string> header;  // log lines before the listing, when pasted (16 at most)
};

struct OomLog : OomMessage {
  std::vector<OomLogBuffer> buffers;  // as listed, once
};

// Reads a pasted log. A kParse error when neither a "Buffer N:" / "N. Size:" entry with a size nor
// an out-of-memory error line is found.
DumpResult<OomLog> ReadOomLog(std::string_view text);

}  // namespace spmdsim::dump
