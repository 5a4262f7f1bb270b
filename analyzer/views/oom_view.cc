#include "analyzer/views/oom_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "analyzer/emit/human_units.h"
#include "analyzer/emit/json_text.h"
#include "analyzer/views/rng_sites_view.h"

namespace spmdsim::analyzer {
namespace {

// Buffers named per category in the text summary.
constexpr size_t kNamedPerCategory = 3;

template <class T>
nlohmann::ordered_json OrNull(const std::optional<T>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

const OomBuffer* FindBuffer(const OomReport& report, int64_t number) {
  for (const OomBuffer& b : report.buffers) {
    if (b.number == number) return &b;
  }
  return nullptr;
}

nlohmann::ordered_json BufferJson(const OomBuffer& b) {
  return {{"number", b.number},
          {"line", b.line},
          {"size_bytes", b.size_bytes},
          {"size_from", b.size_from},
          {"size_text", b.size_text},
          {"listed_size_bytes", b.listed_size_bytes},
          {"shape_bytes", OrNull(b.shape_bytes)},
          {"category", b.category},
          {"op_type", b.op_type},
          {"op_name", b.op_name},
          {"source", b.source},
          {"source_file", b.source_file},
          {"source_line", b.source_line},
          {"label", b.label},
          {"instruction", b.instruction},
          {"shape", b.shape},
          {"entry_parameter", b.entry_parameter},
          {"unpadded_size_bytes", OrNull(b.unpadded_size_bytes)},
          {"padding", b.padding_text},
          {"allocation_type", b.allocation_type},
          {"random", b.random},
          {"role", b.role},
          {"site", b.site},
          {"phase", b.random ? passes::SitePhaseName(b.phase) : ""}};
}

std::string Plural(int64_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

void PrintHeading(const OomReport& report, std::ostream& out) {
  const bool tpu = report.format == "tpu-hbm";
  const std::string kind =
      tpu ? "XLA:TPU " + (report.capacity.memory_space.empty() ? std::string("memory")
                                                               : report.capacity.memory_space)
          : "XLA:GPU/CPU buffer assignment";
  out << fmt::format("OOM ({}): {}\n", kind,
                     report.message.empty() ? "(no error line pasted)" : report.message);
  if (report.failed_allocation_bytes) {
    out << fmt::format(
        "  failed allocation: {} B ({}){}\n", *report.failed_allocation_bytes,
        HumanBytes(*report.failed_allocation_bytes),
        report.failed_allocation_exact ? "" : ", rounded as the allocator printed it");
  }
  const dump::OomCapacity& c = report.capacity;
  if (!c.memory_space.empty()) {
    out << fmt::format("  {}: used {} of {}, exceeded by {} (XLA's rounded figures)\n",
                       c.memory_space, c.used_text.empty() ? "?" : c.used_text,
                       c.capacity_text.empty() ? "?" : c.capacity_text,
                       c.exceeded_text.empty() ? "?" : c.exceeded_text);
  }
  out << fmt::format("  listing: {}, {} B ({})",
                     Plural(static_cast<int64_t>(report.buffers.size()), "peak buffer"),
                     report.total_bytes, HumanBytes(report.total_bytes));
  if (report.repeats_skipped > 0) {
    std::string lines;
    for (int64_t line : report.repeat_lines) {
      lines += (lines.empty() ? "line " : ", ") + std::to_string(line);
    }
    out << fmt::format("; {} of the same listing skipped ({})",
                       Plural(report.repeats_skipped, "repeat"), lines);
  }
  out << "\n";
  const OomBuffer* largest = nullptr;
  for (const OomBuffer& b : report.buffers) {
    if (largest == nullptr || b.size_bytes > largest->size_bytes) largest = &b;
  }
  if (largest != nullptr) {
    out << fmt::format("  largest: Buffer {}, {} B ({}) {}, {}{}{}\n", largest->number,
                       largest->size_bytes, HumanBytes(largest->size_bytes),
                       largest->shape.empty() ? "(no shape)" : largest->shape, largest->category,
                       largest->label.empty() ? "" : ", " + largest->label,
                       largest->source.empty() ? "" : " at " + largest->source);
  }
}

void PrintCategories(const OomReport& report, std::ostream& out) {
  out << "largest buffers by category:\n";
  for (const OomCategory& c : report.categories) {
    std::string named;
    for (size_t i = 0; i < c.numbers.size() && i < kNamedPerCategory; ++i) {
      const OomBuffer* b = FindBuffer(report, c.numbers[i]);
      named += fmt::format("{}Buffer {}", i == 0 ? "" : ", ", c.numbers[i]);
      if (b != nullptr && !b->shape.empty()) named += " " + b->shape;
    }
    if (c.numbers.size() > kNamedPerCategory) {
      named += fmt::format(", {} more", c.numbers.size() - kNamedPerCategory);
    }
    std::string line = fmt::format("  {:<20} {:<11} {:>11}  {}", c.category,
                                   Plural(c.buffers, "buffer"), HumanBytes(c.bytes), named);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

void PrintBuffers(const OomReport& report, std::ostream& out) {
  out << "peak buffers (exact bytes from the shape unless marked \"listed\"):\n";
  for (const OomBuffer& b : report.buffers) {
    out << fmt::format("  Buffer {}:  {} B{}  {}  {}  {}", b.number, b.size_bytes,
                       b.size_from == "shape" ? "" : " listed", HumanBytes(b.size_bytes),
                       b.shape.empty() ? "(no shape)" : b.shape, b.category);
    if (!b.entry_parameter.empty()) out << "  entry parameter";
    if (!b.label.empty()) out << "  " << b.label;
    if (!b.allocation_type.empty()) out << "  (" << b.allocation_type << ")";
    if (!b.padding_text.empty()) out << "  padding " << b.padding_text;
    if (b.random) {
      out << fmt::format("  {}  {}  {}", b.role, passes::SitePhaseName(b.phase), b.site);
    } else if (!b.op_name.empty()) {
      out << "  " << b.op_name;
    }
    if (!b.source.empty()) out << "  " << b.source;
    out << "\n";
  }
}

void PrintFigures(const OomReport& report, std::ostream& out) {
  if (report.stats.empty()) return;
  out << "XLA's figures:\n";
  for (const dump::OomFigure& f : report.stats) {
    out << fmt::format("  {}: {} {}{}\n", f.block, f.name, f.text,
                       f.detail.empty() ? "" : " " + f.detail);
  }
}

void PrintRandomBits(const OomReport& report, std::ostream& out) {
  if (report.sites.empty()) {
    out << "no buffer in the listing holds random bits (threefry2x32, iota_2x32_shape, "
           "rng_bit_generator or random_bits op_names)\n";
    return;
  }
  out << fmt::format("random bits: {} of the listed buffers ({}), {}\n", report.random_buffers,
                     HumanBytes(report.random_bytes),
                     Plural(static_cast<int64_t>(report.sites.size()), "site"));
  for (const OomSite& s : report.sites) {
    out << fmt::format("  {} ({}): {}, {}", s.site, passes::SitePhaseName(s.phase),
                       Plural(s.buffers, "buffer"), HumanBytes(s.bytes));
    if (s.whatif) out << "; what-if per device: " << RngWhatIfText(*s.whatif);
    out << "\n";
  }
  out << "what each fix would save of these buffers";
  if (report.devices > 0) {
    out << fmt::format(" ({} devices, from {})", report.devices,
                       report.devices_from == "dump" ? "the dump" : report.devices_from);
  } else {
    out << " (device count unknown)";
  }
  out << ":\n";
  for (const OomSaving& s : report.savings) {
    const std::string saving = s.saving_bytes ? HumanBytes(*s.saving_bytes) : "n/a";
    out << fmt::format("  {:<11} {:>12}  {}  {}\n", s.fix, saving, s.recommended ? "yes" : "no ",
                       s.explanation);
  }
}

}  // namespace

namespace {

// Stands for the buffers in the document PrintOomJson writes around them.
constexpr std::string_view kBuffersPlaceholder = "\u0001spmdsim oom buffers\u0001";

}  // namespace

nlohmann::ordered_json OomToJson(const OomReport& report) {
  nlohmann::ordered_json j = OomToJsonWithoutBuffers(report);
  nlohmann::ordered_json buffers = nlohmann::ordered_json::array();
  for (const OomBuffer& b : report.buffers) buffers.push_back(BufferJson(b));
  j["buffers"] = std::move(buffers);
  return j;
}

void PrintOomJson(nlohmann::ordered_json document, const OomReport& report, std::ostream& out) {
  document["oom"] = OomToJsonWithoutBuffers(report);
  document["oom"]["buffers"] = std::string(kBuffersPlaceholder);
  const std::string text = JsonText(document);
  const std::string placeholder = JsonText(nlohmann::ordered_json(kBuffersPlaceholder));
  const size_t at = text.find(placeholder);
  const size_t line = text.rfind('\n', at) + 1;
  const std::string indent(text.find_first_not_of(' ', line) - line + 2, ' ');
  out << std::string_view(text).substr(0, at);
  if (report.buffers.empty()) {
    out << "[]";
  } else {
    // One buffer's JSON at a time, indented as the whole document would have it.
    out << "[\n";
    for (size_t i = 0; i < report.buffers.size(); ++i) {
      const std::string element = JsonText(BufferJson(report.buffers[i]));
      for (size_t start = 0; start < element.size();) {
        const size_t end = std::min(element.find('\n', start), element.size());
        out << indent << std::string_view(element).substr(start, end - start)
            << (end < element.size() ? "\n" : "");
        start = end + 1;
      }
      out << (i + 1 < report.buffers.size() ? ",\n" : "\n");
    }
    out << indent.substr(2) << "]";
  }
  out << std::string_view(text).substr(at + placeholder.size()) << "\n";
}

nlohmann::ordered_json OomToJsonWithoutBuffers(const OomReport& report) {
  nlohmann::ordered_json j;
  j["format"] = report.format;
  j["message"] = report.message;
  j["failed_allocation_bytes"] = OrNull(report.failed_allocation_bytes);
  j["failed_allocation_exact"] = report.failed_allocation_exact;
  const dump::OomCapacity& c = report.capacity;
  j["capacity"] = c.memory_space.empty()
                      ? nlohmann::ordered_json(nullptr)
                      : nlohmann::ordered_json{{"memory_space", c.memory_space},
                                               {"used_bytes", OrNull(c.used_bytes)},
                                               {"capacity_bytes", OrNull(c.capacity_bytes)},
                                               {"exceeded_bytes", OrNull(c.exceeded_bytes)},
                                               {"used_text", c.used_text},
                                               {"capacity_text", c.capacity_text},
                                               {"exceeded_text", c.exceeded_text}};
  nlohmann::ordered_json stats = nlohmann::ordered_json::array();
  for (const dump::OomFigure& f : report.stats) {
    stats.push_back({{"block", f.block},
                     {"name", f.name},
                     {"bytes", f.bytes},
                     {"text", f.text},
                     {"detail", f.detail}});
  }
  j["stats"] = std::move(stats);
  j["total_bytes"] = report.total_bytes;
  j["buffer_count"] = report.buffers.size();
  j["repeats_skipped"] = report.repeats_skipped;
  j["repeat_lines"] = report.repeat_lines;
  nlohmann::ordered_json categories = nlohmann::ordered_json::array();
  for (const OomCategory& cat : report.categories) {
    categories.push_back({{"category", cat.category},
                          {"buffers", cat.buffers},
                          {"bytes", cat.bytes},
                          {"numbers", cat.numbers}});
  }
  j["categories"] = std::move(categories);
  j["random_buffers"] = report.random_buffers;
  j["random_bytes"] = report.random_bytes;
  j["buffers"] = nlohmann::ordered_json::array();  // filled by OomToJson or PrintOomJson
  nlohmann::ordered_json sites = nlohmann::ordered_json::array();
  for (const OomSite& s : report.sites) {
    sites.push_back({{"site", s.site},
                     {"phase", passes::SitePhaseName(s.phase)},
                     {"buffers", s.buffers},
                     {"bytes", s.bytes},
                     {"largest", s.largest},
                     {"shape", s.shape},
                     {"local_elements", s.local_elements},
                     {"global_elements", s.global_elements},
                     {"whatif", s.whatif ? RngWhatIfJson(*s.whatif) : nlohmann::ordered_json()}});
  }
  j["sites"] = std::move(sites);
  j["devices"] =
      report.devices > 0 ? nlohmann::ordered_json(report.devices) : nlohmann::ordered_json(nullptr);
  j["devices_from"] = report.devices_from;
  j["rematerialized"] = report.rematerialized;
  j["remat_evidence"] = report.remat_evidence;
  nlohmann::ordered_json savings = nlohmann::ordered_json::object();
  for (const OomSaving& s : report.savings) {
    savings[s.fix] = {{"saving_bytes", OrNull(s.saving_bytes)},
                      {"materialized_bytes", OrNull(s.materialized_bytes)},
                      {"recommended", s.recommended},
                      {"explanation", s.explanation}};
  }
  j["savings"] = std::move(savings);
  j["notes"] = report.notes;
  return j;
}

void PrintOomText(const OomReport& report, std::ostream& out) {
  PrintHeading(report, out);
  if (!report.buffers.empty()) {
    PrintCategories(report, out);
    PrintBuffers(report, out);
  }
  PrintFigures(report, out);
  if (!report.buffers.empty()) PrintRandomBits(report, out);
  for (const std::string& note : report.notes) out << "note: " << note << "\n";
}

}  // namespace spmdsim::analyzer
