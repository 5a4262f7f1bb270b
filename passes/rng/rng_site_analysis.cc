// The RNG site analysis: runs the finder's steps (rng_site_recognition.cc, rng_site_membership.cc,
// rng_site_buffers.cc) and turns each site into findings.
#include "passes/rng/rng_site_analysis.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "ir/attribute_parsers.h"
#include "ir/c_unescape.h"
#include "ir/checked_math.h"
#include "ir/device_count.h"
#include "passes/memory/buffer_alias_analysis.h"
#include "passes/memory/buffer_dataflow_analysis.h"
#include "passes/rng/philox_expansion.h"
#include "passes/rng/rng_site_finder.h"
#include "passes/rng/threefry_hashes.h"
#include "passes/sharding/partition_offsets.h"

namespace spmdsim::passes {
namespace rng_internal {
namespace {

// The element count of a buffer's shape as RngSiteBuffer prints it ("pred[4,16,64]"); -1 where
// it does not parse as an array.
int64_t ElementsOf(const std::string& shape) {
  const std::optional<ir::Shape> parsed = ir::ParseShape(shape);
  return parsed && parsed->IsArray() ? parsed->ElementCount() : -1;
}

// Whether `computation` runs inside a while loop's body or condition (through any calls): a
// computation that several calls share runs more than once per step without being a loop.
bool InLoopBody(const HloComputation* computation) {
  std::vector<const HloComputation*> pending{computation};
  std::set<const HloComputation*> seen;
  while (!pending.empty()) {
    const HloComputation* at = pending.back();
    pending.pop_back();
    if (at == nullptr || !seen.insert(at).second) continue;
    for (const HloInstruction* caller : at->callers) {
      if (caller->opcode == Opcode::kWhile) return true;
      pending.push_back(caller->parent);
    }
  }
  return false;
}

}  // namespace

void RngSiteFinder::Findings(RngSiteResult& result) {
  for (const SiteWork& work : sites_) {
    const RngSite& site = work.site;
    if (site.key_depends_on_partition && site.purpose == SitePurpose::kBits) {
      RngFinding f;
      f.kind = FindingKind::kRngDependsOnPartition;
      f.severity = InfoOf(f.kind).severity;
      f.site = site.name;
      f.op_name = site.op_name;
      f.source = site.source;
      f.message = "the key of " + site.name + " is derived from " + site.key_dependency +
                  " (the device's position in the mesh, e.g. fold_in(key, axis_index) inside "
                  "shard_map): each device draws its own independent noise, so the bits change "
                  "with the number of devices and the batch split; a key shared by all devices "
                  "(partitionable or replicated threefry) gives the same bits on any mesh";
      result.findings.push_back(std::move(f));
    }
    std::string held_values;
    RngFinding residual;
    for (const RngSiteBuffer& buffer : site.buffers) {
      // A key held into the backward pass is what remat needs; only random bits are a residual.
      if (!buffer.held_across || site.purpose != SitePurpose::kBits) continue;
      residual.bytes = SaturatingAdd(residual.bytes, buffer.bytes);
      residual.values.push_back(buffer.value);
      held_values += (held_values.empty() ? "" : ", ") + buffer.value + " " + buffer.shape;
    }
    if (!residual.values.empty()) {
      RngFinding& f = residual;
      f.kind = FindingKind::kRngKeyResidual;
      f.severity = InfoOf(f.kind).severity;
      // Until the memory what-if (rng_remat_saving.h) says how much of it is live at the peak.
      f.saving_bytes = f.bytes;
      f.site = site.name;
      f.op_name = site.op_name;
      f.source = site.source;
      f.message =
          "random-number buffers (counters or bits, from the key and the element index alone) "
          "computed before the backward pass starts (" +
          held_values +
          ") stay live until the backward pass reads them; recomputing them from the key "
          "where the backward reads them (remat of the dropout that XLA does not hoist, "
          "or a checkpoint policy that saves no random values) frees them across the "
          "forward/backward boundary";
      result.findings.push_back(std::move(f));
    }
    if (site.mode == SiteMode::kReplicated && site.wire_bytes_per_device > 0) {
      RngFinding f;
      f.kind = FindingKind::kRngReplicatedCollectives;
      f.severity = InfoOf(f.kind).severity;
      f.bytes = site.wire_bytes_per_device;
      f.saving_bytes =
          ir::SaturatingAdd(site.materialized_bytes, -site.whatif.partitionable.memory_bytes);
      f.site = site.name;
      f.op_name = site.op_name;
      f.source = site.source;
      f.message = "replicated threefry (jax_threefry_partitionable=False): " +
                  std::to_string(site.collectives.size()) + " collectives send " +
                  std::to_string(site.wire_bytes_per_device) +
                  " bytes per device per step for these bits; partitionable mode sends none";
      result.findings.push_back(std::move(f));
    }
  }
}

RngGeometry RngSiteFinder::GeometryOf(const SiteWork& work) const {
  const RngSite& site = work.site;
  RngGeometry geometry;
  geometry.local_elements = site.local_elements;
  geometry.global_elements = site.global_elements;
  geometry.devices = site.shards;
  geometry.hash_shards = work.hash_shards;
  geometry.consumers = site.consumer_count;
  geometry.counters_hoisted = work.counters_hoisted;
  geometry.unrolled = site.kind == SiteKind::kThreefryExpanded;
  geometry.hash_call = site.kind == SiteKind::kThreefryCustomCall;
  geometry.tpu_exchange = options_.platform == Platform::kTpu && geometry.unrolled;
  // Inner dimensions of extent 1 ([B, 1, D], a mask broadcast over the length) lay nothing out:
  // XLA reshapes them away as bitcasts, and the lowering sees the tensor without them. The
  // leading dimension is the device's rows, whatever their number.
  for (size_t d = 0; d < site.shape.size(); ++d) {
    if (d == 0 || site.shape[d] != 1) geometry.local_shape.push_back(site.shape[d]);
  }
  geometry.concat = options_.concat;
  geometry.unsplit_on_devices = partitioned_ && site.shards == 1 && site.shards_known;
  return geometry;
}

RngSiteResult RngSiteFinder::Run() {
  RngSiteResult result;
  result.num_partitions = ir::DeviceCount(module_);  // devices: replicas x partitions
  result.partitioned = !IsUnpartitioned(module_, options_.stage);
  partitioned_ = result.partitioned;
  if (!result.partitioned) {
    result.notes.push_back(
        "module not partitioned yet (before optimizations): shapes and bytes are global, not per "
        "device");
  }
  FindAnchors();
  CollectMembers();
  FindBackwardStarts();
  const DataflowAnalysis& dataflow = analyses_.Dataflow();
  for (SiteWork& work : sites_) {
    for (const HloInstruction* key : work.keys) {
      if (const HloInstruction* hit =
              PartitionDependency(dataflow, key, work.site.kind == SiteKind::kRngBitGenerator)) {
        work.site.key_depends_on_partition = true;
        work.site.key_dependency = std::string(hit->name);
        break;
      }
    }
    DescribeShapes(work);
    DescribeConsumers(work);
    DescribeDropoutTensor(work);
  }
  for (size_t s = 0; s < sites_.size(); ++s) {
    SiteWork& work = sites_[s];
    // unsafe_rbg splits its keys with rng-bit-generator itself.
    if (work.site.purpose == SitePurpose::kBits &&
        (IsThreefry(work.site.kind) || work.site.kind == SiteKind::kRngBitGenerator) &&
        FeedsOnlyKeys(work, static_cast<int>(s))) {
      work.site.purpose = SitePurpose::kSplit;
    }
  }
  int64_t elided = 0;
  int64_t recovered = 0;
  for (const SiteWork& work : sites_) {
    if (!work.offsets_elided) continue;
    ++(work.site.shards_from_unpartitioned ? recovered : elided);
  }
  if (elided + recovered > 0) {
    std::string note =
        std::to_string(elided + recovered) +
        " site(s): the dump prints the constant tables XLA offsets their counters with as "
        "\"{...}\" (constants of more than 10 elements are left out unless the compile ran with "
        "--xla_dump_large_constants)";
    if (recovered > 0) {
      note += "; " + std::to_string(recovered) +
              " of them sized from the same draws in the module before optimizations";
    }
    if (elided > 0) {
      note += "; " + std::to_string(elided) +
              " not sized from them: their shard counts and global sizes are not derived";
    }
    result.notes.push_back(std::move(note));
  }
  MeasureBuffers(dataflow, analyses_.Alias(),
                 module_.is_scheduled ? &analyses_.LiveRanges() : nullptr);
  AttachCollectives(dataflow);
  bool fused_sites = false;
  // A site inside a loop (a scanned layer, gradient accumulation) runs once per iteration: its
  // what-if sends that many times per step, as its collectives do, except what XLA hoists out of
  // the loop (the counter exchange, on XLA:CPU).
  const std::unordered_map<const HloComputation*, int64_t>& executions =
      analyses_.Executions().runs;
  // Unknown platform: XLA:CPU's, as the memory rules default to.
  const bool hoisting = HoistsLoopInvariantCollectives(options_.platform.value_or(Platform::kCpu));
  // Masks computed by consumers of replicated sites (below), each counted for one site.
  std::set<const HloInstruction*> reader_masks_counted;
  for (SiteWork& work : sites_) {
    RngSite& site = work.site;
    if (site.purpose == SitePurpose::kBits) {
      const auto runs = executions.find(work.anchor->parent);
      const int64_t runs_per_step = runs != executions.end() ? runs->second : 1;
      work.counters_hoisted = hoisting && InLoopBody(work.anchor->parent);
      const RngGeometry geometry = GeometryOf(work);
      site.whatif = PredictRngCosts(geometry);
      // The dropout's mask is computed from the bits, whichever way they were made: where
      // XLA:GPU keeps it in a buffer of its own (it fuses the hash into the compare and keeps
      // the cheap pred output for the fusions that read it), a lowering fusing the hash keeps
      // it too. XLA:TPU's pred buffers are relayouts of its exchanges, not carried over. A mask
      // is the dropout tensor's, one flag per random element: replicated mode's pred[1] flags
      // (XLA's partitioner comparing the partition id to choose which device's hash piece a
      // device keeps, op_name .../split) exist only because the halves are resharded.
      int64_t masks = 0;
      // A replicated site's consumer whose output is the mask itself (XLA:GPU's
      // loop_compare_fusion in the backward of jax012_gpu8_fsdp_replicated_remat, pred[4096]
      // from the gathered halves, read by the fusions that select with it) is the buffer a
      // lowering fusing the hash into that compare keeps (loop_compare_fusion of the
      // partitionable twin, pred[2,32,64]): counted for the flipped lowerings, once per module.
      int64_t reader_masks = 0;
      if (options_.platform == Platform::kGpu) {
        for (const RngSiteBuffer& buffer : site.buffers) {
          if (buffer.role == SiteBufferRole::kMask &&
              ElementsOf(buffer.shape) == site.local_elements) {
            masks = SaturatingAdd(masks, buffer.bytes);
          }
        }
        if (site.mode == SiteMode::kReplicated && site.kind == SiteKind::kThreefryExpanded) {
          for (const HloInstruction* reader : work.dropout_readers) {
            if (reader->shape.IsArray() && reader->shape.element_type() == PrimitiveType::kPred &&
                reader->shape.get().ElementCount() == site.local_elements &&
                reader_masks_counted.insert(reader).second) {
              reader_masks = SaturatingAdd(
                  reader_masks,
                  PlatformProfile::For(Platform::kGpu).BufferBytes(reader->shape.get()));
            }
          }
        }
      }
      // With the rounds unrolled (JAX's GPU/TPU lowering) XLA fuses a partitionable hash into
      // its consumers: partitionable mode materializes nothing (testdata/gpu_lowered, compiled
      // by XLA:CPU). The rolled loop of XLA:CPU keeps the formula of rng_whatif.h.
      if (site.kind == SiteKind::kThreefryExpanded &&
          (site.mode == SiteMode::kReplicated ||
           (site.mode == SiteMode::kPartitionable && !BitsLeave(work)))) {
        site.whatif.partitionable = site.whatif.fused;
        site.whatif.partitionable.memory_bytes = SaturatingAdd(masks, reader_masks);
        // XLA:TPU leaves the key schedule's scalars out of the fusion (rng_whatif.h).
        if (options_.platform == Platform::kTpu) {
          site.whatif.partitionable.memory_bytes = TpuPartitionableKeyBytes();
          work.tpu_fused_counters = true;
        }
        fused_sites |= !BitsLeave(work);
      }
      if (geometry.unrolled || geometry.hash_call) {
        site.whatif.replicated.memory_bytes =
            SaturatingAdd(site.whatif.replicated.memory_bytes, masks);
      }
      if (geometry.hash_call) {
        site.whatif.partitionable.memory_bytes =
            SaturatingAdd(site.whatif.partitionable.memory_bytes, masks);
      }
      // XLA:GPU expands rng-bit-generator into Philox arithmetic and fuses it into its
      // consumers, as it fuses an unrolled hash.
      if ((geometry.unrolled || geometry.hash_call) && options_.platform == Platform::kGpu) {
        site.whatif.rbg = site.whatif.fused;
        site.whatif.rbg.memory_bytes = SaturatingAdd(masks, reader_masks);
      }
      // XLA:GPU expands rng-bit-generator into Philox and fuses it into the consumer, which
      // computes the global words and keeps its slice: nothing is materialized.
      if (work.philox && !BitsLeave(work)) {
        site.whatif.rbg = site.whatif.fused;
        fused_sites = true;
      }
      if (runs_per_step > 1) {
        for (RngCost* cost : {&site.whatif.replicated, &site.whatif.partitionable, &site.whatif.rbg,
                              &site.whatif.fused}) {
          *cost = PerStepCost(*cost, runs_per_step, work.counters_hoisted);
        }
      }
    }
  }
  if (fused_sites) {
    result.notes.push_back(
        "hashes fused into their consumers: XLA recomputes such a hash in every fusion that "
        "reads the bits (forward and backward), so several sites may draw the same bits; the "
        "replicated and rbg what-ifs count each site");
  }
  bool estimated = false;
  for (SiteWork& work : sites_) {
    RngSite& site = work.site;
    if (!work.via_calls) continue;
    const RngCost* cost = CostOf(site.whatif, site.mode);
    site.buffers.clear();
    site.counter_bytes = 0;
    site.bits_bytes = 0;
    site.materialized_bytes = cost != nullptr ? cost->memory_bytes : 0;
    estimated = true;
  }
  if (estimated) {
    result.notes.push_back(
        "sites reached through calls (JAX functions not inlined yet): materialized_bytes is the "
        "what-if of the site's mode, buffers are not listed");
  }
  Findings(result);
  for (const auto& [computation, instr] : backward_start_) {
    result.backward_start[std::string(computation->name)] = std::string(instr->name);
  }
  std::set<std::pair<int64_t, int64_t>> shared_geometries;
  for (SiteWork& work : sites_) {
    if (work.site.purpose == SitePurpose::kBits &&
        shared_geometries.insert({work.site.global_elements, work.site.local_elements}).second) {
      const RngGeometry geometry = GeometryOf(work);
      result.totals.whatif.replicated.memory_bytes = SaturatingAdd(
          result.totals.whatif.replicated.memory_bytes, SharedReplicatedCounterBytes(geometry));
      result.totals.whatif.partitionable.memory_bytes =
          SaturatingAdd(result.totals.whatif.partitionable.memory_bytes,
                        SharedPartitionableCounterBytes(geometry));
      if (geometry.hash_call) {
        result.totals.whatif.partitionable.memory_bytes =
            SaturatingAdd(result.totals.whatif.partitionable.memory_bytes,
                          SharedReplicatedCounterBytes(geometry));
      }
    }
  }
  // XLA:TPU's replicated exchange keeps the counter pieces and their permutes once per
  // computation and geometry (rng_whatif.h), every time the computation runs.
  std::set<std::tuple<const HloComputation*, int64_t, int64_t>> tpu_exchanges;
  for (const SiteWork& work : sites_) {
    const RngSite& site = work.site;
    if (site.purpose != SitePurpose::kBits || options_.platform != Platform::kTpu ||
        site.kind != SiteKind::kThreefryExpanded ||
        !tpu_exchanges.emplace(work.anchor->parent, site.local_elements, site.global_elements)
             .second) {
      continue;
    }
    const RngGeometry geometry = GeometryOf(work);
    const auto runs = executions.find(work.anchor->parent);
    const int64_t runs_per_step = runs != executions.end() ? runs->second : 1;
    RngCost& total = result.totals.whatif.replicated;
    total.memory_bytes = SaturatingAdd(total.memory_bytes, TpuReplicatedSharedBytes(geometry));
    total.wire_bytes_per_device =
        SaturatingAdd(total.wire_bytes_per_device,
                      ir::SaturatingMul(TpuReplicatedSharedWireBytes(geometry), runs_per_step));
  }
  // XLA:TPU keeps a fused partitionable hash's counter pieces once per computation and geometry
  // (rng_whatif.h). A site's shape is its dropout tensor's, which may be a reshape of the bits
  // JAX drew (attention dropout's [B,S,H,D] of [B,S,H*D]); the draws of one geometry share one
  // iota, taken as the one of fewest dimensions (but two).
  std::map<std::tuple<const HloComputation*, int64_t, int64_t>, std::vector<int64_t>> tpu_counters;
  for (const SiteWork& work : sites_) {
    if (!work.tpu_fused_counters) continue;
    const auto key =
        std::make_tuple(work.anchor->parent, work.site.local_elements, work.site.global_elements);
    const auto [at, inserted] = tpu_counters.emplace(key, work.site.shape);
    // A flat shape is the hash's lanes where no dropout tensor was found: any other is better.
    const size_t rank = work.site.shape.size();
    if (!inserted && rank >= 2 && (at->second.size() < 2 || rank < at->second.size())) {
      at->second = work.site.shape;
    }
  }
  for (const auto& [key, shape] : tpu_counters) {
    result.totals.whatif.partitionable.memory_bytes = SaturatingAdd(
        result.totals.whatif.partitionable.memory_bytes, TpuPartitionableCounterBytes(shape));
  }
  for (SiteWork& work : sites_) {
    RngSite& site = work.site;
    RngSiteTotals& t = result.totals;
    ++t.sites;
    if (site.purpose == SitePurpose::kBits) {
      ++t.bits_sites;
      if (site.key_depends_on_partition) {
        ++t.noise.per_device_key_sites;
      } else if (site.mode == SiteMode::kRbg) {
        ++t.noise.rbg_sites;
      } else {
        ++t.noise.shared_key_sites;
      }
    }
    t.materialized_bytes = SaturatingAdd(t.materialized_bytes, site.materialized_bytes);
    t.wire_bytes_per_device = SaturatingAdd(t.wire_bytes_per_device, site.wire_bytes_per_device);
    for (const char* mode : {"replicated", "partitionable", "rbg", "fused"}) {
      RngCost* total = const_cast<RngCost*>(CostOf(t.whatif, mode));
      const RngCost* cost = CostOf(site.whatif, mode);
      // The high figure sums each site's dearer lowering (its point figure where decided).
      total->memory_high_bytes = SaturatingAdd(
          total->bounded ? total->memory_high_bytes : total->memory_bytes, HighMemoryBytes(*cost));
      total->bounded |= cost->bounded;
      total->memory_bytes = SaturatingAdd(total->memory_bytes, cost->memory_bytes);
      total->wire_bytes_per_device =
          SaturatingAdd(total->wire_bytes_per_device, cost->wire_bytes_per_device);
    }
    result.sites.push_back(std::move(site));
  }
  return result;
}

}  // namespace rng_internal

RngSiteResult AnalyzeRngSites(ModuleAnalyses& analyses, const RngSiteOptions& options) {
  return rng_internal::RngSiteFinder(analyses, options).Run();
}

std::vector<RngSiteOptions::UnpartitionedDraw> UnpartitionedDraws(const ir::HloModule& before) {
  ModuleAnalyses analyses(before);
  RngSiteOptions options;
  options.stage = StageHint::kBeforeOptimizations;
  std::vector<RngSiteOptions::UnpartitionedDraw> draws;
  for (const RngSite& site : AnalyzeRngSites(analyses, options).sites) {
    if (site.purpose != SitePurpose::kBits || site.op_name.empty()) continue;
    draws.push_back({site.op_name, site.global_elements});
  }
  return draws;
}

bool SizableFromSource(const RngSite& site) {
  return !site.shards_known &&
         (site.mode == SiteMode::kPartitionable || site.mode == SiteMode::kReplicated);
}

bool SomeSitesSizableFromSource(const RngSiteResult& result) {
  return std::any_of(result.sites.begin(), result.sites.end(), SizableFromSource);
}

void SizesFromSource(ModuleAnalyses& analyses, RngSiteOptions options, const ir::HloModule& before,
                     RngSiteResult& result) {
  if (!SomeSitesSizableFromSource(result) || before.name != analyses.module().name) return;
  options.unpartitioned_draws = UnpartitionedDraws(before);
  if (!options.unpartitioned_draws.empty()) result = AnalyzeRngSites(analyses, options);
}

RngSiteResult AnalyzeRngSites(const ir::HloModule& module, const RngSiteOptions& options) {
  ModuleAnalyses analyses(module);
  return AnalyzeRngSites(analyses, options);
}

}  // namespace spmdsim::passes
