#include "dump/xla_memory_files.h"

#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>

#include "dump/file_reader.h"
#include "ir/checked_math.h"
#include "ir/json_input.h"
#include "ir/limits.h"

namespace spmdsim::dump {

namespace {

DumpError ParseFailure(std::string message) {
  return DumpError{DumpErrorKind::kParse, "", std::move(message)};
}

// Splits text into lines without copying.
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (end == text.size()) break;
    start = end + 1;
  }
  return lines;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Parses a (possibly negative) decimal integer at the start of `s`, advancing past it.
bool TakeInt(std::string_view& s, int64_t& out) {
  const auto result = std::from_chars(s.data(), s.data() + s.size(), out);
  if (result.ec != std::errc()) return false;
  s.remove_prefix(static_cast<size_t>(result.ptr - s.data()));
  return true;
}

// The integer that follows `key` in `s` ("size=" in "(size=4,offset=8)").
bool IntAfter(std::string_view s, std::string_view key, int64_t& out) {
  const size_t at = s.find(key);
  if (at == std::string_view::npos) return false;
  std::string_view rest = s.substr(at + key.size());
  return TakeInt(rest, out);
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

//  value: <6930 param.39 @0> (size=65536,offset=0): f32[256,64]{1,0}
//  value: <8100 while.978{3} (phi) @0> (size=4,offset=1385152): u32[]
bool ParseValueLine(std::string_view line, XlaBufferAssignment::Value& value) {
  const size_t open = line.find('<');
  const size_t close = line.find('>', open);
  if (open == std::string_view::npos || close == std::string_view::npos) return false;
  std::string_view inner = line.substr(open + 1, close - open - 1);
  if (!TakeInt(inner, value.id)) return false;
  inner = Trim(inner);
  size_t name_end = 0;
  while (name_end < inner.size() && inner[name_end] != ' ' && inner[name_end] != '{') ++name_end;
  value.name = std::string(inner.substr(0, name_end));
  inner.remove_prefix(name_end);
  if (!inner.empty() && inner.front() == '{') {
    const size_t index_end = inner.find('}');
    if (index_end == std::string_view::npos) return false;
    value.index = std::string(inner.substr(0, index_end + 1));
    inner.remove_prefix(index_end + 1);
  }
  value.is_phi = inner.find("(phi)") != std::string_view::npos;
  std::string_view rest = line.substr(close + 1);
  if (!IntAfter(rest, "size=", value.size) || !IntAfter(rest, "offset=", value.offset) ||
      value.size < 0 || value.offset < 0) {
    return false;
  }
  const size_t colon = rest.find("): ");
  if (colon != std::string_view::npos) value.shape = std::string(Trim(rest.substr(colon + 3)));
  return true;
}

// allocation 0: size 65536, parameter 26, shape |f32[256,64]| at ShapeIndex {}, maybe-live-out:
bool ParseAllocationLine(std::string_view line, XlaBufferAssignment::Allocation& allocation) {
  std::string_view rest = line.substr(std::string_view("allocation ").size());
  if (!TakeInt(rest, allocation.index)) return false;
  if (!IntAfter(rest, "size ", allocation.size) || allocation.size < 0) return false;
  // Shapes between '|' may hold commas; blank them before looking at the flags.
  std::string flags;
  bool in_shape = false;
  for (char c : rest) {
    if (c == '|') {
      in_shape = !in_shape;
      continue;
    }
    if (!in_shape) flags += c;
  }
  int64_t parameter = -1;
  if (IntAfter(flags, ", parameter ", parameter)) allocation.parameter = parameter;
  int64_t color = 0;
  if (IntAfter(flags, ", color ", color)) allocation.color = color;
  allocation.maybe_live_out = flags.find("maybe-live-out") != std::string::npos;
  allocation.constant = flags.find(", constant") != std::string::npos;
  allocation.thread_local_ = flags.find("thread-local") != std::string::npos;
  allocation.preallocated_temp = flags.find("preallocated-temp") != std::string::npos;
  allocation.output_tuple = flags.find("output shape is") != std::string::npos;
  return true;
}

}  // namespace

int64_t XlaBufferAssignment::ArgumentBytes() const {
  int64_t total = 0;
  for (const Allocation& a : allocations) {
    if (a.parameter >= 0) total = ir::SaturatingAdd(total, a.size);
  }
  return total;
}

int64_t XlaBufferAssignment::OutputBytes() const {
  int64_t total = 0;
  for (const Allocation& a : allocations) {
    if (a.maybe_live_out) total = ir::SaturatingAdd(total, a.size);
  }
  return total;
}

int64_t XlaBufferAssignment::AliasBytes() const {
  int64_t total = 0;
  for (const Allocation& a : allocations) {
    if (a.parameter >= 0 && a.maybe_live_out) total = ir::SaturatingAdd(total, a.size);
  }
  return total;
}

int64_t XlaBufferAssignment::TempBytes() const {
  int64_t total = 0;
  for (const Allocation& a : allocations) {
    if (a.preallocated_temp) total = ir::SaturatingAdd(total, a.size);
  }
  return total;
}

int64_t XlaBufferAssignment::TempBytesOfColor(int64_t color) const {
  int64_t total = 0;
  for (const Allocation& a : allocations) {
    if (a.preallocated_temp && a.color == color) total = ir::SaturatingAdd(total, a.size);
  }
  return total;
}

DumpResult<XlaBufferAssignment> ParseXlaBufferAssignment(std::string_view text) {
  XlaBufferAssignment result;
  size_t line_number = 0;
  for (std::string_view line : Lines(text)) {
    ++line_number;
    if (StartsWith(line, "allocation ")) {
      XlaBufferAssignment::Allocation allocation;
      if (!ParseAllocationLine(line, allocation)) {
        return ParseFailure("line " + std::to_string(line_number) + ": unreadable allocation line");
      }
      result.allocations.push_back(std::move(allocation));
    } else if (StartsWith(line, " value: ")) {
      XlaBufferAssignment::Value value;
      if (result.allocations.empty() || !ParseValueLine(line, value)) {
        return ParseFailure("line " + std::to_string(line_number) + ": unreadable value line");
      }
      result.allocations.back().values.push_back(std::move(value));
    }
  }
  if (result.allocations.empty()) {
    return ParseFailure("no 'allocation N: size S' lines: not an XLA buffer-assignment file");
  }
  return result;
}

DumpResult<XlaMemoryUsageReport> ParseXlaMemoryUsageReport(std::string_view text) {
  XlaMemoryUsageReport result;
  for (std::string_view line : Lines(text)) {
    if (StartsWith(line, "Memory Space: ")) {
      XlaMemoryUsageReport::Space space;
      std::string_view rest = line.substr(std::string_view("Memory Space: ").size());
      const size_t paren = rest.find(" (color=");
      space.name = std::string(rest.substr(0, paren));
      if (paren != std::string_view::npos) IntAfter(rest, "(color=", space.color);
      result.spaces.push_back(std::move(space));
    } else if (StartsWith(line, "Total bytes: ") && !result.spaces.empty()) {
      IntAfter(line, "Total bytes: ", result.spaces.back().total_bytes);
    }
  }
  if (result.spaces.empty()) {
    return ParseFailure("no 'Memory Space:' section: not an XLA memory-usage report");
  }
  return result;
}

DumpResult<XlaLiveRange> ParseXlaLiveRange(std::string_view text) {
  XlaLiveRange result;
  enum class Section { kNone, kSequence, kRanges, kPeak, kDone } section = Section::kNone;
  bool header = false;
  for (std::string_view line : Lines(text)) {
    const std::string_view trimmed = Trim(line);
    if (StartsWith(line, "HloLiveRange (max ")) {
      header = IntAfter(line, "(max ", result.max_time);
      continue;
    }
    if (trimmed == "InstructionSequence:") {
      section = Section::kSequence;
      continue;
    }
    if (trimmed == "BufferLiveRange:") {
      section = Section::kRanges;
      continue;
    }
    if (StartsWith(trimmed, "Live ranges at ")) {
      IntAfter(trimmed, "Live ranges at ", result.peak_time);
      section = Section::kPeak;
      continue;
    }
    if (StartsWith(trimmed, "Stack trace breakdown")) {
      section = Section::kDone;
      continue;
    }
    if (trimmed.empty()) continue;
    switch (section) {
      case Section::kSequence: {
        const size_t colon = trimmed.find(':');
        if (colon != std::string_view::npos) {
          result.sequence.emplace_back(trimmed.substr(colon + 1));
        }
        break;
      }
      case Section::kRanges: {
        // name{index}:start-end
        const size_t colon = trimmed.rfind(':');
        if (colon == std::string_view::npos) break;
        std::string_view bounds = trimmed.substr(colon + 1);
        XlaLiveRange::Range range;
        if (!TakeInt(bounds, range.start) || bounds.empty() || bounds.front() != '-') break;
        bounds.remove_prefix(1);
        if (!TakeInt(bounds, range.end)) break;
        result.ranges[std::string(trimmed.substr(0, colon))] = range;
        break;
      }
      case Section::kPeak: {
        // name{index}: 65536 bytes (cumulative: 65536 bytes)
        const size_t colon = trimmed.find(": ");
        if (colon == std::string_view::npos) break;
        XlaLiveRange::PeakEntry entry;
        entry.value = std::string(trimmed.substr(0, colon));
        std::string_view bytes = trimmed.substr(colon + 2);
        if (!TakeInt(bytes, entry.bytes) || entry.bytes < 0) break;
        result.peak_live_bytes = ir::SaturatingAdd(result.peak_live_bytes, entry.bytes);
        result.live_at_peak.push_back(std::move(entry));
        break;
      }
      default:
        break;
    }
  }
  if (!header) {
    return ParseFailure("no 'HloLiveRange (max N):' header: not an XLA live-range file");
  }
  return result;
}

int64_t XlaMemoryAnalysis::Field(const std::string& name) const {
  auto it = fields.find(name);
  return it == fields.end() ? 0 : it->second;
}

int64_t XlaMemoryAnalysis::PeakBytes() const {
  const int64_t live =
      ir::SaturatingAdd(Field("argument_size_in_bytes"), Field("output_size_in_bytes"));
  return ir::SaturatingAdd(ir::SaturatingSub(live, Field("alias_size_in_bytes")),
                           Field("temp_size_in_bytes"));
}

DumpResult<XlaMemoryAnalysis> ParseXlaMemoryAnalysis(std::string_view text) {
  std::string error;
  const std::optional<nlohmann::json> parsed = ir::ParseJsonInput(text, error);
  if (!parsed) return ParseFailure(error);
  const nlohmann::json& json = *parsed;
  if (!json.is_object()) return ParseFailure("not a JSON object");
  XlaMemoryAnalysis result;
  for (const auto& [key, value] : json.items()) {
    // Unsigned values past INT64_MAX are not sizes this reader can hold: left out.
    if (value.is_number_unsigned() &&
        value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      continue;
    }
    if (!value.is_number_integer()) continue;
    // memory_analysis() has no negative size: a file that says so is not one, and its figures
    // would print as "-8 EiB" beside spmdsim's.
    if (value.get<int64_t>() < 0) {
      return ParseFailure(key + " is negative (" + std::to_string(value.get<int64_t>()) +
                          "): not a saved memory_analysis()");
    }
    result.fields[key] = value.get<int64_t>();
  }
  if (!result.fields.count("temp_size_in_bytes")) {
    return ParseFailure("no temp_size_in_bytes field: not a saved memory_analysis()");
  }
  return result;
}

namespace {

template <typename T, typename Parse>
DumpResult<T> LoadWith(const std::string& path, Parse parse) {
  DumpResult<std::string> text = ReadFileContents(path);
  if (!text) return text.error();
  DumpResult<T> result = parse(*text);
  if (!result) return DumpError{DumpErrorKind::kParse, path, path + ": " + result.error().message};
  return result;
}

}  // namespace

DumpResult<XlaBufferAssignment> LoadXlaBufferAssignment(const std::string& path) {
  return LoadWith<XlaBufferAssignment>(path, ParseXlaBufferAssignment);
}

DumpResult<XlaMemoryUsageReport> LoadXlaMemoryUsageReport(const std::string& path) {
  return LoadWith<XlaMemoryUsageReport>(path, ParseXlaMemoryUsageReport);
}

DumpResult<XlaLiveRange> LoadXlaLiveRange(const std::string& path) {
  return LoadWith<XlaLiveRange>(path, ParseXlaLiveRange);
}

DumpResult<XlaMemoryAnalysis> LoadXlaMemoryAnalysis(const std::string& path) {
  return LoadWith<XlaMemoryAnalysis>(path, ParseXlaMemoryAnalysis);
}

}  // namespace spmdsim::dump
