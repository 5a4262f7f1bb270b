#include "analyzer/model/module_diff.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "ir/checked_math.h"

namespace spmdsim::analyzer {
namespace {

using GroupKey = std::pair<std::string, std::string>;  // (op_name, shape)

struct Group {
  int64_t buffers = 0;
  int64_t bytes = 0;
  std::string source;
};

std::map<GroupKey, Group> GroupLive(const passes::PeakMemoryResult& memory) {
  std::map<GroupKey, Group> groups;
  for (const passes::LiveBuffer& buffer : memory.live_at_peak) {
    Group& group = groups[{buffer.op_name, buffer.shape}];
    if (group.buffers == 0) group.source = buffer.source;
    ++group.buffers;
    group.bytes = ir::SaturatingAdd(group.bytes, buffer.size_bytes);
  }
  return groups;
}

int64_t Magnitude(int64_t value) {
  return value == INT64_MIN ? INT64_MAX : (value < 0 ? -value : value);
}

void AddToCategory(LiveGroupDiff group, LiveCategory& category) {
  ++category.groups;
  category.change_bytes = ir::SaturatingAdd(category.change_bytes, group.bytes.Change());
  category.top.push_back(std::move(group));
}

// Keeps the `top` groups of largest |change| (ties: op_name, then shape).
void CutCategory(size_t top, LiveCategory& category) {
  std::sort(category.top.begin(), category.top.end(),
            [](const LiveGroupDiff& x, const LiveGroupDiff& y) {
              const int64_t mx = Magnitude(x.bytes.Change());
              const int64_t my = Magnitude(y.bytes.Change());
              if (mx != my) return mx > my;
              if (x.op_name != y.op_name) return x.op_name < y.op_name;
              return x.shape < y.shape;
            });
  if (category.top.size() > top) category.top.resize(top);
}

LiveDiff DiffLive(const passes::PeakMemoryResult& a, const passes::PeakMemoryResult& b,
                  size_t top) {
  LiveDiff diff;
  diff.buffers = {static_cast<int64_t>(a.live_at_peak.size()),
                  static_cast<int64_t>(b.live_at_peak.size())};
  const std::map<GroupKey, Group> in_a = GroupLive(a);
  const std::map<GroupKey, Group> in_b = GroupLive(b);
  std::set<GroupKey> keys;
  for (const auto& [key, group] : in_a) keys.insert(key);
  for (const auto& [key, group] : in_b) keys.insert(key);
  for (const GroupKey& key : keys) {
    const auto ia = in_a.find(key);
    const auto ib = in_b.find(key);
    const Group ga = ia == in_a.end() ? Group{} : ia->second;
    const Group gb = ib == in_b.end() ? Group{} : ib->second;
    LiveGroupDiff group{key.first,
                        key.second,
                        gb.buffers > 0 ? gb.source : ga.source,
                        {ga.buffers, gb.buffers},
                        {ga.bytes, gb.bytes}};
    if (ga.buffers == 0) {
      AddToCategory(std::move(group), diff.appeared);
    } else if (gb.buffers == 0) {
      AddToCategory(std::move(group), diff.disappeared);
    } else if (ga.bytes != gb.bytes) {
      AddToCategory(std::move(group), diff.changed);
    } else {
      ++diff.unchanged_groups;
    }
  }
  CutCategory(top, diff.appeared);
  CutCategory(top, diff.disappeared);
  CutCategory(top, diff.changed);
  return diff;
}

std::vector<CollectiveKindDiff> DiffCollectives(const passes::CollectiveResult& a,
                                                const passes::CollectiveResult& b) {
  std::set<std::string> kinds;
  for (const auto& [kind, totals] : a.by_kind) kinds.insert(kind);
  for (const auto& [kind, totals] : b.by_kind) kinds.insert(kind);
  std::vector<CollectiveKindDiff> diffs;
  for (const std::string& kind : kinds) {
    const auto ia = a.by_kind.find(kind);
    const auto ib = b.by_kind.find(kind);
    const passes::CollectiveKindTotals ta =
        ia == a.by_kind.end() ? passes::CollectiveKindTotals{} : ia->second;
    const passes::CollectiveKindTotals tb =
        ib == b.by_kind.end() ? passes::CollectiveKindTotals{} : ib->second;
    diffs.push_back({kind,
                     {ta.count, tb.count},
                     {ta.executions, tb.executions},
                     {ta.wire_bytes_per_device, tb.wire_bytes_per_device}});
  }
  return diffs;
}

std::vector<RngGroupDiff> DiffRngSites(const passes::RngSiteResult& a,
                                       const passes::RngSiteResult& b) {
  // Keyed by the mode's name: the groups print in its alphabetical order.
  std::map<std::pair<std::string, std::string>, RngGroupDiff> groups;
  for (const passes::RngSite& site : a.sites) {
    RngGroupDiff& g = groups[{std::string(passes::SiteModeName(site.mode)),
                              std::string(passes::SiteKindName(site.kind))}];
    ++g.sites.a;
    g.materialized_bytes.a = ir::SaturatingAdd(g.materialized_bytes.a, site.materialized_bytes);
  }
  for (const passes::RngSite& site : b.sites) {
    RngGroupDiff& g = groups[{std::string(passes::SiteModeName(site.mode)),
                              std::string(passes::SiteKindName(site.kind))}];
    ++g.sites.b;
    g.materialized_bytes.b = ir::SaturatingAdd(g.materialized_bytes.b, site.materialized_bytes);
  }
  std::vector<RngGroupDiff> diffs;
  for (auto& [key, group] : groups) {
    group.mode = key.first;
    group.kind = key.second;
    diffs.push_back(std::move(group));
  }
  return diffs;
}

// Findings of `from` whose (kind, op_name) `other` lacks.
std::vector<passes::RngFinding> FindingsOnlyIn(const passes::RngSiteResult& from,
                                               const passes::RngSiteResult& other) {
  std::set<std::pair<passes::FindingKind, std::string>> known;
  for (const passes::RngFinding& f : other.findings) known.insert({f.kind, f.op_name});
  std::vector<passes::RngFinding> only;
  for (const passes::RngFinding& f : from.findings) {
    if (!known.count({f.kind, f.op_name})) only.push_back(f);
  }
  return only;
}

}  // namespace

int64_t Delta::Change() const { return ir::SaturatingAdd(b, a == INT64_MIN ? INT64_MAX : -a); }

std::optional<double> Delta::ChangePct() const {
  if (a == 0) return b == 0 ? std::optional<double>(0.0) : std::nullopt;
  return (static_cast<double>(b) - static_cast<double>(a)) * 100.0 / static_cast<double>(a);
}

ModuleDiff DiffModules(const ModuleReport& a, const ModuleReport& b, const DiffOptions& options) {
  const passes::PeakMemoryResult& ma = a.memory.prediction;
  const passes::PeakMemoryResult& mb = b.memory.prediction;
  ModuleDiff diff;
  diff.peak_bytes = {ma.peak_bytes, mb.peak_bytes};
  diff.temp_bytes = {ma.temp_bytes, mb.temp_bytes};
  diff.argument_bytes = {ma.argument_bytes, mb.argument_bytes};
  diff.output_bytes = {ma.output_bytes, mb.output_bytes};
  diff.alias_bytes = {ma.alias_bytes, mb.alias_bytes};
  diff.live = DiffLive(ma, mb, options.top);
  diff.collectives = DiffCollectives(a.collectives, b.collectives);
  diff.wire_bytes_per_device = {a.collectives.total_wire_bytes_per_device,
                                b.collectives.total_wire_bytes_per_device};
  diff.rng = DiffRngSites(a.rng, b.rng);
  diff.rng_sites = {a.rng.totals.sites, b.rng.totals.sites};
  diff.rng_materialized_bytes = {a.rng.totals.materialized_bytes, b.rng.totals.materialized_bytes};
  diff.rng_wire_bytes_per_device = {a.rng.totals.wire_bytes_per_device,
                                    b.rng.totals.wire_bytes_per_device};
  diff.findings_added = FindingsOnlyIn(b.rng, a.rng);
  diff.findings_removed = FindingsOnlyIn(a.rng, b.rng);
  return diff;
}

}  // namespace spmdsim::analyzer
