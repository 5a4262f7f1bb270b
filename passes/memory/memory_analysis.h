// Peak memory per device from the HLO alone, split the way XLA's compiled.memory_analysis()
// splits it, by the buffer-assignment rules of the module's platform (platform_profile.h):
//
//   argument  every entry-parameter buffer
//   output    every buffer that lives out of the module (the root tuple table, donated
//             parameters that hold an output, results)
//   alias     parameter buffers that also hold an output (donation through input_output_alias)
//   temp      one heap for everything else: the values of the remaining buffers packed by the
//             heap simulation (heap_simulation.h) over the flattened schedule, followed by one
//             slot per tuple-shaped buffer (while-loop state tables), as XLA combines them
//   peak      argument + output - alias + temp
//
// All four are the default memory space's (HBM on a TPU). Values of other memory spaces (a
// layout's S(n): TPU VMEM and SMEM, host memory) are packed into a heap of their own each, listed
// in PeakMemoryResult::memory_spaces, and left out of the figures above, the peak listing and the
// curve: XLA gives each memory space (buffer color) its own allocations.
//
// Constants, and buffers of computations that run inside one instruction (fusion bodies,
// reduction functions), are not in any of these, as in XLA.
//
// Besides the figures: the schedule position where the live temporaries peak, the buffers live
// there (largest first, with op_name and source line, in the words of XLA's OOM listing), and the
// memory curve over the schedule.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/hlo.h"
#include "passes/memory/heap_simulation.h"
#include "passes/memory/platform_profile.h"
#include "passes/module_analyses.h"

namespace spmdsim::passes {

struct MemoryAnalysisOptions {
  // The platform's buffer sizes, alignments and memory spaces (XLA:CPU's unless told).
  PlatformProfile platform;
  // The memory space whose temporaries the figures, the peak listing and the curve describe:
  // 0, the default memory (HBM on a TPU; what runs out in an OOM), or another S(n) (then the
  // arguments, outputs and tuple tables, which live in the default memory, count 0).
  int64_t memory_space = 0;
  // Size the buffers of a module that is not partitioned yet per device, from the shardings
  // (sharding_sizes.h). Off: the sizes of the shapes as written.
  bool per_device_from_shardings = false;
  // Maximum number of points in the memory curve (each the maximum of its stretch).
  int64_t timeline_points = 512;
  // Maximum number of buffers listed as live at the peak (0: all of them).
  int64_t live_at_peak_limit = 0;
  // Record where each temporary value was placed (PeakMemoryResult::placements).
  bool record_placements = false;
  // Record every listed buffer's stay over the schedule and the schedule's instruction names
  // (PeakMemoryResult::lifetimes, schedule_instructions): what is live at any position.
  bool record_lifetimes = false;
  // Offer every dying operand and every registered allocation, as XLA does, instead of those
  // the sharing rules name (OperandsThatMayShare): the same answer, quadratic in a wide
  // instruction's operands. For tests that hold the pruned offers to it.
  bool offer_exhaustively = false;
  // What-if for rematerialization: temporary values (named as XLA's live-range file names them,
  // "name" or "name{1}" for tuple-shaped instructions) recomputed just before their first read
  // by a late reader instead of being kept from their definition. The buffer holding such a
  // value (all its values: a while loop's init, state and result) is freed after its last
  // earlier read and live again from its first late read to its end. The instructions that
  // compute it stay where they were (their own temporaries are not moved).
  std::set<std::string> recompute_values;
  // The late readers (e.g. the backward pass's instructions); required with recompute_values.
  std::function<bool(const ir::HloInstruction&)> late_reader;
  // What-if for a lowering that changes buffer sizes (another RNG mode): values, named as in
  // recompute_values, whose buffer takes these bytes instead of its shape's, on the same schedule
  // and live ranges; the temporaries are packed again. A buffer takes the largest size among its
  // values, resized or not. Arguments and outputs keep theirs.
  std::map<std::string, int64_t> resized_values;
};

// What a listed buffer is, as XLA's OOM listing and allocations name it.
enum class LiveBufferKind : uint8_t {
  kTemp,
  kTempRecomputed,  // a what-if's copy of a value recomputed late (recompute_values)
  kArgument,
  kArgumentOutput,  // a parameter donated to an output
  kOutput,
};
// "temp" | "temp (recomputed)" | "argument" | "argument+output" | "output": the name every output
// writes (docs/JSON_SCHEMA.md).
std::string_view LiveBufferKindName(LiveBufferKind kind);
inline bool IsTempKind(LiveBufferKind kind) {
  return kind == LiveBufferKind::kTemp || kind == LiveBufferKind::kTempRecomputed;
}
inline bool IsArgumentKind(LiveBufferKind kind) {
  return kind == LiveBufferKind::kArgument || kind == LiveBufferKind::kArgumentOutput;
}

// One buffer live at the peak, in the vocabulary of XLA's OOM listing.
struct LiveBuffer {
  int64_t size_bytes = 0;
  std::string instruction;  // the defining instruction ("Operator"'s instruction)
  std::string index;        // shape index within it, "{}" for the whole
  std::string opcode;       // XLA Label
  std::string shape;        // Shape, without layout
  std::string op_name;      // metadata op_name
  std::string source;       // "file.py:76", empty when unknown
  LiveBufferKind kind = LiveBufferKind::kTemp;
};

// One stay of a buffer in memory: the schedule positions [first, last] where it is live, at the
// curve's snapshot of each position (after the position's allocations, before its frees), and
// the value that holds it then (a buffer shared by several values over time has one stay per
// holder). Arguments and outputs stay over the whole schedule. Tuple tables are not listed (as at
// the peak): PeakMemoryResult::tuple_table_bytes counts them at every position.
struct BufferLifetime {
  LiveBuffer buffer;
  int64_t first = 0;
  int64_t last = 0;
};

// Where a temporary value sits in the temp allocation, as XLA's buffer-assignment file lists
// `value: <id name{index}> (size=..,offset=..)` under the preallocated-temp allocation.
struct Placement {
  std::string value;  // "name{index}"
  int64_t offset = 0;
  int64_t size = 0;
};

struct TimelinePoint {
  int64_t time = 0;  // schedule position
  std::string instruction;
  int64_t live_bytes = 0;  // argument + output - alias + tuple tables + live temporaries
};

// The temporaries of one memory space other than the default one, packed as XLA packs that
// space's preallocated temp allocation.
struct MemorySpaceUsage {
  int64_t space = 0;  // S(n)
  std::string name;   // "VMEM", "SMEM", "host", "S(6)"
  int64_t temp_bytes = 0;
  int64_t max_live_bytes = 0;
  int64_t value_count = 0;
};

struct PeakMemoryResult {
  // How the schedule was obtained: "module schedule" (is_scheduled=true) or "dependency order
  // (module not scheduled)".
  std::string schedule;
  PlatformProfile platform;
  int64_t memory_space = 0;  // the space the figures describe (MemoryAnalysisOptions)
  std::string memory_space_name;
  bool per_device_from_shardings = false;
  int64_t num_partitions = 1;

