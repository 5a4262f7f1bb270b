#include "analyzer/model/oom_rng.h"

#include <fmt/format.h>

#include <map>

#include "analyzer/emit/human_units.h"
#include "ir/attribute_parsers.h"
#include "ir/checked_math.h"
#include "passes/memory/remat_detection.h"
#include "passes/rng/rng_site_analysis.h"
#include "passes/rng/rng_whatif.h"

namespace spmdsim::analyzer {
namespace {

using ir::SaturatingAdd;
using ir::SaturatingMul;

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

std::optional<ir::Shape> ShapeOf(const OomBuffer& b) {
  if (b.shape.empty()) return std::nullopt;
  return ir::ParseShape(b.shape);
}

void Classify(OomBuffer& b) {
  const std::string_view op_name = b.op_name;
  const size_t slash = op_name.rfind('/');
  const std::string_view last =
      slash == std::string_view::npos ? op_name : op_name.substr(slash + 1);
  const std::optional<ir::Shape> shape = ShapeOf(b);
  if (!shape || !shape->IsArray()) return;
  const ir::PrimitiveType type = shape->element_type();
  const bool unsigned_bits = type == ir::PrimitiveType::kU8 || type == ir::PrimitiveType::kU16 ||
                             type == ir::PrimitiveType::kU32 || type == ir::PrimitiveType::kU64;
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

// "Buffer 2 (op_name ...)" or "" when the listing shows no remat.
std::string ListingRematEvidence(const OomReport& report) {
  for (const OomBuffer& b : report.buffers) {
    if (passes::OpNameIsRematerialized(b.op_name)) {
      return fmt::format("jax.checkpoint: Buffer {} op_name \"{}\"", b.number, b.op_name);
    }
  }
  for (const OomBuffer& b : report.buffers) {
    if (passes::InstructionNameIsRematerialized(b.instruction)) {
      return fmt::format("XLA rematerialization: Buffer {} is {}", b.number, b.instruction);
    }
  }
  return {};
}

void FindSites(OomReport& report) {
  std::map<std::string, size_t> site_index;
  for (const OomBuffer& b : report.buffers) {
    if (!b.random) continue;
    ++report.random_buffers;
    report.random_bytes = SaturatingAdd(report.random_bytes, b.size_bytes);
    const auto [it, inserted] = site_index.emplace(b.site, report.sites.size());
    if (inserted) {
      OomSite site;
      site.site = b.site;
      site.phase = b.phase;
      report.sites.push_back(std::move(site));
    }
    OomSite& site = report.sites[it->second];
    ++site.buffers;
    site.bytes = SaturatingAdd(site.bytes, b.size_bytes);
    if (b.size_bytes > site.largest || site.shape.empty()) {
      site.largest = std::max(site.largest, b.size_bytes);
      site.shape = b.shape;
      const std::optional<ir::Shape> shape = ShapeOf(b);
      site.local_elements = shape ? shape->ElementCount() : 0;
    }
  }
}

// The site's geometry for passes/rng/rng_whatif.h: the listed tensor is one device's.
passes::RngGeometry Geometry(const OomSite& site, int64_t devices, passes::ConcatLowering concat) {
  passes::RngGeometry g;
  g.concat = concat;
  g.local_elements = site.local_elements;
  g.devices = devices;
  g.global_elements = SaturatingMul(site.local_elements, devices);
  if (const std::optional<ir::Shape> shape = ir::ParseShape(site.shape)) {
    if (shape->IsArray()) g.word_bytes = ir::PrimitiveTypeByteWidth(shape->element_type());
  }
  g.consumers = 1;  // the listing does not say; replicated's concatenation counted once
  return g;
}

// "3 sites" / "1 site".
std::string Sites(size_t n) { return fmt::format("{} site{}", n, n == 1 ? "" : "s"); }

std::string Verdict(int64_t saving) {
  return saving >= 0 ? "saves " + HumanBytes(saving) : "costs " + HumanBytes(-saving) + " more";
}

// A lowering that would materialize `bytes` instead of the `listed` random bytes: what it saves,
// and whether that is a saving at all.
void Materializes(OomSaving& saving, int64_t bytes, int64_t listed) {
  saving.materialized_bytes = bytes;
  saving.saving_bytes = listed - bytes;
  saving.recommended = *saving.saving_bytes > 0;
}

}  // namespace

void ClassifyOomRandomBuffers(OomReport& report) {
  for (OomBuffer& b : report.buffers) Classify(b);
}

void AddOomRngWhatIf(OomReport& report, const OomOptions& options) {
  report.devices = options.devices > 0 ? options.devices : 0;
  report.devices_from = report.devices > 0 ? options.devices_from : "";
  report.remat_evidence = ListingRematEvidence(report);
  if (report.remat_evidence.empty() && options.dump_rematerialized) {
    report.remat_evidence = "the dump: " + options.dump_remat_evidence;
  }
  report.rematerialized = !report.remat_evidence.empty();
  report.random_buffers = 0;
  report.random_bytes = 0;
  report.sites.clear();
  report.savings.clear();
  FindSites(report);
  if (report.random_buffers == 0) return;

  int64_t forward_random = 0;
  for (const OomBuffer& b : report.buffers) {
    if (b.random && b.phase == passes::SitePhase::kForward)
      forward_random = SaturatingAdd(forward_random, b.size_bytes);
  }
  const bool known = report.devices > 0;
  int64_t rbg = 0;      // the generator replicated: the global bits on every device
  int64_t rbg_low = 0;  // the generator sharded like its tensor (passes/rng/rng_whatif.h)
  int64_t replicated = 0;
  int64_t replicated_wire = 0;
  int64_t local_bits = 0;  // one device's share of the sites' bits
  for (OomSite& site : report.sites) {
    local_bits = SaturatingAdd(local_bits, site.largest);
    if (!known) continue;
    const passes::RngGeometry geometry = Geometry(site, report.devices, options.concat);
    site.global_elements = geometry.global_elements;
    site.whatif = passes::PredictRngCosts(geometry);
    rbg = SaturatingAdd(rbg, passes::HighMemoryBytes(site.whatif->rbg));
    rbg_low = SaturatingAdd(rbg_low, site.whatif->rbg.memory_bytes);
    replicated = SaturatingAdd(replicated, site.whatif->replicated.memory_bytes);
    replicated_wire = SaturatingAdd(replicated_wire, site.whatif->replicated.wire_bytes_per_device);
  }
  const std::string these = Sites(report.sites.size());
  const std::string listed = HumanBytes(report.random_bytes);
  const std::string how_many = fmt::format(
      "needs the device count (pass --devices N or --dump DIR): it makes global bits on every "
      "device, {} x the devices for {}",
      HumanBytes(local_bits), these);

  // jax_threefry_gpu_kernel_lowering exists on XLA:GPU alone (JAX lowers threefry to its CUDA
  // custom call there); XLA:TPU always lowers the hash to HLO, so a TPU message gets no such fix.
  const bool tpu = report.format == "tpu-hbm" || report.capacity.memory_space == "hbm" ||
                   report.message.find("TPU") != std::string::npos;
  if (!tpu) {
    OomSaving fused{"fused", report.random_bytes, 0, report.random_bytes > 0,
                    "a fused lowering (JAX without the GPU threefry kernel lowering, "
                    "jax_threefry_gpu_kernel_lowering=False, lets XLA fuse counters, hash and "
                    "dropout) materializes none of these random buffers"};
    report.savings.push_back(std::move(fused));
  }

  OomSaving r{"rbg", std::nullopt, std::nullopt, false, ""};
  if (known) {
    Materializes(r, rbg, report.random_bytes);
    bool same = true;
    for (const OomSite& site : report.sites) {
      same &= passes::HighMemoryBytes(site.whatif->rbg) ==
              passes::HighMemoryBytes(report.sites.front().whatif->rbg);
    }
    const std::string each =
        same && report.sites.size() > 1
            ? HumanBytes(passes::HighMemoryBytes(report.sites.front().whatif->rbg)) + " each, "
            : "";
    r.explanation = fmt::format(
        "jax_default_prng_impl=rbg: where XLA replicates rng-bit-generator, each of the {} "
        "devices makes the global bits: {} for {} ({}the rbg figure of `rng sites`) against {} "
        "listed: {}{} (bits not guaranteed the same across backends or shardings)",
        report.devices, HumanBytes(rbg), these, each, listed, Verdict(*r.saving_bytes),
        rbg_low < rbg ? fmt::format("; {} where its sharding propagation shards the generator "
                                    "like its tensor (each device makes its piece), which the "
                                    "listing does not show",
                                    HumanBytes(rbg_low))
                      : std::string());
  } else {
    r.explanation =
        "jax_default_prng_impl=rbg: where XLA replicates rng-bit-generator, the figure " + how_many;
  }
  report.savings.push_back(std::move(r));

  OomSaving remat{"remat", forward_random, std::nullopt, forward_random > 0, ""};
  if (report.rematerialized) {
    remat.saving_bytes = 0;
    remat.recommended = false;
    remat.explanation = fmt::format(
        "already rematerialized ({}): more remat frees nothing; forward random bits still held at "
        "the peak are ones XLA computes from the key before the backward reads them (`spmdsim "
        "rng sites DUMP`: the rng-key-residual findings and the remat what-if)",
        report.remat_evidence);
  } else {
    remat.explanation =
        "recompute the bits from the key in the backward (checkpoint policy that saves no "
        "random values, e.g. jax.checkpoint_policies.nothing_saveable around the dropout): the "
        "forward (jvp) random buffers held at the peak are freed";
  }
  report.savings.push_back(std::move(remat));

  OomSaving rep{"replicated", std::nullopt, std::nullopt, false, ""};
  if (known) {
    Materializes(rep, replicated, report.random_bytes);
    rep.explanation = fmt::format(
        "jax_threefry_partitionable=False: every device hashes its share of the whole global "
        "array and all-gathers it: {} materialized and {} sent per device for {}: {}",
        HumanBytes(replicated), HumanBytes(replicated_wire), these, Verdict(*rep.saving_bytes));
  } else {
    rep.explanation =
        "jax_threefry_partitionable=False: every device hashes the whole global "
        "array and exchanges it; " +
        how_many;
  }
  report.savings.push_back(std::move(rep));
}

}  // namespace spmdsim::analyzer
