#include "analyzer/views/trace_writer.h"

#include <fmt/format.h>

#include <string>

#include "analyzer/emit/utf8.h"
#include "analyzer/views/trace_memory_tracks.h"
#include "ir/c_unescape.h"

namespace spmdsim::analyzer {
namespace {

using passes::StepSlice;
using passes::StepSliceKind;

constexpr int kPid = 1;

// Longer op_names are cut in the slices' args.
constexpr size_t kMaxOpNameChars = 512;

double Micros(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

class TraceBuilder {
 public:
  TraceBuilder(const ModuleReport& report, const passes::StepTimeline& timeline)
      : report_(report), timeline_(timeline) {}

  nlohmann::ordered_json Build() {
    const ir::HloModule& module = *report_.input->module;
    Metadata(module);
    for (const StepSlice& slice : timeline_.slices) Slice(slice);
    MemoryCounter();
    nlohmann::ordered_json trace;
    trace["displayTimeUnit"] = "ms";
    trace["otherData"] = OtherData(module);
    AddMemoryTracks(report_, timeline_, events_, trace["otherData"]);
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
    data["stage"] = dump::ModuleStageName(report_.input->stage);
    data["schedule"] =
        module.is_scheduled ? "module schedule (text order)" : "text order (module not scheduled)";
    data["topology"] = c.topology;
    data["compute_bandwidth_GBps"] = timeline_.options.compute_bandwidth_GBps;
    data["min_slice_us"] = timeline_.options.min_slice_us;
    data["timing_model"] =
        "One pass over the flattened schedule: control-flow callers walk their computations in "
        "place, each once (loops not unrolled). Compute slice = max(min_slice_us, output bytes / "
        "compute_bandwidth_GBps). Collective slice = its estimated time for one execution on the "
        "topology (min_slice_us without one); synchronous collectives hold the compute track, "
        "-start/-done pairs overlap it. Parameters, constants, tuples, get-tuple-element, "
        "bitcasts and -done ops take no time. The memory counter is the memory analysis's "
        "timeline (bytes live per device); the memory process shows it by category and each "
        "buffer's stay, from its first to its last schedule position, at the times the walk "
        "reaches them.";
    data["simulated_step_us"] = Micros(timeline_.step_ns);
    data["peak_bytes"] = report_.memory.prediction.peak_bytes;
    data["collective_wire_bytes_per_device_per_step"] = c.total_wire_bytes_per_device;
    return data;
  }

  static nlohmann::ordered_json SliceArgs(const StepSlice& slice) {
    const ir::HloInstruction& instr = *slice.instruction;
    switch (slice.kind) {
      case StepSliceKind::kControlFlow:
        return {{"opcode", std::string(instr.opcode_name())},
                {"note", "spans one pass of its callees"}};
      case StepSliceKind::kCollective: {
        const passes::CollectiveOp& op = *slice.collective;
        return {{"kind", ir::CollectiveKindName(op.kind)},
                {"group_size", op.group_size},
                {"bytes", op.bytes},
                {"wire_bytes_per_device", op.wire_bytes_per_device},
                {"est_time_us", op.est_time_us},
                {"runs_per_step", op.loop_multiplier},
                {"asynchronous", slice.asynchronous}};
      }
      case StepSliceKind::kCompute:
        break;
    }
    return {{"opcode", std::string(instr.opcode_name())},
            {"output_bytes", instr.shape.LeafBytes()},
            {"shape", instr.shape.ToString(false)}};
  }

  void Slice(const StepSlice& slice) {
    const ir::HloInstruction& instr = *slice.instruction;
    nlohmann::ordered_json args = SliceArgs(slice);
    if (!instr.metadata().op_name.empty()) {
      // A combined all-reduce's op_name joins those of every member: keep the trace small.
      const std::string op_name = ir::CUnescape(instr.metadata().op_name);
      if (op_name.size() > kMaxOpNameChars) {
        args["op_name"] = std::string(Utf8Prefix(op_name, kMaxOpNameChars)) + "...";
      } else {
        args["op_name"] = op_name;
      }
    }
    const std::string source = instr.metadata().Source();
    if (!source.empty()) args["source"] = source;
    const int tid =
        slice.track() == passes::StepTrack::kCollectives ? kTraceCollectivesTid : kTraceComputeTid;
    events_.push_back({{"name", std::string(instr.name)},
                       {"cat", std::string(instr.opcode_name())},
                       {"ph", "X"},
                       {"ts", Micros(slice.start_ns)},
                       {"dur", Micros(slice.duration_ns)},
                       {"pid", kPid},
                       {"tid", tid},
                       {"args", std::move(args)}});
  }

  void MemoryCounter() {
    for (const passes::TimelinePoint& point : report_.memory.prediction.timeline) {
      auto it = timeline_.position_ns.find(point.instruction);
      if (it == timeline_.position_ns.end()) continue;
      events_.push_back({{"name", "live memory"},
                         {"ph", "C"},
                         {"ts", Micros(it->second)},
                         {"pid", kPid},
                         {"tid", 0},
                         {"args", {{"bytes", point.live_bytes}}}});
    }
  }

  const ModuleReport& report_;
  const passes::StepTimeline& timeline_;
  nlohmann::ordered_json events_ = nlohmann::ordered_json::array();
};

}  // namespace

nlohmann::ordered_json BuildTrace(const ModuleReport& report,
                                  const passes::StepTimeline& timeline) {
  return TraceBuilder(report, timeline).Build();
}

}  // namespace spmdsim::analyzer