  int64_t argument_bytes = 0;
  int64_t output_bytes = 0;
  int64_t alias_bytes = 0;
  int64_t temp_bytes = 0;
  int64_t peak_bytes = 0;

  // How temp_bytes is made up.
  int64_t heap_bytes = 0;           // the packed heap of temporaries
  int64_t tuple_table_bytes = 0;    // tuple-shaped buffers appended after the heap, with the
                                    // alignment padding before each
  int64_t max_live_temp_bytes = 0;  // largest sum of live temporaries (no fragmentation)
  std::string packing_order;        // the order the heap was packed in (PackingOrderName)
  int64_t spatial_heap_bytes = 0;   // the heap each of XLA's sorts gives; -1 where the
  int64_t temporal_heap_bytes = 0;  // platform does not run it (TPU's HBM)

  int64_t peak_time = -1;  // schedule position where the live temporaries peak
  std::string peak_instruction;
  std::string peak_opcode;
  std::vector<LiveBuffer> live_at_peak;  // largest first
  int64_t live_at_peak_count = 0;        // before the listing was cut to the limit
  std::vector<TimelinePoint> timeline;
  std::vector<Placement> placements;  // only with MemoryAnalysisOptions::record_placements
  // Only with MemoryAnalysisOptions::record_lifetimes: by first position, then as listed at the
  // peak (largest first); and the instruction and opcode at each schedule position.
  std::vector<BufferLifetime> lifetimes;
  std::vector<std::pair<std::string, std::string>> schedule_instructions;
  // The other memory spaces that hold temporaries, by space number.
  std::vector<MemorySpaceUsage> memory_spaces;

  // recompute_values that were split: freed after `freed_after`, recomputed at `recomputed_at`.
  struct Recomputed {
    std::string value;  // "name{index}"
    int64_t bytes = 0;
    int64_t freed_after = 0;    // schedule position of the last early read
    int64_t recomputed_at = 0;  // schedule position of the first late read
  };
  std::vector<Recomputed> recomputed;

  // Anything the reader should know about how far to trust the figures.
  std::vector<std::string> notes;

  int64_t schedule_length = 0;
  int64_t value_count = 0;
  int64_t buffer_count = 0;
  int64_t temp_buffer_count = 0;
};

// argument + output - alias + temp, XLA's peak of a module, summed in 128 bits and saturated at
// INT64_MAX (a hostile module's sizes can pass 2^63 together).
int64_t PeakBytes(int64_t argument, int64_t output, int64_t alias, int64_t temp);

// What is live at one schedule position (a result recorded with record_lifetimes): the buffers,
// largest first (ties by instruction, then index, as the peak listing), and the live bytes the
// curve has there: argument + output - alias + tuple tables + the live temporaries.
struct LiveAtPosition {
  int64_t position = 0;
  std::string instruction;
  std::string opcode;
  int64_t live_bytes = 0;
  std::vector<LiveBuffer> buffers;
};
// `position` must lie in [0, schedule_length).
LiveAtPosition LiveAt(const PeakMemoryResult& result, int64_t position);

// With the module's shared analyses (its dataflow, buffers and live ranges are built once for
// every caller), or with a module alone (built for this call).
PeakMemoryResult AnalyzePeakMemory(ModuleAnalyses& analyses,
                                   const MemoryAnalysisOptions& options = {});
PeakMemoryResult AnalyzePeakMemory(const ir::HloModule& module,
                                   const MemoryAnalysisOptions& options = {});

}  // namespace spmdsim::passes
