#include "analyzer/views/rng_sites_view.h"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzer/emit/human_units.h"
#include "analyzer/model/finding_scope.h"
#include "analyzer/views/module_heading.h"

namespace spmdsim::analyzer {
namespace {

using passes::RngCost;
using passes::RngFinding;
using passes::RngSite;
using passes::RngSiteResult;
using passes::RngWhatIf;

constexpr const char* kModes[] = {"replicated", "partitionable", "rbg", "fused"};

nlohmann::ordered_json CostJson(const RngCost& cost, const char* mode) {
  nlohmann::ordered_json j;
  j["memory_bytes"] = cost.memory_bytes;
  j["wire_bytes_per_device"] = cost.wire_bytes_per_device;
  if (cost.bounded) {
    const passes::RngBoundsBasis basis = passes::BoundsBasisOf(mode);
    j["bounds"] = {{"memory_bytes_low", cost.memory_bytes},
                   {"low", basis.low},
                   {"memory_bytes_high", cost.memory_high_bytes},
                   {"high", basis.high},
                   {"decided_by", basis.decided_by}};
  }
  return j;
}

std::string ShapeString(const RngSite& site) {
  std::string out = site.dtype + "[";
  for (size_t i = 0; i < site.shape.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(site.shape[i]);
  }
  return out + "]";
}

// A consumer with its instructions' numbers ".12" written `numbers` ("" or ".N"): consumers
// that differ only in those, "... in loop_add_fusion (forward)" and "... in loop_add_fusion.12
// (forward)", are of one kind.
std::string WithoutNumbers(std::string_view consumer, std::string_view numbers) {
  std::string out;
  out.reserve(consumer.size());
  for (size_t i = 0; i < consumer.size(); ++i) {
    const bool numbered = consumer[i] == '.' && i > 0 && i + 1 < consumer.size() &&
                          std::isalnum(static_cast<unsigned char>(consumer[i - 1])) &&
                          std::isdigit(static_cast<unsigned char>(consumer[i + 1]));
    if (!numbered) {
      out += consumer[i];
      continue;
    }
    out += numbers;
    while (i + 1 < consumer.size() && std::isdigit(static_cast<unsigned char>(consumer[i + 1])))
      ++i;
  }
  return out;
}

// The consumers, those of one kind folded into "K x KIND" in order of first appearance, at most
// kConsumerKindsShown kinds and a count of the rest (JSON lists every consumer).
std::string FoldedConsumers(const std::vector<std::string>& consumers) {
  constexpr size_t kConsumerKindsShown = 6;
  struct Kind {
    std::string shown;  // the first consumer, its numbers ".N" once the kind has several
    size_t count = 0;
  };
  std::vector<Kind> kinds;
  std::map<std::string, size_t> index;
  for (const std::string& c : consumers) {
    const auto [it, added] = index.emplace(WithoutNumbers(c, ""), kinds.size());
    if (added) kinds.push_back({c, 0});
    Kind& kind = kinds[it->second];
    if (++kind.count == 2 || (kind.count > 2 && kind.shown == it->first)) {
      kind.shown = WithoutNumbers(c, ".N");
    }
  }
  std::string out;
  for (size_t k = 0; k < kinds.size() && k < kConsumerKindsShown; ++k) {
    if (k > 0) out += "; ";
    out += kinds[k].count == 1 ? kinds[k].shown
                               : fmt::format("{} x {}", kinds[k].count, kinds[k].shown);
  }
  if (kinds.size() > kConsumerKindsShown) {
    size_t rest = 0;
    for (size_t k = kConsumerKindsShown; k < kinds.size(); ++k) rest += kinds[k].count;
    out += fmt::format("; ... and {} more of {} other kinds (--format json lists all)", rest,
                       kinds.size() - kConsumerKindsShown);
  }
  return out;
}

}  // namespace

nlohmann::ordered_json RngWhatIfJson(const RngWhatIf& whatif) {
  nlohmann::ordered_json j;
  for (const char* mode : kModes) j[mode] = CostJson(*passes::CostOf(whatif, mode), mode);
  return j;
}

std::string RngWhatIfText(const RngWhatIf& whatif) {
  std::string out;
  for (const char* mode : kModes) {
    const RngCost& cost = *passes::CostOf(whatif, mode);
    if (!out.empty()) out += " | ";
    out += cost.bounded ? fmt::format("{} {} to {}", mode, HumanBytes(cost.memory_bytes),
                                      HumanBytes(cost.memory_high_bytes))
                        : fmt::format("{} {}", mode, HumanBytes(cost.memory_bytes));
    if (cost.wire_bytes_per_device > 0) {
      out += fmt::format(" + {} sent", HumanBytes(cost.wire_bytes_per_device));
    }
  }
  return out;
}

std::string NoiseText(const passes::RngNoise& noise) {
  const auto sites = [](int64_t n) { return fmt::format("{} bits site{}", n, n == 1 ? "" : "s"); };
  return fmt::format(
      "{} with a key every device shares (tied to the global tensor: the same masks on any "
      "mesh), {} with a key from the device's position (independent per device: they change "
      "with the mesh), {} rbg (not guaranteed stable across backends or shardings)",
      sites(noise.shared_key_sites), noise.per_device_key_sites, noise.rbg_sites);
}

nlohmann::ordered_json RngSitesToJson(const RngSiteResult& result) {
  nlohmann::ordered_json j;
  j["num_partitions"] = result.num_partitions;
  j["partitioned"] = result.partitioned;
  nlohmann::ordered_json sites = nlohmann::ordered_json::array();
  for (const RngSite& site : result.sites) {
    nlohmann::ordered_json s;
    s["name"] = site.name;
    s["computation"] = site.computation;
    s["kind"] = passes::SiteKindName(site.kind);
    s["mode"] = passes::SiteModeName(site.mode);
    s["algorithm"] = site.algorithm;
    s["purpose"] = passes::SitePurposeName(site.purpose);
    s["draws"] = site.draws;
    s["phase"] = passes::SitePhaseName(site.phase);
    s["shape"] = site.shape;
    s["dtype"] = site.dtype;
    s["local_elements"] = site.local_elements;
    s["global_elements"] = site.global_elements;
    s["shards"] = site.shards;
    s["shards_known"] = site.shards_known;
    s["shards_from_unpartitioned"] = site.shards_from_unpartitioned;
    s["op_name"] = site.op_name;
    s["source"] = site.source;
    s["call_stack"] = site.call_stack;
    s["consumers"] = site.consumers;
    s["materialized_bytes"] = site.materialized_bytes;
    s["counter_bytes"] = site.counter_bytes;
    s["bits_bytes"] = site.bits_bytes;
    nlohmann::ordered_json buffers = nlohmann::ordered_json::array();
    for (const passes::RngSiteBuffer& b : site.buffers) {
      buffers.push_back({{"value", b.value},
                         {"opcode", b.opcode},
                         {"shape", b.shape},
                         {"role", passes::SiteBufferRoleName(b.role)},
                         {"bytes", b.bytes},
                         {"op_name", b.op_name},
                         {"values", b.values},
                         {"held_across", b.held_across}});
    }
    s["buffers"] = std::move(buffers);
    nlohmann::ordered_json collectives = nlohmann::ordered_json::array();
    for (const passes::RngSiteCollective& c : site.collectives) {
      collectives.push_back({{"instruction", c.instruction},
                             {"kind", ir::CollectiveKindName(c.kind)},
                             {"operands", c.operands},
                             {"operand_count", c.operand_count},
                             {"bytes", c.bytes},
                             {"wire_bytes_per_device", c.wire_bytes_per_device}});
    }
    s["collectives"] = std::move(collectives);
    s["wire_bytes_per_device"] = site.wire_bytes_per_device;
    s["key_depends_on_partition"] = site.key_depends_on_partition;
    s["whatif"] = RngWhatIfJson(site.whatif);
    sites.push_back(std::move(s));
  }
  j["sites"] = std::move(sites);
  nlohmann::ordered_json totals;
  totals["sites"] = result.totals.sites;
  totals["bits_sites"] = result.totals.bits_sites;
  totals["materialized_bytes"] = result.totals.materialized_bytes;
  totals["wire_bytes_per_device"] = result.totals.wire_bytes_per_device;
  totals["whatif"] = RngWhatIfJson(result.totals.whatif);
  const passes::RngNoise& noise = result.totals.noise;
  totals["noise"] = {{"shared_key_sites", noise.shared_key_sites},
                     {"per_device_key_sites", noise.per_device_key_sites},
                     {"rbg_sites", noise.rbg_sites}};
  j["totals"] = std::move(totals);
  nlohmann::ordered_json findings = nlohmann::ordered_json::array();
  for (const RngFinding& f : result.findings) {
    findings.push_back({{"kind", passes::FindingName(f.kind)},
                        {"severity", passes::SeverityName(f.severity)},
                        {"bytes", f.bytes},
                        {"saving_bytes", f.saving_bytes},
                        {"site", f.site},
                        {"op_name", f.op_name},
                        {"source", f.source},
                        {"message", f.message},
                        {"values", f.values}});
  }
  j["findings"] = std::move(findings);
  j["notes"] = result.notes;
  j["backward_start"] = result.backward_start;
  if (result.remat.ran) {
    j["remat_whatif"] = {{"peak_bytes", result.remat.peak_bytes},
                         {"peak_bytes_recomputed", result.remat.peak_bytes_recomputed},
                         {"saving_bytes", result.remat.saving_bytes},
                         {"buffers", result.remat.buffers},
                         {"peak_instruction_recomputed", result.remat.peak_instruction_recomputed}};
  } else {
    j["remat_whatif"] = nullptr;
  }
  return j;
}

std::string RematWhatIfText(const passes::RngRematWhatIf& remat) {
  if (!remat.ran) return "";
  if (remat.buffers == 0) {
    return "remat what-if: none of the held buffers is a temporary of the device-memory heap "
           "(XLA placed them in allocations of their own, or in another memory space such as a "
           "TPU's VMEM), so recomputing them leaves the peak as it is";
  }
  return fmt::format(
      "remat what-if: recomputing the {} random-bit buffers held across the forward/backward "
      "boundary where the backward reads them: peak {} -> {} (saves {})",
      remat.buffers, HumanBytes(remat.peak_bytes), HumanBytes(remat.peak_bytes_recomputed),
      HumanBytes(remat.saving_bytes));
}

void PrintRngSitesText(const dump::ModuleInput& input, const RngSiteResult& result,
                       const RngSitesViewOptions& options, std::ostream& out) {
  out << ModuleHeading(input.module->name, input.stage, input.path);
  out << fmt::format("  rng sites: {} ({} drawing bits), {} devices\n", result.totals.sites,
                     result.totals.bits_sites, result.num_partitions);
  int number = 0;
  int64_t hidden = 0;
  for (const RngSite& site : result.sites) {
    if (site.purpose != passes::SitePurpose::kBits && !options.show_key_sites) {
      ++hidden;
      continue;
    }
    ++number;
    out << fmt::format("  Site {}: {}  {}, {}, {} {} per device ({} over the mesh, {} shards{})",
                       number, site.name, passes::SiteKindName(site.kind),
                       passes::SiteModeName(site.mode), passes::SitePurposeName(site.purpose),
                       ShapeString(site), site.global_elements, site.shards,
                       site.shards_known ? "" : ", not derived: the offset table is elided");
    if (!site.draws.empty()) out << ", " << site.draws;
    out << ", " << passes::SitePhaseName(site.phase) << "\n";
    out << fmt::format("    Operator: op_name=\"{}\"{}\n", site.op_name,
                       site.source.empty() ? "" : " source=" + site.source);
    if (!site.algorithm.empty()) out << "    algorithm: " << site.algorithm << "\n";
    if (!site.consumers.empty())
      out << "    consumers: " << FoldedConsumers(site.consumers) << "\n";
    out << fmt::format("    materializes {} ({} buffers; counters and loop state {}, bits {})\n",
                       HumanBytes(site.materialized_bytes), site.buffers.size(),
                       HumanBytes(site.counter_bytes), HumanBytes(site.bits_bytes));
    int64_t listed = 0;
    for (const passes::RngSiteBuffer& b : site.buffers) {
      if (listed >= options.buffers_per_site) break;
      ++listed;
      out << fmt::format("      Buffer {}:\n", listed);
      out << fmt::format("        Size: {}\n", HumanBytes(b.bytes));
      out << fmt::format("        Operator: op_name=\"{}\" ({})\n", b.op_name, b.value);
      out << fmt::format("        XLA Label: {} ({})\n", b.opcode,
                         passes::SiteBufferRoleName(b.role));
      out << fmt::format("        Shape: {}\n", b.shape);
    }
    if (static_cast<int64_t>(site.buffers.size()) > listed) {
      out << fmt::format("      ... {} more\n", site.buffers.size() - listed);
    }
    if (!site.collectives.empty()) {
      out << fmt::format("    collectives caused: {}, {} per device per step:",
                         site.collectives.size(), HumanBytes(site.wire_bytes_per_device));
      for (const passes::RngSiteCollective& c : site.collectives) {
        const std::string part =
            c.operands < c.operand_count
                ? fmt::format(", {} of its {} operands", c.operands, c.operand_count)
                : "";
        out << fmt::format(" {} {} ({} sent{});", ir::CollectiveKindName(c.kind), c.instruction,
                           HumanBytes(c.wire_bytes_per_device), part);
      }
      out << "\n";
    }
    if (site.key_depends_on_partition) {
      out << "    key depends on " << site.key_dependency << " (per-device noise)\n";
    }
    if (site.purpose == passes::SitePurpose::kBits)
      out << "    what-if per device: " << RngWhatIfText(site.whatif) << "\n";
  }
  if (hidden > 0) {
    out << fmt::format(
        "  ({} key-derivation sites (split, fold_in) not listed; --all lists them)\n", hidden);
  }
  out << fmt::format("  total: materialized {}, sent {} per device per step\n",
                     HumanBytes(result.totals.materialized_bytes),
                     HumanBytes(result.totals.wire_bytes_per_device));
  out << "  what-if total per device: " << RngWhatIfText(result.totals.whatif) << "\n";
  if (result.totals.bits_sites > 0) out << "  noise: " << NoiseText(result.totals.noise) << "\n";
  // The first finding of each kind with its whole message, the others a line each.
  std::set<passes::FindingKind> explained;
  for (const RngFinding& f : result.findings) {
    const std::string scope = FindingScope(f.op_name);
    out << fmt::format("  finding {} ({}){} at {}", passes::FindingName(f.kind),
                       passes::SeverityName(f.severity), scope.empty() ? "" : " in " + scope,
                       f.site);
    if (!f.source.empty()) out << " (" << f.source << ")";
    if (f.bytes > 0) out << fmt::format(": {}", HumanBytes(f.bytes));
    if (f.kind == passes::FindingKind::kRngKeyResidual) {
      out << fmt::format(" held, {} of it live at the peak", HumanBytes(f.saving_bytes));
    } else if (f.bytes > 0 && f.saving_bytes > 0) {
      out << fmt::format(", saves {}", HumanBytes(f.saving_bytes));
    }
    out << "\n";
    if (explained.insert(f.kind).second) out << "    " << f.message << "\n";
  }
  if (result.remat.ran) out << "  " << RematWhatIfText(result.remat) << "\n";
  for (const std::string& note : result.notes) out << "  note: " << note << "\n";
}

}  // namespace spmdsim::analyzer
