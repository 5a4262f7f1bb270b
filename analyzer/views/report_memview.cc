#include "analyzer/views/report_memview.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_map>

#include "analyzer/emit/html_escape.h"
#include "analyzer/model/peak_groups.h"
#include "ir/checked_math.h"

namespace spmdsim::analyzer {
namespace {

// Each distinct string once, in first-seen order.
class StringTable {
 public:
  size_t Index(const std::string& text) {
    const auto [it, inserted] = index_.emplace(text, strings_.size());
    if (inserted) strings_.push_back(text);
    return it->second;
  }
  nlohmann::json Json() const { return strings_; }

 private:
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::string> strings_;
};

// JSON text safe inside <script type="application/json">: "<" only occurs inside strings, where
// \u003c reads back the same.
std::string ScriptSafe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string MemoryViewData(const ModuleReport& report, const RandomBitValues& random) {
  const passes::PeakMemoryResult& m = report.memory.prediction;
  StringTable strings;
  nlohmann::json categories = nlohmann::json::array();
  std::unordered_map<std::string, size_t> category_index;
  for (const char* category : kBufferCategories) {
    category_index[category] = categories.size();
    categories.push_back(category);
  }
  nlohmann::json schedule = nlohmann::json::array();
  for (const auto& [name, opcode] : m.schedule_instructions) {
    schedule.push_back(strings.Index(name + " (" + opcode + ")"));
  }
  nlohmann::json buffers = nlohmann::json::array();
  for (const passes::BufferLifetime& stay : m.lifetimes) {
    const passes::LiveBuffer& b = stay.buffer;
    buffers.push_back({stay.first, stay.last, b.size_bytes,
                       category_index.at(BufferCategory(b, random)), strings.Index(b.instruction),
                       strings.Index(b.index), strings.Index(b.opcode), strings.Index(b.kind),
                       strings.Index(b.shape), strings.Index(b.op_name), strings.Index(b.source)});
  }
  ir::WideTotal base;
  base.Add(m.argument_bytes);
  base.Add(m.output_bytes);
  base.Subtract(m.alias_bytes);
  base.Add(m.tuple_table_bytes);
  nlohmann::json data = {{"positions", m.schedule_length},
                         {"peak_position", m.peak_time},
                         {"peak_bytes", m.peak_bytes},
                         {"base_bytes", base.Value()},
                         {"tuple_table_bytes", m.tuple_table_bytes},
                         {"usable_bytes", nullptr},
                         {"device", nullptr},
                         {"categories", std::move(categories)},
                         {"schedule", std::move(schedule)},
                         {"buffers", std::move(buffers)}};
  if (report.fit.fits) {
    data["usable_bytes"] = report.fit.capacity.usable_bytes;
    data["device"] = report.fit.capacity.display;
  }
  data["strings"] = strings.Json();
  return ScriptSafe(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
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
