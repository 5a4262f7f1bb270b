#include "analyzer/oom_log.h"

#include <charconv>
#include <map>

#include "analyzer/human_units.h"
#include "ir/checked_math.h"
#include "passes/rng_site_analysis.h"

namespace spmdsim::analyzer {
namespace {

using ir::SaturatingAdd;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// key="value" or key=value inside an Operator line.
std::string Field(std::string_view line, std::string_view key) {
  const std::string pattern = std::string(key) + "=";
  size_t at = 0;
  while ((at = line.find(pattern, at)) != std::string_view::npos) {
    if (at == 0 || line[at - 1] == ' ') break;
    at += pattern.size();
  }
  if (at == std::string_view::npos) return {};
  std::string_view rest = line.substr(at + pattern.size());
  if (!rest.empty() && rest.front() == '"') {
    rest.remove_prefix(1);
    const size_t end = rest.find('"');
    return std::string(rest.substr(0, end));
  }
  return std::string(rest.substr(0, rest.find(' ')));
}

// Elements and element type of "u32[128,1024,768]"; the type is empty when unreadable.
std::pair<std::string, int64_t> ParseShape(std::string_view shape) {
  const size_t open = shape.find('[');
  if (open == std::string_view::npos) return {};
  int64_t elements = 1;
  std::string_view dims = shape.substr(open + 1, shape.find(']') - open - 1);
  while (!dims.empty()) {
    int64_t dim = 0;
    const auto [end, ec] = std::from_chars(dims.data(), dims.data() + dims.size(), dim);
    if (ec != std::errc()) break;
    elements = ir::SaturatingMul(elements, dim);
    dims.remove_prefix(static_cast<size_t>(end - dims.data()));
    if (!dims.empty() && dims.front() == ',') dims.remove_prefix(1);
  }
  return {std::string(shape.substr(0, open)), elements};
}

void Classify(OomBuffer& b) {
  const std::string_view op_name = b.op_name;
  const size_t slash = op_name.rfind('/');
  const std::string_view last =
      slash == std::string_view::npos ? op_name : op_name.substr(slash + 1);
  const std::string type = ParseShape(b.shape).first;
  const bool unsigned_bits = type == "u32" || type == "u8" || type == "u16" || type == "u64";
  if (!unsigned_bits) return;
  if (last == "threefry2x32") {
    b.role = b.label == "custom-call" ? "hash output (threefry2x32 custom call)"
                                      : "hash output (threefry2x32)";
  } else if (StartsWith(last, "iota_2x32_shape")) {
    b.role = "counters (iota_2x32_shape)";
  } else if (last == "rng_bit_generator" || last == "random_bits") {
    b.role = "bits (" + std::string(last) + ")";
  } else {
    return;
  }
  b.random = true;
  b.site = std::string(slash == std::string_view::npos ? op_name : op_name.substr(0, slash));
  b.phase = passes::RngPhase(op_name);
}

}  // namespace

std::optional<OomReport> ParseOomLog(std::string_view text, std::string& error) {
  OomReport report;
  OomBuffer* current = nullptr;
  bool in_listing = false;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    const std::string_view line = Trim(text.substr(0, newline));
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (StartsWith(line, "Buffer ") && !line.empty() && line.back() == ':') {
      OomBuffer b;
      const std::string_view number = line.substr(7, line.size() - 8);
      std::from_chars(number.data(), number.data() + number.size(), b.number);
      report.buffers.push_back(std::move(b));
      current = &report.buffers.back();
      in_listing = true;
      continue;
    }
    if (current == nullptr) {
      if (!in_listing && !line.empty() && line != "..." && report.header.size() < 16) {
        report.header.emplace_back(line);
      }
      continue;
    }
    if (StartsWith(line, "Size:")) {
      current->size_text = std::string(Trim(line.substr(5)));
      current->size_bytes = ParseSize(current->size_text).value_or(0);
    } else if (StartsWith(line, "Operator:")) {
      current->op_name = Field(line, "op_name");
      const std::string file = Field(line, "source_file");
      const std::string source_line = Field(line, "source_line");
      if (!file.empty()) {
        const size_t slash = file.rfind('/');
        current->source = (slash == std::string::npos ? file : file.substr(slash + 1)) +
                          (source_line.empty() ? "" : ":" + source_line);
      }
    } else if (StartsWith(line, "XLA Label:")) {
      current->label = std::string(Trim(line.substr(10)));
    } else if (StartsWith(line, "Shape:")) {
      current->shape = std::string(Trim(line.substr(6)));
    } else if (StartsWith(line, "Entry Parameter Subshape:")) {
      current->entry_parameter = std::string(Trim(line.substr(25)));
    } else if (StartsWith(line, "====")) {
      current = nullptr;
    }
  }
  // Keep entries that carry a size.
  std::vector<OomBuffer> kept;
  for (OomBuffer& b : report.buffers) {
    if (!b.size_text.empty()) kept.push_back(std::move(b));
  }
  report.buffers = std::move(kept);
  if (report.buffers.empty()) {
    error =
        "no \"Buffer N:\" entries with a \"Size:\" line found; paste the part of XLA's "
        "\"BufferAssignment OOM Debugging\" output that lists the peak buffers";
    return std::nullopt;
  }
  std::map<std::string, size_t> site_index;
  std::map<std::string, int64_t> site_largest;
  int64_t forward_random = 0;
  for (OomBuffer& b : report.buffers) {
    Classify(b);
    report.total_bytes = SaturatingAdd(report.total_bytes, b.size_bytes);
    if (!b.random) continue;
    ++report.random_buffers;
    report.random_bytes = SaturatingAdd(report.random_bytes, b.size_bytes);
    if (b.phase == "forward") forward_random = SaturatingAdd(forward_random, b.size_bytes);
    const auto [it, inserted] = site_index.emplace(b.site, report.sites.size());
    if (inserted) report.sites.push_back(OomSite{b.site, b.phase, 0, 0, 0});
    OomSite& site = report.sites[it->second];
    ++site.buffers;
    site.bytes = SaturatingAdd(site.bytes, b.size_bytes);
    site.largest = std::max(site.largest, b.size_bytes);
  }
  if (report.random_buffers > 0) {
    int64_t rbg = 0;
    for (const OomSite& site : report.sites) {
      rbg = SaturatingAdd(rbg, site.bytes - site.largest);
    }
    report.savings.push_back(
        {"fused", report.random_bytes,
         "a fused lowering (JAX without the GPU threefry kernel lowering, "
         "jax_threefry_gpu_kernel_lowering=False, lets XLA fuse counters, hash and dropout) "
         "materializes none of these random buffers"});
    report.savings.push_back(
        {"rbg", rbg,
         "jax_default_prng_impl=rbg: one bits buffer per site instead of counters and hash "
         "outputs (bits not guaranteed the same across backends or shardings)"});
    report.savings.push_back(
        {"remat", forward_random,
         "recompute the bits from the key in the backward (checkpoint policy that saves no "
         "random values, e.g. jax.checkpoint_policies.nothing_saveable around the dropout): the "
         "forward (jvp) random buffers held at the peak are freed"});
    report.savings.push_back(
        {"replicated", 0,
         "jax_threefry_partitionable=False saves nothing: every device hashes the whole global "
         "array and exchanges it with collectives"});
  }
  return report;
}

}  // namespace spmdsim::analyzer
