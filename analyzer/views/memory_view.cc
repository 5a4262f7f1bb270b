#include "analyzer/views/memory_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analyzer/emit/human_units.h"
#include "analyzer/model/module_platform.h"
#include "analyzer/views/buffer_groups.h"
#include "analyzer/views/module_heading.h"
#include "ir/checked_math.h"

namespace spmdsim::analyzer {
namespace {

// A heap size an order gave, or null where that order was not run (-1).
nlohmann::ordered_json HeapBytesOrNull(int64_t bytes) {
  return bytes < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(bytes);
}

}  // namespace

nlohmann::ordered_json LiveBufferJson(const passes::LiveBuffer& b) {
  return {{"size_bytes", b.size_bytes}, {"instruction", b.instruction},
          {"index", b.index},           {"opcode", b.opcode},
          {"shape", b.shape},           {"op_name", b.op_name},
          {"source", b.source},         {"kind", passes::LiveBufferKindName(b.kind)}};
}

nlohmann::ordered_json LiveAtToJson(const passes::LiveAtPosition& at,
                                    const std::vector<std::string>& categories) {
  nlohmann::ordered_json buffers = nlohmann::ordered_json::array();
  for (size_t i = 0; i < at.buffers.size(); ++i) {
    nlohmann::ordered_json b = LiveBufferJson(at.buffers[i]);
    b["category"] = i < categories.size() ? categories[i] : "";
    buffers.push_back(std::move(b));
  }
  return {{"position", at.position},    {"instruction", at.instruction},
          {"opcode", at.opcode},        {"live_bytes", at.live_bytes},
          {"count", at.buffers.size()}, {"buffers", std::move(buffers)}};
}

void PrintLiveAtText(const passes::LiveAtPosition& at, const std::vector<std::string>& categories,
                     size_t shown_limit, std::ostream& out) {
  out << fmt::format("  live at position {}: {} ({}); {} live, {} buffers, largest first:\n",
                     at.position, at.instruction, at.opcode, HumanBytes(at.live_bytes),
                     at.buffers.size());
  const size_t shown = std::min(shown_limit, at.buffers.size());
  for (size_t i = 0; i < shown; ++i) {
    const passes::LiveBuffer& b = at.buffers[i];
    out << fmt::format("    {:>10}  {:<18}  {}{} ({}, {})  {}\n", HumanBytes(b.size_bytes),
                       i < categories.size() ? categories[i] : "", b.instruction,
                       b.index == "{}" ? "" : b.index, b.opcode, passes::LiveBufferKindName(b.kind),
                       b.shape);
    if (!b.op_name.empty() || !b.source.empty()) {
      out << fmt::format("                {}{}\n", b.op_name,
                         b.source.empty() ? "" : "  (" + b.source + ")");
    }
  }
  if (at.buffers.size() > shown) {
    const std::vector<passes::LiveBuffer> rest(at.buffers.begin() + static_cast<long>(shown),
                                               at.buffers.end());
    out << fmt::format("    ... {} more: {}\n", rest.size(), GroupSummary(GroupBuffers(rest), 8));
  }
}

nlohmann::ordered_json MemoryToJson(const MemoryReport& report) {
  const passes::PeakMemoryResult& r = report.prediction;
  nlohmann::ordered_json j;
  j["schedule"] = r.schedule;
  j["platform"] = {{"name", passes::PlatformName(r.platform.platform)},
                   {"decided_by", r.platform.decided_by}};
  j["memory_space"] = {{"space", r.memory_space}, {"name", r.memory_space_name}};
  j["sizes_from_shardings"] = r.per_device_from_shardings;
  j["num_partitions"] = r.num_partitions;
  j["peak_bytes"] = r.peak_bytes;
  j["argument_bytes"] = r.argument_bytes;
  j["output_bytes"] = r.output_bytes;
  j["alias_bytes"] = r.alias_bytes;
  j["temp_bytes"] = r.temp_bytes;
  j["temp"] = {{"heap_bytes", r.heap_bytes},
               {"tuple_table_bytes", r.tuple_table_bytes},
               {"max_live_bytes", r.max_live_temp_bytes},
               {"packing_order", r.packing_order},
               {"spatial_heap_bytes", HeapBytesOrNull(r.spatial_heap_bytes)},
               {"temporal_heap_bytes", HeapBytesOrNull(r.temporal_heap_bytes)}};
  j["peak_instruction"] = r.peak_instruction;
  j["peak_opcode"] = r.peak_opcode;
  j["peak_time"] = r.peak_time;
  j["live_at_peak_count"] = r.live_at_peak_count;
  nlohmann::ordered_json live = nlohmann::ordered_json::array();
  for (const passes::LiveBuffer& b : r.live_at_peak) live.push_back(LiveBufferJson(b));
  j["live_at_peak"] = std::move(live);
  nlohmann::ordered_json timeline = nlohmann::ordered_json::array();
  for (const passes::TimelinePoint& p : r.timeline) {
    timeline.push_back(
        {{"time", p.time}, {"instruction", p.instruction}, {"live_bytes", p.live_bytes}});
  }
  j["timeline"] = std::move(timeline);
  j["schedule_length"] = r.schedule_length;
  j["values"] = r.value_count;
  j["buffers"] = r.buffer_count;
  j["temp_buffers"] = r.temp_buffer_count;
  j["notes"] = r.notes;
  nlohmann::ordered_json other_spaces = nlohmann::ordered_json::array();
  for (const passes::MemorySpaceUsage& space : r.memory_spaces) {
    nlohmann::ordered_json s = {{"space", space.space},
                                {"name", space.name},
                                {"temp_bytes", space.temp_bytes},
                                {"max_live_bytes", space.max_live_bytes},
                                {"values", space.value_count}};
    if (const int64_t xla = report.xla.TempBytesOfSpace(space.space); xla >= 0) {
      s["xla_temp_bytes"] = xla;
    }
    other_spaces.push_back(std::move(s));
  }
  j["memory_spaces"] = std::move(other_spaces);

  const XlaMemoryFigures& x = report.xla;
  if (!x.found) {
    j["xla"] = nullptr;
    if (!x.errors.empty()) j["xla_errors"] = x.errors;
    return j;
  }
  nlohmann::ordered_json xla;
  if (!x.source.empty()) {
    xla["source"] = x.source;
    xla["peak_bytes"] = x.peak_bytes;
    xla["argument_bytes"] = x.argument_bytes;
    xla["output_bytes"] = x.output_bytes;
    xla["alias_bytes"] = x.alias_bytes;
    xla["temp_bytes"] = x.temp_bytes;
    if (!x.temp_source.empty()) {
      xla["temp_source"] = x.temp_source;
      xla["memory_analysis_temp_bytes"] = x.memory_analysis_temp_bytes >= 0
                                              ? nlohmann::ordered_json(x.memory_analysis_temp_bytes)
                                              : nlohmann::ordered_json(nullptr);
    }
  }
  if (x.memory_analysis) xla["memory_analysis"] = x.memory_analysis->fields;
  if (x.buffer_assignment) {
    const dump::XlaBufferAssignment& b = *x.buffer_assignment;
    xla["buffer_assignment"] = {
        {"allocations", b.allocations.size()}, {"argument_bytes", b.ArgumentBytes()},
        {"output_bytes", b.OutputBytes()},     {"alias_bytes", b.AliasBytes()},
        {"temp_bytes", b.TempBytes()},         {"hbm_temp_bytes", b.TempBytesOfColor(0)}};
  }
  if (x.memory_usage_report) {
    nlohmann::ordered_json spaces = nlohmann::ordered_json::array();
    for (const auto& space : x.memory_usage_report->spaces) {
      spaces.push_back(
          {{"name", space.name}, {"color", space.color}, {"total_bytes", space.total_bytes}});
    }
    xla["memory_usage_report"] = {{"spaces", std::move(spaces)}};
  }
  if (x.live_range) {
    xla["live_range"] = {{"schedule_length", x.live_range->max_time},
                         {"peak_time", x.live_range->peak_time},
                         {"peak_live_bytes", x.live_range->peak_live_bytes},
                         {"live_at_peak", x.live_range->live_at_peak.size()}};
  }
  xla["errors"] = x.errors;
  j["xla"] = std::move(xla);
  return j;
}

namespace {

std::string_view PlatformTitle(passes::Platform platform) {
  switch (platform) {
    case passes::Platform::kGpu:
      return "XLA:GPU";
    case passes::Platform::kTpu:
      return "XLA:TPU";
    case passes::Platform::kCpu:
      break;
  }
  return "XLA:CPU";
}

std::string Terms(int64_t peak, int64_t argument, int64_t output, int64_t alias, int64_t temp) {
  return fmt::format("{:>11} = argument {} + output {} - alias {} + temp {}", HumanBytes(peak),
                     HumanBytes(argument), HumanBytes(output), HumanBytes(alias), HumanBytes(temp));
}

std::string Curve(const std::vector<passes::TimelinePoint>& timeline, size_t width) {
  static constexpr std::string_view kLevels = " .:-=+*#%@";
  if (timeline.empty() || width == 0) return {};
  int64_t low = timeline[0].live_bytes;
  int64_t high = low;
  for (const auto& p : timeline) {
    low = std::min(low, p.live_bytes);
    high = std::max(high, p.live_bytes);
  }
  std::string out;
  const size_t columns = std::min(width, timeline.size());
  for (size_t c = 0; c < columns; ++c) {
    const size_t begin = c * timeline.size() / columns;
    const size_t end = std::max(begin + 1, (c + 1) * timeline.size() / columns);
    int64_t value = 0;
    for (size_t i = begin; i < end; ++i) value = std::max(value, timeline[i].live_bytes);
    const double fraction =
        high > low ? static_cast<double>(value - low) / static_cast<double>(high - low) : 1.0;
    out += kLevels[static_cast<size_t>(fraction * static_cast<double>(kLevels.size() - 1) + 0.5)];
  }
  return out;
}

}  // namespace

void PrintMemoryText(const dump::ModuleInput& input, const MemoryReport& report, std::ostream& out,
                     const MemoryTextOptions& options) {
  const passes::PeakMemoryResult& r = report.prediction;
  out << ModuleHeading(input.module->name, input.stage, input.path);
  const std::string in_space =
      r.memory_space == 0 ? "" : fmt::format(" in {} (S({}))", r.memory_space_name, r.memory_space);
  out << fmt::format("  memory per device{}: {}{}, {} positions; {} rules ({})\n", in_space,
                     r.schedule, r.per_device_from_shardings ? ", sizes from shardings" : "",
                     r.schedule_length, PlatformTitle(r.platform.platform), r.platform.decided_by);
  out << "    peak  "
      << Terms(r.peak_bytes, r.argument_bytes, r.output_bytes, r.alias_bytes, r.temp_bytes) << "\n";
  const XlaMemoryFigures& x = report.xla;
  if (r.memory_space != 0) {
    // Another memory space: XLA's figure is that color's preallocated temp.
    if (const int64_t xla = x.TempBytesOfSpace(r.memory_space); xla >= 0) {
      out << fmt::format("    XLA   temp {}  (buffer assignment, preallocated temp of S({}))\n",
                         HumanBytes(xla), r.memory_space);
    }
  } else if (!x.source.empty()) {
    out << "    XLA   "
        << Terms(x.peak_bytes, x.argument_bytes, x.output_bytes, x.alias_bytes, x.temp_bytes)
        << "  (" << x.source << ")\n";
    if (!x.temp_source.empty()) {
      out << "          temp: " << x.temp_source;
      if (x.memory_analysis_temp_bytes >= 0) {
        out << "; memory_analysis() says " << HumanBytes(x.memory_analysis_temp_bytes)
            << (r.platform.platform == passes::Platform::kTpu
                    ? ", which libtpu does not break down in the dump"
                    : ", every memory space's together");
      }
      out << "\n";
    }
  }
  for (const std::string& error : x.errors) out << "    (unreadable: " << error << ")\n";
  for (const std::string& note : r.notes) out << "    note: " << note << "\n";
  out << fmt::format("    temp  heap {} ({} best fit; {} live at most) + {} of tuple tables\n",
                     HumanBytes(r.heap_bytes), r.packing_order, HumanBytes(r.max_live_temp_bytes),
                     HumanBytes(r.tuple_table_bytes));
  for (const passes::MemorySpaceUsage& space : r.memory_spaces) {
    const int64_t xla = x.TempBytesOfSpace(space.space);
    const std::string xla_figure = xla >= 0 ? ", XLA " + HumanBytes(xla) : std::string();
    out << fmt::format("    {}: temp {}{} ({} values; not in the figures above)\n",
                       MemorySpaceLabel(space), HumanBytes(space.temp_bytes), xla_figure,
                       space.value_count);
  }
  if (r.peak_time >= 0) {
    out << fmt::format("  peak at position {}: {} ({}); {} buffers live, largest first:\n",
                       r.peak_time, r.peak_instruction, r.peak_opcode, r.live_at_peak_count);
  } else {
    out << fmt::format("  no temporaries; {} buffers live, largest first:\n", r.live_at_peak_count);
  }
  const size_t shown = std::min(options.live_buffers, r.live_at_peak.size());
  for (size_t i = 0; i < shown; ++i) {
    const passes::LiveBuffer& b = r.live_at_peak[i];
    out << fmt::format("    Buffer {}:\n", i + 1);
    out << fmt::format("      Size: {}\n", HumanBytes(b.size_bytes));
    out << fmt::format("      Operator: op_name=\"{}\"{}\n", b.op_name,
                       b.source.empty() ? "" : " source=" + b.source);
    out << fmt::format("      XLA Label: {} ({}{}, {})\n", b.opcode, b.instruction,
                       b.index == "{}" ? "" : b.index, passes::LiveBufferKindName(b.kind));
    out << fmt::format("      Shape: {}\n", b.shape);
  }
  if (r.live_at_peak.size() > shown) {
    const std::vector<passes::LiveBuffer> rest(r.live_at_peak.begin() + static_cast<long>(shown),
                                               r.live_at_peak.end());
    out << fmt::format("    ... {} more: {}\n", rest.size(), GroupSummary(GroupBuffers(rest), 8));
  }
  if (!r.timeline.empty()) {
    int64_t low = r.timeline[0].live_bytes;
    int64_t high = low;
    for (const auto& p : r.timeline) {
      low = std::min(low, p.live_bytes);
      high = std::max(high, p.live_bytes);
    }
    out << fmt::format("  memory curve ({} points over positions 0..{}): {} .. {}\n",
                       r.timeline.size(), r.schedule_length - 1, HumanBytes(low), HumanBytes(high));
    out << "    |" << Curve(r.timeline, options.curve_width) << "|\n";
  }
}

}  // namespace spmdsim::analyzer
