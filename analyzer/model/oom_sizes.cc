#include "analyzer/model/oom_sizes.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <map>

#include "dump/size_text.h"
#include "ir/attribute_parsers.h"
#include "ir/checked_math.h"

namespace spmdsim::analyzer {
namespace {

using ir::SaturatingAdd;

// Undecided buffers tried as live-out sets: 2^16 subsets at most.
constexpr size_t kMaxLiveOutCandidates = 16;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

const dump::OomFigure* FindFigure(const OomReport& report, std::string_view name) {
  for (const dump::OomFigure& f : report.stats) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// The category XLA:TPU's "Allocation type" names; empty when it names none.
std::string AllocationCategory(std::string_view allocation_type) {
  std::string type = Lower(allocation_type);
  if (type.empty()) return {};
  if (type.find("argument") != std::string::npos || type.find("parameter") != std::string::npos) {
    return "parameter";
  }
  if (type.find("output") != std::string::npos) return "output";
  if (type.find("temp") != std::string::npos) return "temporary";
  return type;
}

// The fewest of `candidates` (indices into buffers) whose sizes add up to target +- slack, the
// closest such set among equals; empty when none does.
std::vector<size_t> LiveOutSet(const std::vector<OomBuffer>& buffers,
                               std::vector<size_t> candidates, int64_t target, int64_t slack) {
  std::stable_sort(candidates.begin(), candidates.end(), [&](size_t a, size_t b) {
    return buffers[a].size_bytes > buffers[b].size_bytes;
  });
  if (candidates.size() > kMaxLiveOutCandidates) candidates.resize(kMaxLiveOutCandidates);
  uint32_t best = 0;
  int best_count = 0;
  int64_t best_diff = 0;
  for (uint32_t mask = 1; mask < (uint32_t{1} << candidates.size()); ++mask) {
    int64_t sum = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (mask & (uint32_t{1} << i)) sum = SaturatingAdd(sum, buffers[candidates[i]].size_bytes);
    }
    const int64_t diff = sum > target ? sum - target : target - sum;
    if (diff > slack) continue;
    const int count = std::popcount(mask);
    if (best == 0 || count < best_count || (count == best_count && diff < best_diff)) {
      best = mask;
      best_count = count;
      best_diff = diff;
    }
  }
  std::vector<size_t> set;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (best & (uint32_t{1} << i)) set.push_back(candidates[i]);
  }
  return set;
}

}  // namespace

int64_t RoundingSlack(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  size_t split = 0;
  int decimals = 0;
  bool point = false;
  while (split < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[split])) || text[split] == '.')) {
    if (point) ++decimals;
    point |= text[split] == '.';
    ++split;
  }
  const std::optional<int64_t> unit = dump::ParseSize("1" + std::string(text.substr(split)));
  if (!unit || *unit <= 1) return 0;
  int64_t ten = 1;
  for (int i = 0; i < std::min(decimals, 9); ++i) ten *= 10;
  // Half the last printed digit, plus the whole units of the next size down that XLA truncates.
  return *unit / (2 * ten) + *unit / 1024 + 1;
}

void ResolveOomSizes(OomReport& report) {
  report.total_bytes = 0;
  for (OomBuffer& b : report.buffers) {
    const std::optional<int64_t> listed = dump::ParseSizeSaturating(b.size_text);
    b.listed_size_bytes = listed.value_or(0);
    b.shape_bytes.reset();
    if (!b.shape.empty()) {
      std::string error;
      const std::optional<ir::Shape> shape = ir::ParseShape(b.shape, &error);
      if (shape && shape->ByteSize() >= 0) {
        b.shape_bytes = shape->ByteSize();
      } else {
        report.notes.push_back("Buffer " + std::to_string(b.number) + ": its shape \"" + b.shape +
                               "\" could not be read (" + error + "); the listed size is used");
      }
    }
    const bool agree = b.shape_bytes && (!listed || std::max(*b.shape_bytes, *listed) -
                                                            std::min(*b.shape_bytes, *listed) <=
                                                        RoundingSlack(b.size_text));
    if (agree) {
      b.size_bytes = *b.shape_bytes;
      b.size_from = "shape";
    } else {
      b.size_bytes = b.listed_size_bytes;
      b.size_from = "listed size";
      if (b.shape_bytes) {
        report.notes.push_back("Buffer " + std::to_string(b.number) + ": its shape " + b.shape +
                               " holds " + std::to_string(*b.shape_bytes) +
                               " B, which is not the listed " + b.size_text +
                               "; the listed size is used");
      }
    }
    report.total_bytes = SaturatingAdd(report.total_bytes, b.size_bytes);
  }
}

void CategorizeOomBuffers(OomReport& report) {
  std::vector<OomBuffer>& buffers = report.buffers;
  std::vector<size_t> undecided;
  for (size_t i = 0; i < buffers.size(); ++i) {
    OomBuffer& b = buffers[i];
    std::string category =
        !b.entry_parameter.empty() ? "parameter" : AllocationCategory(b.allocation_type);
    if (b.random && (category.empty() || category == "temporary")) category = "random bits";
    b.category = category;
    if (category.empty()) undecided.push_back(i);
  }
  const dump::OomFigure* live_out = FindFigure(report, "maybe_live_out allocation");
  const dump::OomFigure* output_size = FindFigure(report, "output size");
  std::string rest = "temporary or output";
  if (live_out != nullptr && !undecided.empty()) {
    const std::vector<size_t> outputs =
        live_out->bytes == 0
            ? std::vector<size_t>()
            : LiveOutSet(buffers, undecided, live_out->bytes, RoundingSlack(live_out->text));
    for (size_t i : outputs) buffers[i].category = "output";
    if (live_out->bytes == 0 || !outputs.empty()) {
      rest = "temporary";
    } else {
      report.notes.push_back("maybe_live_out allocation " + live_out->text +
                             " is not made of listed buffers: outputs are not told apart from "
                             "temporaries");
    }
  } else if (output_size != nullptr && output_size->bytes == 0) {
    rest = "temporary";
  }
  for (size_t i : undecided) {
    if (buffers[i].category.empty()) buffers[i].category = rest;
  }

  std::map<std::string, OomCategory> by_name;
  std::vector<const OomBuffer*> largest_first;
  largest_first.reserve(buffers.size());
  for (const OomBuffer& b : buffers) largest_first.push_back(&b);
  std::stable_sort(
      largest_first.begin(), largest_first.end(),
      [](const OomBuffer* a, const OomBuffer* b) { return a->size_bytes > b->size_bytes; });
  for (const OomBuffer* b : largest_first) {
    OomCategory& c = by_name[b->category];
    c.category = b->category;
    ++c.buffers;
    c.bytes = SaturatingAdd(c.bytes, b->size_bytes);
    c.numbers.push_back(b->number);
  }
  report.categories.clear();
  for (auto& [name, category] : by_name) report.categories.push_back(std::move(category));
  std::stable_sort(report.categories.begin(), report.categories.end(),
                   [](const OomCategory& a, const OomCategory& b) { return a.bytes > b.bytes; });
  // Random bits are always answered, none included.
  if (by_name.count("random bits") == 0) report.categories.push_back({"random bits", 0, 0, {}});
}

}  // namespace spmdsim::analyzer
