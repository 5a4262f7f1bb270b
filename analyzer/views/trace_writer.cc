#include "analyzer/views/trace_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/c_unescape.h"

namespace spmdsim::analyzer {
namespace {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;

// Longest slice, in nanoseconds (about 11.6 days): keeps hostile sizes from overflowing the clock.
constexpr int64_t kMaxSliceNs = int64_t{1} << 50;

constexpr int kPid = 1;

// Longer op_names are cut in the slices' args.
constexpr size_t kMaxOpNameChars = 512;

bool IsFree(Opcode opcode) {
  switch (opcode) {
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kGetTupleElement:
    case Opcode::kTuple:
    case Opcode::kBitcast:
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
    case Opcode::kAfterAll:
    case Opcode::kAddDependency:
    case Opcode::kOptimizationBarrier:
    case Opcode::kDomain:
      return true;
    default:
      return false;
  }
}

bool IsDone(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAllGatherDone:
    case Opcode::kAllReduceDone:
    case Opcode::kCollectivePermuteDone:
    case Opcode::kAsyncDone:
    case Opcode::kCopyDone:
    case Opcode::kRecvDone:
    case Opcode::kSendDone:
      return true;
    default:
      return false;
  }
}

bool IsAsyncStart(Opcode opcode) {
  return opcode == Opcode::kAllGatherStart || opcode == Opcode::kAllReduceStart ||
         opcode == Opcode::kCollectivePermuteStart || opcode == Opcode::kAsyncStart;
}

double Micros(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

int64_t ToNs(double us) {
  const double ns = std::round(us * 1000.0);
  if (!(ns > 0)) return 0;
  return ns >= static_cast<double>(kMaxSliceNs) ? kMaxSliceNs : static_cast<int64_t>(ns);
}

class TraceBuilder {
 public:
  TraceBuilder(const ModuleReport& report, const TraceOptions& options)
      : report_(report), options_(options) {
    for (const passes::CollectiveOp& op : report.collectives.ops)
      collectives_[op.instruction] = &op;
    min_ns_ = std::max<int64_t>(ToNs(options.min_slice_us), 1);
  }

  nlohmann::ordered_json Build() {
    const ir::HloModule& module = *report_.input->module;
    Metadata(module);
    if (module.entry != nullptr) Walk(module.entry, 0);
    MemoryCounter();
    nlohmann::ordered_json trace;
    trace["displayTimeUnit"] = "ms";
    trace["otherData"] = OtherData(module);
    trace["traceEvents"] = std::move(events_);
    return trace;
  }

 private:
  void Metadata(const ir::HloModule& module) {
    const auto meta = [&](const char* name, int tid, nlohmann::ordered_json args) {
      events_.push_back(
          {{"name", name}, {"ph", "M"}, {"pid", kPid}, {"tid", tid}, {"args", std::move(args)}});
    };
    meta("process_name", 0,
         {{"name", fmt::format("spmdsim: {} (one device, simulated)", module.name)}});
    meta("thread_name", kTraceComputeTid, {{"name", "compute"}});
    meta("thread_sort_index", kTraceComputeTid, {{"sort_index", 1}});
    meta("thread_name", kTraceCollectivesTid, {{"name", "collectives"}});
    meta("thread_sort_index", kTraceCollectivesTid, {{"sort_index", 2}});
  }

  nlohmann::ordered_json OtherData(const ir::HloModule& module) const {
    const passes::CollectiveResult& c = report_.collectives;
    nlohmann::ordered_json data;
    data["generator"] = "spmdsim";
    data["module"] = std::string(module.name);
    data["file"] = report_.input->path;
    data["stage"] = report_.input->stage;
    data["schedule"] =
        module.is_scheduled ? "module schedule (text order)" : "text order (module not scheduled)";
    data["topology"] = c.topology;
    data["compute_bandwidth_GBps"] = options_.compute_bandwidth_GBps;
    data["min_slice_us"] = options_.min_slice_us;
    data["timing_model"] =
        "One pass over the flattened schedule: control-flow callers walk their computations in "
        "place, each once (loops not unrolled). Compute slice = max(min_slice_us, output bytes / "
        "compute_bandwidth_GBps). Collective slice = its estimated time for one execution on the "
        "topology (min_slice_us without one); synchronous collectives hold the compute track, "
        "-start/-done pairs overlap it. Parameters, constants, tuples, get-tuple-element, "
        "bitcasts and -done ops take no time. The memory counter is the memory analysis's "
        "timeline (bytes live per device).";
    data["simulated_step_us"] = Micros(clock_);
    data["peak_bytes"] = report_.memory.prediction.peak_bytes;
    data["collective_wire_bytes_per_device_per_step"] = c.total_wire_bytes_per_device;
    return data;
  }

  void Slice(const HloInstruction& instr, int tid, int64_t start, int64_t duration,
             nlohmann::ordered_json args) {
    if (!instr.metadata().op_name.empty()) {
      // A combined all-reduce's op_name joins those of every member: keep the trace small.
      const std::string op_name = ir::CUnescape(instr.metadata().op_name);
      if (op_name.size() > kMaxOpNameChars) {
        size_t cut = kMaxOpNameChars;
        while (cut > 0 && (static_cast<unsigned char>(op_name[cut]) & 0xC0) == 0x80) --cut;
        args["op_name"] = std::string(op_name.substr(0, cut)) + "...";
      } else {
        args["op_name"] = op_name;
      }
    }
    const std::string source = instr.metadata().Source();
    if (!source.empty()) args["source"] = source;
    events_.push_back({{"name", std::string(instr.name)},
                       {"cat", std::string(instr.opcode_name())},
                       {"ph", "X"},
                       {"ts", Micros(start)},
                       {"dur", Micros(duration)},
                       {"pid", kPid},
                       {"tid", tid},
                       {"args", std::move(args)}});
  }

  // Recursive over calls; the parser bounds the depth (ir::kMaxCallNesting).
  void Walk(const HloComputation* computation, int depth) {
    if (!walked_.insert(computation).second) return;
    for (const HloInstruction* instr : computation->instructions) Step(*instr, depth);
  }

  // The callees a control-flow instruction runs in place, in flattened-schedule order.
  static std::vector<const HloComputation*> Callees(const HloInstruction& instr) {
    std::vector<const HloComputation*> out;
    if (instr.opcode == Opcode::kWhile) {
      if (const HloComputation* cond = instr.Called("condition")) out.push_back(cond);
      if (const HloComputation* body = instr.Called("body")) out.push_back(body);
    } else if (instr.opcode == Opcode::kCall || instr.opcode == Opcode::kConditional) {
      for (const ir::CalledComputation& called : instr.called_computations()) {
        if (called.computation != nullptr) out.push_back(called.computation);
      }
    }
    return out;
  }

  void Step(const HloInstruction& instr, int depth) {
    const std::vector<const HloComputation*> callees = Callees(instr);
    if (!callees.empty()) {
      // The caller's slice goes before its callees' so that a viewer reading the events in
      // order meets the parent first when both start at the same time.
      const int64_t start = clock_;
      const size_t slot = events_.size();
      events_.push_back(nullptr);
      for (const HloComputation* callee : callees) Walk(callee, depth + 1);
      clock_ = std::max(clock_, Add(start, min_ns_));
      Slice(instr, kTraceComputeTid, start, clock_ - start,
            {{"opcode", std::string(instr.opcode_name())},
             {"note", "spans one pass of its callees"}});
      events_[slot] = std::move(events_.back());
      events_.erase(events_.size() - 1);
      position_time_[std::string(instr.name)] = clock_;
      return;
    }
    position_time_[std::string(instr.name)] = clock_;
    if (IsDone(instr.opcode)) {
      // Wait for the collective this ends: through async-updates back to its start.
      const HloInstruction* start = instr.operands.empty() ? nullptr : instr.operands[0];
      for (int guard = 0; start != nullptr && guard < 64; ++guard) {
        if (auto it = pending_.find(start); it != pending_.end()) {
          clock_ = std::max(clock_, it->second);
          break;
        }
        if (start->opcode != Opcode::kAsyncUpdate || start->operands.empty()) break;
        start = start->operands[0];
      }
      return;
    }
    if (auto it = collectives_.find(std::string(instr.name)); it != collectives_.end()) {
      const passes::CollectiveOp& op = *it->second;
      const int64_t start = std::max(clock_, collectives_free_);
      const int64_t duration = op.est_time_us > 0 ? ToNs(op.est_time_us) : min_ns_;
      collectives_free_ = Add(start, duration);
      Slice(instr, kTraceCollectivesTid, start, collectives_free_ - start,
            {{"kind", op.kind},
             {"group_size", op.group_size},
             {"bytes", op.bytes},
             {"wire_bytes_per_device", op.wire_bytes_per_device},
             {"est_time_us", op.est_time_us},
             {"runs_per_step", op.loop_multiplier},
             {"asynchronous", IsAsyncStart(instr.opcode)}});
      if (IsAsyncStart(instr.opcode)) {
        pending_[&instr] = collectives_free_;
      } else {
        clock_ = collectives_free_;
      }
      return;
    }
    if (IsFree(instr.opcode)) return;
    const double bytes = static_cast<double>(std::max<int64_t>(instr.shape.LeafBytes(), 0));
    // GB/s = 1e3 bytes per microsecond.
    const double us =
        options_.compute_bandwidth_GBps > 0 ? bytes / (options_.compute_bandwidth_GBps * 1e3) : 0.0;
    const int64_t duration = std::max(ToNs(us), min_ns_);
    Slice(instr, kTraceComputeTid, clock_, duration,
          {{"opcode", std::string(instr.opcode_name())},
           {"output_bytes", instr.shape.LeafBytes()},
           {"shape", instr.shape.ToString(false)}});
    clock_ = Add(clock_, duration);
  }

  static int64_t Add(int64_t a, int64_t b) {
    int64_t sum = 0;
    if (__builtin_add_overflow(a, b, &sum)) return INT64_MAX / 2;
    return std::min(sum, INT64_MAX / 2);
  }

  void MemoryCounter() {
    for (const passes::TimelinePoint& point : report_.memory.prediction.timeline) {
      auto it = position_time_.find(point.instruction);
      if (it == position_time_.end()) continue;
      events_.push_back({{"name", "live memory"},
                         {"ph", "C"},
                         {"ts", Micros(it->second)},
                         {"pid", kPid},
                         {"tid", 0},
                         {"args", {{"bytes", point.live_bytes}}}});
    }
  }

  const ModuleReport& report_;
  const TraceOptions& options_;
  int64_t min_ns_ = 1000;
  int64_t clock_ = 0;             // the compute track, in ns
  int64_t collectives_free_ = 0;  // when the collectives track is free again
  std::unordered_map<std::string, const passes::CollectiveOp*> collectives_;
  std::unordered_map<const HloInstruction*, int64_t> pending_;  // async start -> its end
  std::unordered_map<std::string, int64_t> position_time_;      // instruction -> its position
  std::unordered_set<const HloComputation*> walked_;
  nlohmann::ordered_json events_ = nlohmann::ordered_json::array();
};

}  // namespace

nlohmann::ordered_json BuildTrace(const ModuleReport& report, const TraceOptions& options) {
  return TraceBuilder(report, options).Build();
}

}  // namespace spmdsim::analyzer
