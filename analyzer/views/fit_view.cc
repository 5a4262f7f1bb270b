#include "analyzer/views/fit_view.h"

#include <fmt/format.h>

#include <algorithm>

#include "analyzer/emit/human_units.h"

namespace spmdsim::analyzer {

std::string FitVerdictLine(std::string_view module_name, const FitVerdict& verdict) {
  const std::string peak =
      fmt::format("{}: peak {} per device", module_name, HumanBytes(verdict.peak_bytes));
  if (!verdict.fits) return fmt::format("{}; no fit verdict: {}", peak, verdict.capacity.unknown);
  const DeviceCapacity& c = verdict.capacity;
  if (*verdict.fits) {
    return fmt::format("{} fits the {} ({} for XLA): {} to spare", peak, c.display,
                       HumanBytes(c.usable_bytes), HumanBytes(verdict.margin_bytes));
  }
  std::string line = fmt::format("{} does not fit the {} ({} for XLA): over by {}", peak, c.display,
                                 HumanBytes(c.usable_bytes), HumanBytes(-verdict.margin_bytes));
  if (const std::optional<double> fraction = GpuFractionThatFits(verdict)) {
    line += fmt::format("; fits with XLA_PYTHON_CLIENT_MEM_FRACTION={:.2f}", *fraction);
    if (*c.memory_fraction == kJaxDefaultGpuMemFraction) {
      line += ", or where XLA's default pool grows past 75% (the 0.75+ policy of newer releases)";
    }
  }
  return line;
}

std::string FitBasisLine(const FitVerdict& verdict) {
  if (!verdict.fits) return "";
  return fmt::format("{} for XLA = {}; device: {}", HumanBytes(verdict.capacity.usable_bytes),
                     verdict.capacity.basis, verdict.capacity.decided_by);
}

void PrintFitText(const dump::ModuleInput& input, const FitVerdict& verdict, std::ostream& out) {
  out << FitVerdictLine(input.module->name, verdict) << "\n";
  if (const std::string basis = FitBasisLine(verdict); !basis.empty()) {
    out << "  " << basis << "\n";
  }
}

nlohmann::ordered_json FitToJson(const FitVerdict& verdict) {
  const DeviceCapacity& c = verdict.capacity;
  nlohmann::ordered_json j;
  j["peak_bytes"] = verdict.peak_bytes;
  j["fits"] = verdict.fits ? nlohmann::ordered_json(*verdict.fits) : nullptr;
  if (!verdict.fits) {
    j["device"] = nullptr;
    j["unknown"] = c.unknown;
    return j;
  }
  j["margin_bytes"] = verdict.margin_bytes;
  j["device"] =
      c.device.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(c.device);
  j["device_name"] = c.display;
  j["usable_bytes"] = c.usable_bytes;
  j["memory_bytes"] = c.memory_bytes > 0 ? nlohmann::ordered_json(c.memory_bytes) : nullptr;
  j["reserved_bytes"] = c.reserved_bytes;
  j["memory_fraction"] = c.memory_fraction ? nlohmann::ordered_json(*c.memory_fraction) : nullptr;
  const std::optional<double> fraction = GpuFractionThatFits(verdict);
  j["memory_fraction_that_fits"] = fraction ? nlohmann::ordered_json(*fraction) : nullptr;
  j["fits_whole_device"] =
      verdict.fits_whole_device ? nlohmann::ordered_json(*verdict.fits_whole_device) : nullptr;
  j["basis"] = c.basis;
  j["decided_by"] = c.decided_by;
  return j;
}

void PrintFixesText(const FitFixes& all, std::ostream& out, size_t limit) {
  const std::vector<FitFix>& fixes = all.ranked;
  if (fixes.empty()) return;
  out << "  fixes, by the peak per device each gives (the module changed, memory packed again):\n";
  for (size_t i = 0; i < fixes.size() && (limit == 0 || i < limit); ++i) {
    const FitFix& f = fixes[i];
    const std::string peak =
        f.peak_high_bytes != f.peak_bytes
            ? fmt::format("{} to {}", HumanBytes(f.peak_bytes), HumanBytes(f.peak_high_bytes))
            : HumanBytes(f.peak_bytes);
    const std::string fits = !f.fits ? "" : *f.fits ? ", fits" : ", does not fit";
    out << fmt::format("    {}. {}: peak {}{}; cost: {}\n       ({})\n", i + 1, f.action, peak,
                       fits, f.cost, f.basis);
  }
  if (limit != 0 && fixes.size() > limit) {
    out << fmt::format("    ... {} more (--format json lists them)\n", fixes.size() - limit);
  }
  const bool none_fits = std::none_of(fixes.begin(), fixes.end(),
                                      [](const FitFix& f) { return f.fits.value_or(true); });
  if (none_fits) {
    out << fmt::format(
        "    none of them fits: random bits are {} of the {} live at the peak; the rest is not "
        "random bits (the live-at-peak listing names it)\n",
        HumanBytes(all.random_bits_at_peak_bytes), HumanBytes(all.peak_bytes));
  }
}

namespace {
nlohmann::ordered_json FixesToJson(const FitFixes& fixes) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const FitFix& f : fixes.ranked) {
    list.push_back({{"fix", f.fix},
                    {"action", f.action},
                    {"peak_bytes", f.peak_bytes},
                    {"peak_high_bytes", f.peak_high_bytes},
                    {"fits", f.fits ? nlohmann::ordered_json(*f.fits) : nullptr},
                    {"wire_bytes_per_device", f.wire_bytes_per_device},
                    {"host_bytes_per_step", f.host_bytes_per_step},
                    {"cost", f.cost},
                    {"basis", f.basis}});
  }
  return list;
}
}  // namespace

void AddFixesJson(const FitFixes& fixes, nlohmann::ordered_json& fit) {
  fit["random_bits_at_peak_bytes"] = fixes.random_bits_at_peak_bytes;
  fit["fixes"] = FixesToJson(fixes);
}

}  // namespace spmdsim::analyzer
