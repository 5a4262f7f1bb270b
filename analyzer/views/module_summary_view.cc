#include "analyzer/views/module_summary_view.h"

#include <fmt/format.h>

#include <algorithm>

#include "analyzer/emit/human_units.h"

namespace spmdsim::analyzer {
namespace {

std::string ShortStage(const std::string& stage) {
  if (stage == "after_optimizations") return "after";
  if (stage == "before_optimizations") return "before";
  return stage;
}

std::string StageWords(const std::string& stage) {
  if (stage == "after_optimizations") return "after optimizations";
  if (stage == "before_optimizations") return "before optimizations: an estimate";
  return "stage " + stage;
}

std::string FitsText(const std::optional<FitVerdict>& fit) {
  if (!fit) return "-";
  if (!fit->fits) return "no verdict";
  const std::string device = fit->capacity.display;
  if (*fit->fits) return "yes (" + device + ")";
  return "no: over " + HumanBytes(-fit->margin_bytes) + " (" + device + ")";
}

std::string FixText(const std::optional<FitFix>& fix) {
  if (!fix) return "-";
  std::string text = fix->fix + " -> " + HumanBytes(fix->peak_bytes);
  if (fix->fits) text += *fix->fits ? ", fits" : ", still over";
  return text;
}

}  // namespace

void PrintModuleSummary(const std::vector<ModuleSummaryRow>& rows, std::ostream& out) {
  if (rows.size() < 2) return;
  // The largest peak among the modules after optimizations (what runs), else among those of
  // unknown stage, else among the before-optimizations estimates.
  const auto rank = [](const ModuleSummaryRow& r) {
    return r.stage == "after_optimizations" ? 0 : r.stage == "before_optimizations" ? 2 : 1;
  };
  int best_rank = 2;
  for (const ModuleSummaryRow& r : rows) best_rank = std::min(best_rank, rank(r));
  size_t top = rows.size();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rank(rows[i]) != best_rank) continue;
    if (top == rows.size() || rows[i].peak_bytes > rows[top].peak_bytes) top = i;
  }
  out << fmt::format("{} modules; the largest peak is {}'s ({}): {} per device\n", rows.size(),
                     rows[top].module, StageWords(rows[top].stage),
                     HumanBytes(rows[top].peak_bytes));
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"module", "stage", "peak/device", "fits", "best fix", "largest at the peak"});
  for (const ModuleSummaryRow& r : rows) {
    cells.push_back(
        {r.module, ShortStage(r.stage), HumanBytes(r.peak_bytes), FitsText(r.fit),
         FixText(r.best_fix),
         r.largest_shape.empty() ? "-" : r.largest_shape + " " + HumanBytes(r.largest_bytes)});
  }
  std::vector<size_t> width(cells.front().size(), 0);
  for (const auto& row : cells) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (size_t i = 0; i < cells.size(); ++i) {
    const bool marked = i > 0 && i - 1 == top;
    std::string line = marked ? "  * " : "    ";
    for (size_t c = 0; c < cells[i].size(); ++c) {
      const std::string& cell = cells[i][c];
      const bool last = c + 1 == cells[i].size();
      if (c == 2) {
        line += fmt::format("{:>{}}", cell, width[c]);  // figures right-aligned
      } else {
        line += last ? cell : fmt::format("{:<{}}", cell, width[c]);
      }
      if (!last) line += "  ";
    }
    out << line << "\n";
  }
  out << "\n";
}

}  // namespace spmdsim::analyzer
