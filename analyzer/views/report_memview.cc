#include "analyzer/views/report_memview.h"

#include <fmt/format.h>

#include <iterator>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analyzer/emit/html_escape.h"
#include "analyzer/emit/json_text.h"
#include "analyzer/model/peak_groups.h"
#include "ir/checked_math.h"

namespace spmdsim::analyzer {
namespace {

// Each distinct string once, in first-seen order. The keys view strings the caller keeps alive.
class StringTable {
 public:
  size_t Index(std::string_view text) {
    const auto [it, inserted] = index_.emplace(text, strings_.size());
    if (inserted) strings_.push_back(text);
    return it->second;
  }
  const std::vector<std::string_view>& strings() const { return strings_; }

 private:
  std::unordered_map<std::string_view, size_t> index_;
  std::vector<std::string_view> strings_;
};

// One JSON string (invalid UTF-8 as U+FFFD), safe inside <script type="application/json">: "<"
// only occurs inside strings, where \u003c reads back the same.
void AppendString(std::string_view text, std::string& out) {
  const std::string json = JsonText(nlohmann::json(std::string(text)), -1);
  for (char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
}

void AppendStrings(const std::vector<std::string_view>& strings, std::string& out) {
  out += '[';
  for (size_t i = 0; i < strings.size(); ++i) {
    if (i > 0) out += ',';
    AppendString(strings[i], out);
  }
  out += ']';
}

}  // namespace

std::string MemoryViewData(const ModuleReport& report, const RandomBitValues& random) {
  const passes::PeakMemoryResult& m = report.memory.prediction;
  std::unordered_map<std::string, size_t> category_index;
  std::vector<std::string_view> categories;
  for (const char* category : kBufferCategories) {
    category_index[category] = categories.size();
    categories.emplace_back(category);
  }
  ir::WideTotal base;
  base.Add(m.argument_bytes);
  base.Add(m.output_bytes);
  base.Subtract(m.alias_bytes);
  base.Add(m.tuple_table_bytes);
  std::string out;
  auto to = std::back_inserter(out);
  fmt::format_to(to,
                 "{{\"positions\":{},\"peak_position\":{},\"peak_bytes\":{},\"base_bytes\":{},"
                 "\"tuple_table_bytes\":{},",
                 m.schedule_length, m.peak_time, m.peak_bytes, base.Value(), m.tuple_table_bytes);
  if (report.fit.fits) {
    fmt::format_to(to, "\"usable_bytes\":{},\"device\":", report.fit.capacity.usable_bytes);
    AppendString(report.fit.capacity.display, out);
  } else {
    out += "\"usable_bytes\":null,\"device\":null";
  }
  out += ",\"categories\":";
  AppendStrings(categories, out);
  // The instruction at each position, its opcode from a table of the opcodes.
  StringTable opcodes;
  std::vector<size_t> opcode_at;
  opcode_at.reserve(m.schedule_instructions.size());
  out += ",\"instructions\":[";
  for (size_t p = 0; p < m.schedule_instructions.size(); ++p) {
    if (p > 0) out += ',';
    AppendString(m.schedule_instructions[p].first, out);
    opcode_at.push_back(opcodes.Index(m.schedule_instructions[p].second));
  }
  out += "],\"opcodes\":";
  AppendStrings(opcodes.strings(), out);
  out += ",\"opcode_at\":[";
  for (size_t p = 0; p < opcode_at.size(); ++p)
    fmt::format_to(to, "{}{}", p > 0 ? "," : "", opcode_at[p]);
  out += "],\"buffers\":[";
  StringTable strings;
  for (size_t i = 0; i < m.lifetimes.size(); ++i) {
    const passes::BufferLifetime& stay = m.lifetimes[i];
    const passes::LiveBuffer& b = stay.buffer;
    fmt::format_to(to, "{}[{},{},{},{},{},{},{},{},{},{},{}]", i > 0 ? "," : "", stay.first,
                   stay.last, b.size_bytes, category_index.at(BufferCategory(b, random)),
                   strings.Index(b.instruction), strings.Index(b.index), strings.Index(b.opcode),
                   strings.Index(passes::LiveBufferKindName(b.kind)), strings.Index(b.shape),
                   strings.Index(b.op_name), strings.Index(b.source));
  }
  out += "],\"strings\":";
  AppendStrings(strings.strings(), out);
  out += '}';
  return out;
}

std::string MemoryViewHtml(const ModuleReport& report, size_t module_number,
                           const RandomBitValues& random) {
  const passes::PeakMemoryResult& m = report.memory.prediction;
  if (m.schedule_length <= 0 || m.schedule_instructions.empty()) return {};
  const int64_t selected = m.peak_time >= 0 ? m.peak_time : 0;
  std::string out = fmt::format(
      "<div class=\"memview\" id=\"memview-{0}\" data-positions=\"{1}\" data-first=\"0\" "
      "data-last=\"{2}\" data-peak-position=\"{3}\" data-selected=\"{4}\">\n"
      "<div class=\"memview-bar\"><span class=\"memview-legend\"></span>"
      "<button type=\"button\" class=\"memview-peak\">peak</button>"
      "<button type=\"button\" class=\"memview-reset\">whole schedule</button>"
      "<span class=\"muted memview-hint\">point to list what is live; click to pin; wheel or "
      "drag to zoom</span></div>\n"
      "<canvas class=\"memview-curve\" width=\"1200\" height=\"280\"></canvas>\n"
      "<div class=\"memview-at\"><p>position <span class=\"memview-position\"></span> "
      "<span class=\"code memview-instruction\"></span>: <strong><span class=\"memview-total\" "
      "data-bytes=\"\"></span></strong> live per device, <span class=\"memview-count\"></span> "
      "buffers <span class=\"memview-pinned muted\"></span></p>\n"
      "<input class=\"table-filter\" data-for=\"memview-live-{0}\" placeholder=\"filter the "
      "buffers\" aria-label=\"filter the buffers\">\n"
      "<table class=\"memview-live sortable\" id=\"memview-live-{0}\" data-count=\"0\" "
      "data-shown=\"0\"><thead><tr><th class=\"num\">size</th><th>category</th><th>instruction"
      "</th><th>XLA label</th><th>shape</th><th>op_name</th><th>source</th></tr></thead>"
      "<tbody></tbody></table>\n<p class=\"note memview-more\"></p></div>\n"
      "<script type=\"application/json\" class=\"memview-data\">",
      module_number, m.schedule_length, m.schedule_length - 1, m.peak_time, selected);
  out += MemoryViewData(report, random);
  out += "</script>\n</div>\n";
  return out;
}

}  // namespace spmdsim::analyzer
