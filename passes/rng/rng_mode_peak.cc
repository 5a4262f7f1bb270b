#include "passes/rng/rng_mode_peak.h"

#include <cmath>

#include "ir/checked_math.h"

namespace spmdsim::passes {
namespace {

// The site's buffers scaled to `target` bytes in all: each value of each buffer in proportion.
void Resize(const RngSite& site, int64_t target, std::map<std::string, int64_t>& resized) {
  const long double scale =
      static_cast<long double>(target) / static_cast<long double>(site.materialized_bytes);
  for (const RngSiteBuffer& buffer : site.buffers) {
    const auto bytes =
        static_cast<int64_t>(std::llround(static_cast<long double>(buffer.bytes) * scale));
    for (const std::string& value : buffer.values) resized[value] = bytes;
    if (buffer.values.empty()) resized[buffer.value] = bytes;
  }
}

int64_t PeakWith(ModuleAnalyses& analyses, const MemoryAnalysisOptions& options,
                 std::map<std::string, int64_t> resized) {
  MemoryAnalysisOptions whatif = options;
  whatif.live_at_peak_limit = 1;
  whatif.timeline_points = 1;
  whatif.record_placements = false;
  whatif.recompute_values.clear();
  whatif.resized_values = std::move(resized);
  return AnalyzePeakMemory(analyses, whatif).peak_bytes;
}

}  // namespace

ModePeakWhatIf EstimateModePeak(ModuleAnalyses& analyses, const RngSiteResult& rng,
                                const MemoryAnalysisOptions& options, const std::string& mode) {
  ModePeakWhatIf result;
  result.mode = mode;
  int64_t considered = 0;  // bits sites drawn another way now
  std::map<std::string, int64_t> low;
  std::map<std::string, int64_t> high;
  for (const RngSite& site : rng.sites) {
    if (site.purpose != SitePurpose::kBits) continue;
    const RngCost* cost = CostOf(site.whatif, mode.c_str());
    // A site already drawn that way keeps its buffers.
    if (cost == nullptr || cost == CostOf(site.whatif, site.mode)) continue;
    ++considered;
    result.wire_bytes_per_device =
        ir::SaturatingAdd(result.wire_bytes_per_device, cost->wire_bytes_per_device);
    if (site.materialized_bytes <= 0 || site.buffers.empty()) {
      result.sites_not_sized += cost->memory_bytes > 0 ? 1 : 0;
      continue;
    }
    if (cost->memory_bytes == site.materialized_bytes && !cost->bounded) continue;
    ++result.sites_resized;
    result.bits_bytes_now = ir::SaturatingAdd(result.bits_bytes_now, site.materialized_bytes);
    result.bits_bytes_after = ir::SaturatingAdd(result.bits_bytes_after, cost->memory_bytes);
    Resize(site, cost->memory_bytes, low);
    Resize(site, HighMemoryBytes(*cost), high);
  }
  // Sites drawn another way whose buffers do not change (fused here and there, or fused here and
  // not sized: a lower bound, sites_not_sized says so): the peak as compiled.
  if (considered == 0) return result;
  result.ran = true;
  result.peak_bytes = PeakWith(analyses, options, low);
  result.peak_high_bytes = low == high ? result.peak_bytes : PeakWith(analyses, options, high);
  return result;
}

}  // namespace spmdsim::passes
