// One simulated step of one module as a Chrome trace-event JSON document (the "Trace Event
// Format" that ui.perfetto.dev and chrome://tracing open): instructions on a compute track,
// collectives on a collectives track, and the memory curve as a counter.
//
// Timing model (a sketch of the step's shape, not a performance prediction; also written into
// the trace's "otherData"):
//   - order: the entry computation's instructions in text order, which is XLA's schedule for a
//     module with is_scheduled=true (a dependency order otherwise). A control-flow caller walks
//     its computations in place, each once, as the flattened schedule of the memory analysis does
//     (while: condition, then body; conditional: every branch; call: the callee); its slice spans
//     them. Loops are not unrolled: a body shows one pass, whatever its trip count.
//   - compute: max(min_slice_us, bytes of the instruction's output / compute_bandwidth_GBps).
//   - collectives (passes/collectives/collective_analysis.h): one execution's estimated time on the
//   topology
//     (min_slice_us without one). A synchronous collective holds the compute track until it ends;
//     an X-start / async-start lets it run on and its X-done / async-done waits for the end.
//   - free (no slice, no time): parameter, constant, get-tuple-element, tuple, bitcast,
//     partition-id, replica-id, after-all, add-dependency, opt-barrier, domain, X-done.
//   - memory: each point of PeakMemoryResult::timeline at the time the walk reaches its position
//     (a caller's position comes after its callees, as in the flattened schedule).
// Times are microseconds ("ts", "dur"), integer nanoseconds before the division, so the output is
// the same on every run.
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

namespace spmdsim::analyzer {

struct TraceOptions {
  // Rate at which an instruction writes its output: 1000 GB/s, HBM-class (1 MiB takes ~1 us).
  double compute_bandwidth_GBps = 1000;
  // Shortest slice, and the time of a collective without a topology estimate.
  double min_slice_us = 1.0;
};

// Thread ids of the tracks (pid is always 1: one device).
inline constexpr int kTraceComputeTid = 1;
inline constexpr int kTraceCollectivesTid = 2;

nlohmann::ordered_json BuildTrace(const ModuleReport& report, const TraceOptions& options = {});

}  // namespace spmdsim::analyzer
