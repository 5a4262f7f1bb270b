#include "analyzer/model/peak_groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "analyzer/emit/human_units.h"
#include "analyzer/model/random_bit_values.h"
#include "ir/checked_math.h"
#include "ir/opcode.h"

namespace spmdsim::analyzer {

std::string BufferCategory(const passes::LiveBuffer& b, const RandomBitValues& random) {
  if (random.Contains(b.instruction + b.index)) return "random bits";
  if (passes::IsArgumentKind(b.kind)) return "parameters";
  if (b.kind == passes::LiveBufferKind::kOutput) return "outputs";
  // XLA's label is the opcode's name ("all-gather-start"); send/recv buffers count too.
  if (ir::CollectiveKindOf(ir::OpcodeFromName(b.opcode)) != ir::CollectiveKind::kNone) {
    return "collective buffers";
  }
  return "other temp";
}

namespace {

using GroupKey = std::tuple<std::string, std::string, std::string>;  // category, op_name, shape

GroupKey KeyOf(const PeakGroup& g) { return {g.category, g.op_name, g.shape}; }

}  // namespace

PeakComposition ComposePeak(const passes::PeakMemoryResult& memory,
                            const passes::RngSiteResult& rng) {
  const RandomBitValues random(rng);
  PeakComposition out;
  std::map<GroupKey, PeakGroup> groups;
  std::map<GroupKey, int64_t> largest;
  for (const passes::LiveBuffer& b : memory.live_at_peak) {
    const std::string category = BufferCategory(b, random);
    out.bytes_by_category[category] =
        ir::SaturatingAdd(out.bytes_by_category[category], b.size_bytes);
    PeakGroup& g = groups[{category, b.op_name, b.shape}];
    g.category = category;
    g.op_name = b.op_name;
    g.shape = b.shape;
    ++g.buffers;
    g.bytes = ir::SaturatingAdd(g.bytes, b.size_bytes);
    int64_t& most = largest[{category, b.op_name, b.shape}];
    if (!b.source.empty() && (g.source.empty() || b.size_bytes > most)) {
      g.source = b.source;
      most = b.size_bytes;
    }
  }
  for (auto& [key, g] : groups) out.groups.push_back(std::move(g));
  std::stable_sort(out.groups.begin(), out.groups.end(),
                   [](const PeakGroup& a, const PeakGroup& b) { return a.bytes > b.bytes; });
  if (out.groups.size() > kPeakGroupsKept) out.groups.resize(kPeakGroupsKept);
  return out;
}

std::string PeakGrowth::Text() const {
  const std::string op = group.op_name.empty() ? "" : ", " + group.op_name;
  const std::string where = group.source.empty() ? "" : " at " + group.source;
  if (new_buffers > 0) {
    return fmt::format("{} {}: {} new {} ({}{}){}", category, HumanBytesDelta(category_change),
                       new_buffers, group.shape, HumanBytesDelta(change_bytes), op, where);
  }
  return fmt::format("{} {}: {} x {} grew {}{}{}", category, HumanBytesDelta(category_change),
                     group.buffers, group.shape, HumanBytesDelta(change_bytes),
                     group.op_name.empty() ? "" : " (" + group.op_name + ")", where);
}

std::vector<PeakGrowth> PeakGrowthOf(const PeakComposition& before, const PeakComposition& now,
                                     size_t limit) {
  std::map<GroupKey, const PeakGroup*> old_groups;
  for (const PeakGroup& g : before.groups) old_groups[KeyOf(g)] = &g;
  std::vector<PeakGrowth> out;
  for (const PeakGroup& g : now.groups) {
    const auto it = old_groups.find(KeyOf(g));
    const int64_t old_bytes = it == old_groups.end() ? 0 : it->second->bytes;
    const int64_t old_buffers = it == old_groups.end() ? 0 : it->second->buffers;
    const int64_t change = ir::SaturatingSub(g.bytes, old_bytes);
    if (change <= 0) continue;
    PeakGrowth growth;
    growth.category = g.category;
    const auto was = before.bytes_by_category.find(g.category);
    const auto is = now.bytes_by_category.find(g.category);
    growth.category_change =
        ir::SaturatingSub(is == now.bytes_by_category.end() ? 0 : is->second,
                          was == before.bytes_by_category.end() ? 0 : was->second);
    growth.group = g;
    growth.change_bytes = change;
    growth.new_buffers = std::max<int64_t>(0, g.buffers - old_buffers);
    out.push_back(std::move(growth));
  }
  std::stable_sort(out.begin(), out.end(), [](const PeakGrowth& a, const PeakGrowth& b) {
    return a.change_bytes > b.change_bytes;
  });
  if (out.size() > limit) out.resize(limit);
  return out;
}

}  // namespace spmdsim::analyzer
