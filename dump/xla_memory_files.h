// Readers for the memory files XLA writes beside a dump, shown next to spmdsim's own prediction
// (never instead of it):
//
//   *-buffer-assignment.txt     BufferAssignment:
//                               allocation 0: size 65536, parameter 26, shape |f32[256,64]| at
//                                 ShapeIndex {}, maybe-live-out:
//                                value: <6930 param.39 @0> (size=65536,offset=0): f32[256,64]{1,0}
//   *-memory-usage-report.txt   Memory Space: default (color=0)
//                               Total bytes: 2980324 (2.84MiB)
//   *-live-range.txt            HloLiveRange (max 1368):
//                                 InstructionSequence:
//                                   0:partition-id.38
//                                 BufferLiveRange:
//                                   copy.188{}:199-207
//                                 Live ranges at 1118 (peak):
//                                   multiply_bitcast_fusion{}: 65536 bytes (cumulative: 65536
//                                   bytes)
//   memory_analysis.json        {"argument_size_in_bytes": ..., "temp_size_in_bytes": ...}
//                               (tools/gen_dumps.py saves compiled.memory_analysis() like this)
//
// Each Parse* function takes the file's text; when the text is not in the expected format it
// returns a kParse DumpError whose message says why ("line 3: unreadable allocation line"). Load*
// read a path (plain or gzipped, dump/file_reader.h) first; their errors name the path.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dump/dump_error.h"

namespace spmdsim::dump {

struct XlaBufferAssignment {
  struct Value {
    int64_t id = 0;
    std::string name;   // instruction name
    std::string index;  // "{3}" for tuple-shaped instructions, else empty
    bool is_phi = false;
    int64_t size = 0;
    int64_t offset = 0;
    std::string shape;
    std::string Key() const { return name + (index.empty() ? "{}" : index); }
  };
  struct Allocation {
    int64_t index = 0;
    int64_t size = 0;
    int64_t parameter = -1;  // entry parameter number, -1 when not a parameter
    bool maybe_live_out = false;
    bool constant = false;
    bool thread_local_ = false;
    bool preallocated_temp = false;
    bool output_tuple = false;  // "output shape is |...|"
    int64_t color = 0;          // ", color N," (the memory space; absent for 0)
    std::vector<Value> values;
  };
  std::vector<Allocation> allocations;

  // memory_analysis() figures derived the way XLA derives them from the allocations.
  int64_t ArgumentBytes() const;
  int64_t OutputBytes() const;  // maybe-live-out allocations
  int64_t AliasBytes() const;   // parameter allocations that are also maybe-live-out
  int64_t TempBytes() const;    // the preallocated temp allocation(s), every color
  // The preallocated temp allocation(s) of one color (memory space): 0 is device memory (HBM).
  int64_t TempBytesOfColor(int64_t color) const;
};

struct XlaMemoryUsageReport {
  struct Space {
    std::string name;
    int64_t color = 0;
    int64_t total_bytes = 0;
  };
  std::vector<Space> spaces;
};

struct XlaLiveRange {
  struct Range {
    int64_t start = 0;
    int64_t end = 0;
  };
  struct PeakEntry {
    std::string value;  // "name{index}"
    int64_t bytes = 0;
  };
  int64_t max_time = 0;
  std::vector<std::string> sequence;    // instruction names in flattened schedule order
  std::map<std::string, Range> ranges;  // "name{index}" -> [start, end]
  int64_t peak_time = -1;
  std::vector<PeakEntry> live_at_peak;  // as listed, largest first
  int64_t peak_live_bytes = 0;          // sum of live_at_peak
};

struct XlaMemoryAnalysis {
  std::map<std::string, int64_t> fields;  // every numeric field as saved
  int64_t Field(const std::string& name) const;
  int64_t PeakBytes() const;  // argument + output - alias + temp
};

DumpResult<XlaBufferAssignment> ParseXlaBufferAssignment(std::string_view text);
DumpResult<XlaMemoryUsageReport> ParseXlaMemoryUsageReport(std::string_view text);
DumpResult<XlaLiveRange> ParseXlaLiveRange(std::string_view text);
DumpResult<XlaMemoryAnalysis> ParseXlaMemoryAnalysis(std::string_view text);

DumpResult<XlaBufferAssignment> LoadXlaBufferAssignment(const std::string& path);
DumpResult<XlaMemoryUsageReport> LoadXlaMemoryUsageReport(const std::string& path);
DumpResult<XlaLiveRange> LoadXlaLiveRange(const std::string& path);
DumpResult<XlaMemoryAnalysis> LoadXlaMemoryAnalysis(const std::string& path);

}  // namespace spmdsim::dump
