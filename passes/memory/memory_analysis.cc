#include "passes/memory/memory_analysis.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "passes/memory/peak_memory_builder.h"

namespace spmdsim::passes {

std::string_view LiveBufferKindName(LiveBufferKind kind) {
  switch (kind) {
    case LiveBufferKind::kTemp:
      return "temp";
    case LiveBufferKind::kTempRecomputed:
      return "temp (recomputed)";
    case LiveBufferKind::kArgument:
      return "argument";
    case LiveBufferKind::kArgumentOutput:
      return "argument+output";
    case LiveBufferKind::kOutput:
      return "output";
  }
  return "unknown";
}

namespace memory_internal {

std::string SourceOf(const ir::HloModule& module, const HloInstruction& instr) {
  if (!instr.metadata().source_file.empty()) return instr.metadata().Source();
  std::string_view file;
  int64_t line = 0;
  if (instr.metadata().stack_frame_id > 0 &&
      module.stack_frames.Resolve(instr.metadata().stack_frame_id, file, line)) {
    std::string out(file);
    if (line > 0) out += ":" + std::to_string(line);
    return out;
  }
  return {};
}

PeakMemoryResult PeakMemoryBuilder::Build() {
  result_.schedule =
      lr_.scheduled() ? "module schedule" : "dependency order (module not scheduled)";
  result_.per_device_from_shardings = options_.per_device_from_shardings;
  result_.num_partitions = module_.num_partitions;
  result_.schedule_length = lr_.EndTime();
  result_.value_count = static_cast<int64_t>(df_.values().size());
  result_.buffer_count = static_cast<int64_t>(alias_.buffers().size());
  if (options_.per_device_from_shardings) {
    result_.notes.push_back(
        "sizes per device from the shardings; instructions without one inherit a split from "
        "their operands or users (an estimate)");
  }
  if (module_.entry == nullptr) return std::move(result_);
  result_.platform = options_.platform;
  ClassifyAndAssign();
  ResizeValues();
  // Each memory space is a heap of its own (XLA runs the heap simulation per buffer color); the
  // one reported (the default memory unless options_.memory_space names another) goes last, as
  // the peak listing and the curve read its recorder.
  const int64_t reported = options_.memory_space;
  for (int64_t space : OtherMemorySpaces()) SimulateOtherSpace(space);
  active_space_ = reported;
  SimulateHeap();
  PackHeap();
  if (reported == 0) {
    CombineTemp();
  } else {
    // Arguments, outputs and tuple tables live in the default memory space.
    result_.temp_bytes = result_.heap_bytes;
    result_.argument_bytes = result_.output_bytes = result_.alias_bytes = 0;
    result_.tuple_table_bytes = 0;
  }
  result_.memory_space = reported;
  result_.memory_space_name = options_.platform.MemorySpaceName(reported);
  result_.peak_bytes = PeakBytes(result_.argument_bytes, result_.output_bytes, result_.alias_bytes,
                                 result_.temp_bytes);
  ListLiveAtPeak();
  BuildTimeline();
  if (options_.record_lifetimes) RecordLifetimes();
  return std::move(result_);
}

LiveBuffer PeakMemoryBuilder::Describe(int32_t value_id, int64_t size, LiveBufferKind kind) const {
  const HloValue& value = df_.value(value_id);
  const HloInstruction& instr = *value.instruction;
  LiveBuffer live;
  live.size_bytes = size;
  live.instruction = std::string(instr.name);
  live.index = ShapeIndexToString(df_.SlotIndex(value.slot));
  live.opcode = std::string(instr.opcode_name());
  live.shape = df_.SlotShape(value.slot).ToString(/*print_layout=*/false);
  live.op_name = ir::CUnescape(instr.metadata().op_name);
  live.source = SourceOf(module_, instr);
  live.kind = kind;
  return live;
}

void PeakMemoryBuilder::ListLiveAtPeak() {
  std::vector<LiveBuffer> listing;
  const int64_t peak_tick = recorder_.peak_tick();
  if (peak_tick >= 0 && static_cast<size_t>(peak_tick) < tick_time_.size() &&
      tick_time_[static_cast<size_t>(peak_tick)] < lr_.EndTime()) {
    result_.peak_time = tick_time_[static_cast<size_t>(peak_tick)];
    const HloInstruction* at = lr_.sequence()[static_cast<size_t>(result_.peak_time)];
    result_.peak_instruction = std::string(at->name);
    result_.peak_opcode = std::string(at->opcode_name());
    // The value holding each occupied space at the peak tick: the latest one started.
    std::map<int32_t, int32_t> holder;  // canonical interval -> interval
    const auto& intervals = recorder_.intervals();
    for (size_t i = 0; i < intervals.size(); ++i) {
      const HeapInterval& interval = intervals[i];
      if (interval.start > peak_tick || (interval.end >= 0 && interval.end <= peak_tick)) {
        continue;
      }
      const int32_t canonical = recorder_.CanonicalOf(static_cast<int32_t>(i));
      auto [it, inserted] = holder.emplace(canonical, static_cast<int32_t>(i));
      if (!inserted && intervals[static_cast<size_t>(it->second)].start < interval.start) {
        it->second = static_cast<int32_t>(i);
      }
    }
    const auto values = static_cast<int32_t>(df_.values().size());
    for (const auto& [canonical, interval] : holder) {
      const int32_t id = intervals[static_cast<size_t>(interval)].buffer;
      listing.push_back(
          Describe(id >= values ? id - values : id, intervals[static_cast<size_t>(canonical)].size,
                   id >= values ? LiveBufferKind::kTempRecomputed : LiveBufferKind::kTemp));
    }
  }
  for (LiveBuffer& buffer : WholeProgramBuffers()) listing.push_back(std::move(buffer));
  std::stable_sort(listing.begin(), listing.end(), [](const LiveBuffer& a, const LiveBuffer& b) {
    if (a.size_bytes != b.size_bytes) return a.size_bytes > b.size_bytes;
    return std::tie(a.instruction, a.index) < std::tie(b.instruction, b.index);
  });
  result_.live_at_peak_count = static_cast<int64_t>(listing.size());
  if (options_.live_at_peak_limit > 0 &&
      static_cast<int64_t>(listing.size()) > options_.live_at_peak_limit) {
    listing.resize(static_cast<size_t>(options_.live_at_peak_limit));
  }
  result_.live_at_peak = std::move(listing);
}

std::vector<LiveBuffer> PeakMemoryBuilder::WholeProgramBuffers() const {
  std::vector<LiveBuffer> out;
  if (options_.memory_space != 0) return out;  // arguments and outputs are in the default memory
  for (const HloBuffer& buffer : alias_.buffers()) {
    const BufferKind kind = kind_[buffer.id];
    if (kind == BufferKind::kArgument) {
      int32_t param_value = buffer.values[0];
      for (int32_t id : buffer.values) {
        if (df_.value(id).instruction->opcode == Opcode::kParameter) param_value = id;
      }
      out.push_back(
          Describe(param_value, BufferBytes(buffer),
                   buffer.live_out ? LiveBufferKind::kArgumentOutput : LiveBufferKind::kArgument));
    } else if (kind == BufferKind::kOutput || kind == BufferKind::kTupleOutput) {
      out.push_back(Describe(OutputHolder(buffer), BufferBytes(buffer), LiveBufferKind::kOutput));
    }
  }
  return out;
}

int32_t PeakMemoryBuilder::OutputHolder(const HloBuffer& buffer) const {
  int32_t best = buffer.values[0];
  for (int32_t id : buffer.values) {
    if (lr_.HasRange(id) && (!lr_.HasRange(best) || lr_.Range(id).start > lr_.Range(best).start)) {
      best = id;
    }
  }
  return best;
}

void PeakMemoryBuilder::BuildTimeline() {
  ir::WideTotal total;
  total.Add(result_.argument_bytes);
  total.Add(result_.output_bytes);
  total.Subtract(result_.alias_bytes);
  total.Add(result_.tuple_table_bytes);
  const int64_t base = total.Value();
  const auto steps = static_cast<int64_t>(step_live_.size()) - 1;  // the last is the end
  if (steps <= 0) return;
  const int64_t points = std::max<int64_t>(1, options_.timeline_points);
  const int64_t stride = ir::CeilDiv(steps, points);
  for (int64_t begin = 0; begin < steps; begin += stride) {
    const int64_t end = std::min(steps, begin + stride);
    int64_t best = begin;
    for (int64_t t = begin; t < end; ++t) {
      if (step_live_[static_cast<size_t>(t)] > step_live_[static_cast<size_t>(best)]) best = t;
    }
    TimelinePoint point;
    point.time = best;
    point.instruction = std::string(lr_.sequence()[static_cast<size_t>(best)]->name);
    point.live_bytes = ir::SaturatingAdd(base, step_live_[static_cast<size_t>(best)]);
    result_.timeline.push_back(std::move(point));
  }
}

}  // namespace memory_internal

using memory_internal::PeakMemoryBuilder;

int64_t PeakBytes(int64_t argument, int64_t output, int64_t alias, int64_t temp) {
  ir::WideTotal peak;
  peak.Add(argument);
  peak.Add(output);
  peak.Subtract(alias);
  peak.Add(temp);
  return peak.Value();
}

PeakMemoryResult AnalyzePeakMemory(ModuleAnalyses& analyses, const MemoryAnalysisOptions& options) {
  return PeakMemoryBuilder(analyses, options).Build();
}

PeakMemoryResult AnalyzePeakMemory(const ir::HloModule& module,
                                   const MemoryAnalysisOptions& options) {
  ModuleAnalyses analyses(module);
  return AnalyzePeakMemory(analyses, options);
}

}  // namespace spmdsim::passes
