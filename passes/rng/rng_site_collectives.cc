// A site's collectives: each collective moving the values of some sites is attributed to them,
// a combined one shared in proportion to the bytes of the operands each site's values occupy.
#include <algorithm>
#include <set>
#include <unordered_set>

#include "ir/checked_math.h"
#include "passes/collectives/collective_analysis.h"
#include "passes/memory/buffer_dataflow_analysis.h"
#include "passes/rng/rng_site_finder.h"

namespace spmdsim::passes::rng_internal {

std::vector<int> RngSiteFinder::SitesReading(int owner, const HloInstruction* instr) {
  std::vector<int> readers{owner};
  const SiteWork& first = sites_[static_cast<size_t>(owner)];
  if (!first.shares_anchor) return readers;
  for (size_t s = 0; s < sites_.size(); ++s) {
    const SiteWork& other = sites_[s];
    if (static_cast<int>(s) == owner || !other.shares_anchor || other.anchor != first.anchor) {
      continue;
    }
    // Breadth first up from the hash's inputs: does it read `instr`'s values?
    std::vector<const HloInstruction*> pending = FusedHashInputs(*other.anchor, other.rotation);
    std::unordered_set<const HloInstruction*> seen;
    constexpr size_t kMaxVisited = 4096;
    bool reads = false;
    for (size_t next = 0; next < pending.size() && !reads && seen.size() < kMaxVisited; ++next) {
      const HloInstruction* at = pending[next];
      if (!seen.insert(at).second) continue;
      reads = at == instr;
      for (const HloInstruction* operand : at->operands) pending.push_back(operand);
    }
    if (reads) readers.push_back(static_cast<int>(s));
  }
  return readers;
}

void RngSiteFinder::AttachCollectives(const DataflowAnalysis& dataflow) {
  CollectiveResult owned;
  const CollectiveResult* collectives = options_.collectives;
  if (collectives == nullptr) {
    owned = AnalyzeCollectives(module_);
    collectives = &owned;
  }
  const auto add = [&](int s, const CollectiveOp& op, int64_t operands, int64_t bytes,
                       int64_t wire) {
    RngSite& site = sites_[s].site;
    RngSiteCollective out;
    out.instruction = op.instruction;
    out.kind = op.kind;
    out.operands = operands;
    out.operand_count = std::max<int64_t>(op.operand_count, 1);
    out.bytes = bytes;
    out.wire_bytes_per_device = wire;
    site.wire_bytes_per_device = SaturatingAdd(site.wire_bytes_per_device, wire);
    site.collectives.push_back(std::move(out));
  };
  for (const CollectiveOp& op : collectives->ops) {
    const HloInstruction* instr = op.start;
    if (instr == nullptr) continue;
    const int64_t wire = ir::SaturatingMul(op.wire_bytes_per_device, op.loop_multiplier);
    // A collective among the site's instructions, or among what XLA hoisted out of its loop.
    int owner = -1;
    if (const auto member = site_of_.find(instr); member != site_of_.end()) {
      owner = member->second;
    } else if (const auto hoisted = hoisted_of_.find(instr); hoisted != hoisted_of_.end()) {
      owner = hoisted->second;
    }
    if (owner >= 0) {
      // Counters exchanged for a fusion hashing several draws feed each draw that reads them:
      // the collective is shared by those sites, in equal parts (the first takes the remainder).
      const std::vector<int> readers = SitesReading(owner, instr);
      const auto n = static_cast<int64_t>(readers.size());
      for (size_t k = 0; k < readers.size(); ++k) {
        add(readers[k], op, std::max<int64_t>(op.operand_count, 1),
            op.bytes / n + (k == 0 ? op.bytes % n : 0), wire / n + (k == 0 ? wire % n : 0));
      }
      continue;
    }
    // Per site: the operands holding its values and their bytes (an operand holding the values
    // of several sites counts for each, split evenly).
    std::map<int, std::pair<int64_t, long double>> share;
    long double total = 0;
    const size_t travelling = std::min(instr->operands.size(),
                                       static_cast<size_t>(std::max<int64_t>(op.operand_count, 0)));
    for (size_t o = 0; o < travelling; ++o) {
      const HloInstruction* operand = instr->operands[o];
      const int64_t bytes = operand->shape.IsArray() ? operand->shape.ByteSize() : 0;
      total += static_cast<long double>(bytes);
      const int32_t first = dataflow.FirstSlot(operand);
      if (first < 0) continue;
      std::set<int> holders;
      for (int32_t slot = first; slot < first + dataflow.SlotSpan(first); ++slot) {
        for (const int32_t id : dataflow.ValueSet(slot)) {
          const auto held = value_site_.find(id);
          if (held != value_site_.end()) holders.insert(held->second);
        }
      }
      for (const int s : holders) {
        share[s].first += 1;
        share[s].second += static_cast<long double>(bytes) / holders.size();
      }
    }
    if (share.empty() || total <= 0) continue;
    for (const auto& [s, part] : share) {
      const long double fraction = std::min<long double>(part.second / total, 1);
      add(s, op, part.first, static_cast<int64_t>(fraction * op.bytes + 0.5L),
          static_cast<int64_t>(fraction * wire + 0.5L));
    }
  }
}

}  // namespace spmdsim::passes::rng_internal
