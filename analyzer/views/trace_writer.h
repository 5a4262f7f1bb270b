// One simulated step of one module as a Chrome trace-event JSON document (the "Trace Event
// Format" that ui.perfetto.dev and chrome://tracing open): instructions on a compute track,
// collectives on a collectives track, RNG sites on their own, the memory curve as a counter, and
// a memory process with a counter per category and each buffer's stay as a slice on its
// category's tracks (trace_memory_tracks.h).
//
// The timing model is passes/timeline/step_timeline.h's (also written into the trace's
// "otherData"): this file renders that timeline and the memory analysis's curve, each point at
// the time the walk reaches its position. Times are microseconds ("ts", "dur"), integer
// nanoseconds before the division, so the output is the same on every run.
//
// Sample (shortened):
//   {"displayTimeUnit": "ms", "otherData": {"generator": "spmdsim", "timing_model": "..."},
//    "traceEvents": [
//      {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "..."}},
//      {"name": "fusion.12", "cat": "fusion", "ph": "X", "ts": 3.0, "dur": 1.5, "pid": 1,
//       "tid": 1, "args": {"opcode": "fusion", "output_bytes": 1536, "op_name": "..."}},
//      {"name": "all-reduce.161", "cat": "all-reduce", "ph": "X", "ts": 40.2, "dur": 2620.1,
//       "pid": 1, "tid": 2, "args": {"wire_bytes_per_device": 939261952, ...}},
//      {"name": "live memory", "ph": "C", "ts": 3.0, "pid": 1, "tid": 0,
//       "args": {"bytes": 2979384}}]}
#pragma once

#include <nlohmann/json.hpp>

#include "analyzer/model/module_report.h"
#include "passes/timeline/step_timeline.h"

namespace spmdsim::analyzer {

// Thread ids of the tracks (pid is always 1: one device).
inline constexpr int kTraceComputeTid = 1;
inline constexpr int kTraceCollectivesTid = 2;

// `timeline`: the module's step as passes::SimulateStep lays it out.
nlohmann::ordered_json BuildTrace(const ModuleReport& report, const passes::StepTimeline& timeline);

}  // namespace spmdsim::analyzer
