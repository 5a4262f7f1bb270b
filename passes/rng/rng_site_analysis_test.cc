// RNG sites of every dump in testdata/, with expectations derived from each program's own
// description (manifest.json: layers, remat, mode, prng, shard_map), the flipped-mode what-if
// against XLA's dump of the other mode, and rng-key-residual against XLA's live-range file.
#include "passes/rng/rng_site_analysis.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <vector>

#include "passes/collectives/collective_analysis.h"
#include "passes/memory/live_range_analysis.h"
#include "passes/memory/memory_analysis.h"
#include "passes/rng/rng_remat_saving.h"
#include "testing/corpus_test.h"
#include "testing/pre_dump_names.h"

namespace spmdsim::passes {
namespace {

nlohmann::json ReadManifest() {
  std::ifstream in(SPMDSIM_TESTDATA_DIR "/manifest.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

struct Loaded {
  analyzer::ModuleInput input;
  RngSiteResult rng;
};

Loaded Load(const nlohmann::json& program) {
  const std::string file = program.at("files").at("after");
  analyzer::LoadOutcome outcome =
      analyzer::LoadInputs(std::string(SPMDSIM_TESTDATA_DIR) + "/" + file);
  REQUIRE_FALSE(outcome.failure);
  REQUIRE(outcome.inputs.modules.size() == 1);
  Loaded loaded{std::move(outcome.inputs.modules[0]), {}};
  ModuleAnalyses analyses(*loaded.input.module);
  loaded.rng = AnalyzeRngSites(analyses);
  // As the tool does: sites whose offsets the dump elides are sized from the module before
  // optimizations of the same dump.
  const auto before = program.at("files").find("before");
  if (SomeSitesSizableFromSource(loaded.rng) && before != program.at("files").end()) {
    analyzer::LoadOutcome source =
        analyzer::LoadInputs(std::string(SPMDSIM_TESTDATA_DIR) + "/" + before->get<std::string>());
    REQUIRE_FALSE(source.failure);
    REQUIRE(source.inputs.modules.size() == 1);
    SizesFromSource(analyses, {}, *source.inputs.modules[0].module, loaded.rng);
  }
  return loaded;
}

int64_t Product(const nlohmann::json& dims) {
  int64_t p = 1;
  for (const auto& d : dims) p *= d.get<int64_t>();
  return p;
}

// Sums over the sites drawing bits.
struct BitsTotals {
  int64_t materialized = 0;
  int64_t wire = 0;
};
BitsTotals Totals(const RngSiteResult& result) {
  BitsTotals t;
  for (const RngSite& site : result.sites) {
    if (site.purpose != SitePurpose::kBits) continue;
    t.materialized += site.materialized_bytes;
    t.wire += site.wire_bytes_per_device;
  }
  return t;
}

// The bytes XLA's own buffer assignment gives the buffers of the sites drawing bits (each site
// buffer looked up by value in the -buffer-assignment.txt file of the program).
int64_t XlaBitsBytes(const Loaded& loaded, const nlohmann::json& program) {
  std::string error;
  const std::optional<analyzer::XlaBufferAssignment> assignment = analyzer::LoadXlaBufferAssignment(
      std::string(SPMDSIM_TESTDATA_DIR) + "/" +
          program.at("files").at("buffer_assignment").get<std::string>(),
      error);
  REQUIRE(assignment);
  std::map<std::string, int64_t> size_of;
  for (const auto& allocation : assignment->allocations) {
    for (const auto& value : allocation.values) size_of[value.Key()] = value.size;
  }
  int64_t total = 0;
  for (const RngSite& site : loaded.rng.sites) {
    if (site.purpose != SitePurpose::kBits) continue;
    for (const RngSiteBuffer& buffer : site.buffers) {
      const std::string key =
          buffer.value.find('{') == std::string::npos ? buffer.value + "{}" : buffer.value;
      const auto it = size_of.find(key);
      INFO(site.name << " " << key);
      REQUIRE(it != size_of.end());
      CHECK(it->second == buffer.bytes);
      total += it->second;
    }
  }
  return total;
}

double ErrorPct(int64_t predicted, int64_t actual) {
  if (actual == 0) return predicted == 0 ? 0.0 : 100.0;
  return 100.0 * static_cast<double>(predicted - actual) / static_cast<double>(actual);
}

SPMDSIM_CORPUS_TEST("rng sites of every dump follow from the program's description", program) {
  const std::string name = program.at("name");
  const Loaded loaded = Load(program);
  const nlohmann::json& model = program.at("model");
  // The generator counts the draws from the program's structure (tools/corpus/cells.py
  // train_draws): the static forward draws (a scanned layer's once), and those remat draws
  // again in the backward from the same keys.
  const nlohmann::json& draws = program.at("random_draws");
  const int64_t forward_sites = draws.at("sites").get<int64_t>();
  const int64_t expected_sites = forward_sites + draws.at("redrawn_by_remat").get<int64_t>();
  CHECK(loaded.rng.totals.bits_sites == expected_sites);

  // jax.random's "rbg" and "unsafe_rbg" both draw with rng-bit-generator.
  const std::string impl = program.at("prng_impl").get<std::string>();
  const bool rbg = impl == "rbg" || impl == "unsafe_rbg";
  const bool partitionable = program.at("threefry_partitionable").get<bool>();
  const bool shard_map = program.at("shard_map_per_device_key").get<bool>();
  const std::string mode = rbg ? "rbg" : (partitionable ? "partitionable" : "replicated");
  // JAX lowers threefry as a rolled loop on CPU and with its rounds unrolled elsewhere, or as
  // the cu_threefry2x32 custom call with jax_threefry_gpu_kernel_lowering.
  const std::string platform = program.at("platform_kind").get<std::string>();
  const std::string kind = rbg                                             ? "rng-bit-generator"
                           : program.at("gpu_kernel_lowering").get<bool>() ? "threefry-custom-call"
                           : platform == "cpu"                             ? "threefry-rolled"
                                                                           : "threefry-expanded";
  // The draws' global shapes: each draw's own where the manifest lists them (third-party
  // programs, counted from their source, draw several: attention weights, masks broadcast over
  // a dimension; how the mesh splits each is XLA's to say), else our generator's dropout, whose
  // split is known (local > 0) and whose op_names say "dropout".
  // A draw made on each device from its own key (under pmap) is that device's array: no
  // partitioner splits it, and replicated mode exchanges nothing for it.
  std::vector<std::tuple<int64_t, int64_t, std::string>> shapes;  // local, global, scope
  bool partitioned_draws = !shard_map;
  if (draws.contains("draws")) {
    for (const auto& draw : draws.at("draws")) {
      if (draw.value("kind", "bits") != "bits") continue;
      if (draw.value("drawn_on_each_device", false)) {
        partitioned_draws = false;
        const int64_t local = Product(draw.at("shape_per_device"));
        shapes.emplace_back(local, local, "");
        continue;
      }
      shapes.emplace_back(
          0, Product(draw.contains("shape_global") ? draw.at("shape_global") : draw.at("shape")),
          "");
    }
  }
  if (shapes.empty()) {
    shapes.emplace_back(Product(model.at("dropout_shape_per_device")),
                        Product(model.at("dropout_shape_global")), "dropout");
  }
  int64_t forward = 0;
  int64_t depends = 0;
  for (const RngSite& site : loaded.rng.sites) {
    if (site.purpose != SitePurpose::kBits) continue;
    INFO(site.name << " " << site.op_name);
    CHECK(SiteModeName(site.mode) == mode);
    CHECK(SiteKindName(site.kind) == kind);
    CHECK(site.dtype == "u32");
    bool drawn = false;
    for (const auto& [local, global, scope] : shapes) {
      // Under shard_map each device draws its own local array.
      const int64_t expected_local = local > 0 ? local : site.local_elements;
      drawn |= site.local_elements == expected_local && site.local_elements > 0 &&
               site.global_elements == (shard_map ? expected_local : global) &&
               global % site.local_elements == 0 && site.op_name.find(scope) != std::string::npos;
    }
    INFO("local " << site.local_elements << ", global " << site.global_elements);
    CHECK(drawn);
    forward += site.phase == SitePhase::kForward ? 1 : 0;
    depends += site.key_depends_on_partition ? 1 : 0;
    if (mode == "replicated" && partitioned_draws) {
      // Replicated counters span the global array: XLA exchanges counters or gathers hash
      // outputs for every draw of a partitioned tensor.
      CHECK_FALSE(site.collectives.empty());
      CHECK(site.wire_bytes_per_device > 0);
    } else {
      CHECK(site.collectives.empty());
    }
    bool dropout_consumer = false;
    for (const std::string& c : site.consumers) {
      dropout_consumer |= c.rfind("dropout (mask and select)", 0) == 0;
    }
    CHECK(dropout_consumer);
  }
  CHECK(forward == forward_sites);
  // Semantics: only the shard_map program derives keys from the device's position.
  int64_t findings = 0;
  for (const RngFinding& f : loaded.rng.findings) {
    findings += f.kind == FindingKind::kRngDependsOnPartition ? 1 : 0;
  }
  CHECK(depends == (shard_map ? expected_sites : 0));
  CHECK(findings == (shard_map ? expected_sites : 0));
}

// The collectives XLA's partitioner inserted for the random draws carry the op_name of what
// they partition, inside a jax.random function: each is attributed to the sites whose values
// it moves, and their parts make up at most the whole (a combined collective is shared by its
// sites and may move other values too).
SPMDSIM_CORPUS_TEST("collectives moving random values are attributed to their sites", program) {
  // Only replicated threefry inserts collectives for its bits; that the other modes' sites have
  // none is checked by the description test above.
  const std::string impl = program.at("prng_impl").get<std::string>();
  if (impl != "threefry2x32" || program.at("threefry_partitionable").get<bool>()) return;
  const Loaded loaded = Load(program);
  const CollectiveResult collectives = AnalyzeCollectives(*loaded.input.module);
  std::map<std::string, int64_t> attributed;  // instruction -> sum of the sites' parts
  for (const RngSite& site : loaded.rng.sites) {
    for (const RngSiteCollective& c : site.collectives)
      attributed[c.instruction] += c.wire_bytes_per_device;
  }
  for (const CollectiveOp& op : collectives.ops) {
    const bool random = op.op_name.find("jit(_uniform)") != std::string::npos ||
                        op.op_name.find("jit(_bernoulli)") != std::string::npos ||
                        op.op_name.find("threefry") != std::string::npos ||
                        op.op_name.find("rng_bit_generator") != std::string::npos;
    const auto found = attributed.find(op.instruction);
    INFO(op.instruction << " " << op.op_name);
    const int64_t wire = op.wire_bytes_per_device * op.loop_multiplier;
    if (random) {
      REQUIRE(found != attributed.end());
    }
    if (found != attributed.end()) {
      // The sites' parts (each rounded to a byte) make up at most the whole: a combined
      // collective may also move other values.
      CHECK(found->second > 0);
      CHECK(found->second <= wire + static_cast<int64_t>(loaded.rng.sites.size()));
    }
  }
}

// Modules before optimizations call JAX's functions instead of inlining them: each call chain
// from the entry to a threefry2x32 function is a site, with the op_name of the whole chain.
// XLA:CPU's before_optimizations dumps: the same bits sites as the optimized module.
SPMDSIM_CORPUS_TEST("rng sites of the before_optimizations dumps match the optimized module's",
                    program) {
  if (program.at("size").get<std::string>() != "small") return;
  const std::string name = program.at("name");
  DYNAMIC_SECTION(name) {
    analyzer::LoadOutcome outcome =
        analyzer::LoadInputs(std::string(SPMDSIM_TESTDATA_DIR) + "/" +
                             program.at("files").at("before").get<std::string>());
    REQUIRE_FALSE(outcome.failure);
    const RngSiteResult before = AnalyzeRngSites(*outcome.inputs.modules.at(0).module);
    const Loaded after = Load(program);
    CHECK(before.totals.bits_sites == after.rng.totals.bits_sites);
    // Each site is a draw counted from the source: third-party programs list each draw's name
    // scope and source line (flax's nnx modules push no name scope: the line in the program's
    // own code, a frame of the site's call stack, names the draw); our generator's draws are
    // its dropouts.
    std::vector<std::string> scopes;
    std::vector<std::string> sources;
    const nlohmann::json& draws = program.at("random_draws");
    if (draws.contains("draws")) {
      for (const auto& draw : draws.at("draws")) {
        if (draw.value("kind", "bits") != "bits") continue;
        scopes.push_back(draw.at("scope"));
        sources.push_back("/" + draw.at("source").get<std::string>());
      }
    }
    if (scopes.empty()) scopes.push_back("dropout");
    std::map<std::string, int64_t> before_modes;
    std::map<std::string, int64_t> after_modes;
    std::map<std::string, int64_t> before_phases;
    std::map<std::string, int64_t> after_phases;
    for (const RngSite& site : before.sites) {
      if (site.purpose != SitePurpose::kBits) continue;
      INFO(site.name << " " << site.op_name);
      bool in_scope = false;
      for (const std::string& scope : scopes)
        in_scope |= site.op_name.find(scope) != std::string::npos;
      for (const std::string& frame : site.call_stack) {
        for (const std::string& source : sources) {
          in_scope |= frame.size() >= source.size() &&
                      frame.compare(frame.size() - source.size(), source.size(), source) == 0;
        }
      }
      CHECK(in_scope);
      ++before_modes[std::string(SiteKindName(site.kind)) + " " +
                     std::string(SiteModeName(site.mode))];
      ++before_phases[std::string(SitePhaseName(site.phase))];
    }
    for (const RngSite& site : after.rng.sites) {
      if (site.purpose != SitePurpose::kBits) continue;
      ++after_modes[std::string(SiteKindName(site.kind)) + " " +
                    std::string(SiteModeName(site.mode))];
      ++after_phases[std::string(SitePhaseName(site.phase))];
    }
    CHECK(before_modes == after_modes);
    CHECK(before_phases == after_phases);
  }
}

// The two GPU lowerings of threefry (tools/gen_gpu_lowered.py: JAX lowering for CUDA, printed by
// XLA), in both counter modes: one bits site per dropout and one fold_in per layer.
TEST_CASE("rng sites of CUDA lowerings: unrolled rounds and the cu_threefry2x32 custom call") {
  std::ifstream in(SPMDSIM_TESTDATA_DIR "/gpu_lowered/manifest.json");
  REQUIRE(in.good());
  const nlohmann::json manifest = nlohmann::json::parse(in);
  const int64_t dropouts = manifest.at("dropout_sites").get<int64_t>();
  REQUIRE(manifest.at("variants").size() == 4);
  for (const auto& variant : manifest.at("variants")) {
    const std::string name = variant.at("name");
    DYNAMIC_SECTION(name) {
      analyzer::LoadOutcome outcome =
          analyzer::LoadInputs(std::string(SPMDSIM_TESTDATA_DIR) + "/gpu_lowered/" +
                               variant.at("file").get<std::string>());
      REQUIRE_FALSE(outcome.failure);
      const RngSiteResult result = AnalyzeRngSites(*outcome.inputs.modules.at(0).module);
      const std::string kind =
          variant.at("gpu_kernel").get<bool>() ? "threefry-custom-call" : "threefry-expanded";
      const std::string mode =
          variant.at("partitionable").get<bool>() ? "partitionable" : "replicated";
      int64_t bits = 0;
      int64_t fold_ins = 0;
      for (const RngSite& site : result.sites) {
        INFO(site.name << " " << site.op_name);
        CHECK(SiteKindName(site.kind) == kind);
        if (site.purpose == SitePurpose::kFoldIn) ++fold_ins;
        if (site.purpose != SitePurpose::kBits) continue;
        ++bits;
        CHECK(SiteModeName(site.mode) == mode);
        CHECK(site.draws == "bernoulli/uniform");
        CHECK(site.phase == SitePhase::kForward);
        // One dropout's bits, in either mode (replicated mode's two hash halves together).
        CHECK(site.global_elements == manifest.at("model").at("batch").get<int64_t>() *
                                          manifest.at("model").at("hidden").get<int64_t>());
      }
      CHECK(bits == dropouts);
      CHECK(fold_ins == dropouts);
    }
  }
}

// The unrolled CUDA lowering compiled by XLA:CPU (SPMD, 8 devices): the hash fused into loop
// fusions as XLA fuses it on any backend. Partitionable mode fuses it into the dropout itself and
// materializes no random buffer (XLA's buffer assignment holds no u32 array of the lanes' size);
// replicated mode materializes the gathered bits, whose sizes and collectives are XLA's.
TEST_CASE("fused threefry in XLA's optimized module: modes, buffers and collectives") {
  std::ifstream in(SPMDSIM_TESTDATA_DIR "/gpu_lowered/manifest.json");
  REQUIRE(in.good());
  const nlohmann::json manifest = nlohmann::json::parse(in);
  const std::string dir = std::string(SPMDSIM_TESTDATA_DIR) + "/gpu_lowered/";
  int compiled = 0;
  for (const auto& variant : manifest.at("variants")) {
    if (!variant.contains("cpu_after_optimizations")) continue;
    ++compiled;
    const std::string name = variant.at("name");
    DYNAMIC_SECTION(name) {
      const std::string file = variant.at("cpu_after_optimizations");
      analyzer::LoadOutcome outcome = analyzer::LoadInputs(dir + file);
      REQUIRE_FALSE(outcome.failure);
      const ir::HloModule& module = *outcome.inputs.modules.at(0).module;
      const RngSiteResult result = AnalyzeRngSites(module);
      const bool partitionable = variant.at("partitionable").get<bool>();
      const int64_t global = manifest.at("model").at("batch").get<int64_t>() *
                             manifest.at("model").at("hidden").get<int64_t>();
      std::string error;
      const std::string stem = file.substr(0, file.size() - 4);
      const std::optional<analyzer::XlaBufferAssignment> assignment =
          analyzer::LoadXlaBufferAssignment(dir + stem + "-buffer-assignment.txt", error);
      REQUIRE(assignment);
      std::map<std::string, int64_t> size_of;
      int64_t xla_u32_bits = 0;  // XLA's u32 arrays at least as large as one device's lanes
      for (const auto& allocation : assignment->allocations) {
        for (const auto& value : allocation.values) {
          size_of[value.Key()] = value.size;
          if (value.shape.rfind("u32[", 0) == 0 && value.size >= 4 * global / 8) {
            xla_u32_bits += value.size;
          }
        }
      }
      int64_t bits = 0;
      int64_t materialized = 0;
      for (const RngSite& site : result.sites) {
        if (site.purpose != SitePurpose::kBits) continue;
        ++bits;
        INFO(site.name << " " << site.op_name);
        CHECK(site.kind == SiteKind::kThreefryExpanded);
        CHECK(site.mode == (partitionable ? SiteMode::kPartitionable : SiteMode::kReplicated));
        CHECK(site.whatif.partitionable.memory_bytes == 0);  // fused with this lowering
        if (partitionable) CHECK(site.global_elements == global);
        for (const RngSiteBuffer& buffer : site.buffers) {
          const std::string key =
              buffer.value.find('{') == std::string::npos ? buffer.value + "{}" : buffer.value;
          REQUIRE(size_of.count(key) == 1);
          CHECK(size_of.at(key) == buffer.bytes);
        }
        materialized += site.materialized_bytes;
      }
      CHECK(bits >= manifest.at("dropout_sites").get<int64_t>());
      for (const RngFinding& f : result.findings)
        CHECK(f.kind != FindingKind::kRngDependsOnPartition);
      if (partitionable) {
        CHECK(materialized == 0);
        CHECK(xla_u32_bits == 0);
        CHECK(result.totals.wire_bytes_per_device == 0);
      } else {
        CHECK(materialized >= xla_u32_bits);
        CHECK(xla_u32_bits > 0);
        // The collectives that move u32 arrays (counters, hash outputs) are the sites'; the
        // others all-reduce gradients.
        std::map<std::string, const ir::HloInstruction*> by_name;
        for (const ir::HloComputation* c : module.computations) {
          for (const ir::HloInstruction* i : c->instructions) by_name[std::string(i->name)] = i;
        }
        const CollectiveResult collectives = AnalyzeCollectives(module);
        int64_t wire = 0;
        for (const CollectiveOp& op : collectives.ops) {
          const ir::HloInstruction* instr = by_name.at(op.instruction);
          if (instr->shape.IsArray() && instr->shape.element_type() == ir::PrimitiveType::kU32) {
            wire += op.wire_bytes_per_device * op.loop_multiplier;
          }
        }
        CHECK(wire > 0);
        CHECK(result.totals.wire_bytes_per_device == wire);
      }
    }
  }
  CHECK(compiled == 2);
}

// From the dump of one mode predict the other and compare with XLA's dump of the other mode.
TEST_CASE("flipped-mode what-if is within 10% of XLA's dump of the other mode") {
  const nlohmann::json manifest = ReadManifest();
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& program : manifest.at("programs")) by_name[program.at("name")] = program;
  const std::vector<std::tuple<std::string, std::string, std::string>> pairs = {
      {"dp8_partitionable_remat", "dp8_replicated_remat", "replicated"},
      {"dp8_partitionable_noremat", "dp8_replicated_noremat", "replicated"},
      {"mesh4x2_partitionable_remat", "mesh4x2_replicated_remat", "replicated"},
      {"seed_dp8_partitionable_remat", "seed_dp8_replicated_remat", "replicated"},
      {"dp8_replicated_remat", "dp8_partitionable_remat", "partitionable"},
      {"dp8_replicated_noremat", "dp8_partitionable_noremat", "partitionable"},
      {"mesh4x2_replicated_remat", "mesh4x2_partitionable_remat", "partitionable"},
      {"seed_dp8_replicated_remat", "seed_dp8_partitionable_remat", "partitionable"},
      {"dp8_partitionable_remat", "dp8_rbg_remat", "rbg"},
  };
  for (const auto& [from, to, mode] : pairs) {
    DYNAMIC_SECTION(from << " -> " << to) {
      const Loaded source = Load(by_name.at(from));
      const Loaded target = Load(by_name.at(to));
      const RngCost& predicted = *CostOf(source.rng.totals.whatif, mode.c_str());
      BitsTotals actual = Totals(target.rng);
      // Memory: the sizes XLA assigned to the target's random-bit buffers; wire: the collectives
      // XLA inserted in the target.
      actual.materialized = XlaBitsBytes(target, by_name.at(to));
      // Bounds (rbg: the generator sharded or replicated, rng_whatif.h): XLA's choice is one of
      // the two figures, and XLA:CPU replicates it here.
      const int64_t figure = predicted.bounded ? (actual.materialized > predicted.memory_bytes
                                                      ? predicted.memory_high_bytes
                                                      : predicted.memory_bytes)
                                               : predicted.memory_bytes;
      const double memory_error = ErrorPct(figure, actual.materialized);
      const double wire_error = ErrorPct(predicted.wire_bytes_per_device, actual.wire);
      INFO("memory predicted " << figure << " actual " << actual.materialized << " ("
                               << memory_error << "%), wire predicted "
                               << predicted.wire_bytes_per_device << " actual " << actual.wire
                               << " (" << wire_error << "%)");
      CHECK(actual.materialized > 0);
      CHECK(std::abs(memory_error) < 10.0);
      CHECK(std::abs(wire_error) < 10.0);
    }
  }
}

// rng-key-residual exactly where XLA keeps random values across the start of the backward pass:
// a site buffer is flagged iff one of its values, in XLA's own live-range file, starts before the
// backward_start instruction's position and ends at or after it. Each finding's saving at the peak
// is what the recompute frees where the live temporaries peak, each freed buffer live there in
// XLA's file.
SPMDSIM_CORPUS_TEST("rng-key-residual matches XLA's buffer live ranges", program) {
  const std::string name = program.at("name");
  // The ground truth is XLA's live-range file (JAX 0.4's XLA writes none).
  const bool has_live_range_file = program.at("files").at("live_range").is_string();
  REQUIRE(has_live_range_file);
  Loaded loaded = Load(program);
  std::string error;
  const std::optional<analyzer::XlaLiveRange> live =
      analyzer::LoadXlaLiveRange(std::string(SPMDSIM_TESTDATA_DIR) + "/" +
                                     program.at("files").at("live_range").get<std::string>(),
                                 error);
  REQUIRE(live);
  std::map<std::string, int64_t> position;
  for (size_t t = 0; t < live->sequence.size(); ++t) {
    position.emplace(live->sequence[t], static_cast<int64_t>(t));
  }
  // Every program has a training step: a computation with both passes (a scanned model also
  // has one in its loop body: a value crosses the boundary of either).
  REQUIRE_FALSE(loaded.rng.backward_start.empty());
  std::vector<int64_t> boundaries;
  for (const auto& [computation, start] : loaded.rng.backward_start) {
    REQUIRE(position.count(start) == 1);
    boundaries.push_back(position.at(start));
  }
  const int64_t boundary = boundaries.front();
  // XLA's files always print the shape index ("copy.1{}").
  const auto xla_name = [](const std::string& value) {
    return value.find('{') == std::string::npos ? value + "{}" : value;
  };
  const auto crosses = [&](const std::string& value) {
    const auto range = live->ranges.find(xla_name(value));
    if (range == live->ranges.end()) return false;
    for (const int64_t b : boundaries) {
      if (range->second.start < b && range->second.end >= b) return true;
    }
    return false;
  };
  // Buffer for buffer: a random-bit buffer is held across exactly when XLA's live range crosses
  // the boundary. Where XLA fuses the hash into its consumers (GPU, TPU) and the backward
  // recomputes it, nothing is held, and nothing may be reported.
  int64_t held = 0;
  int64_t examined = 0;
  for (const RngSite& site : loaded.rng.sites) {
    if (site.purpose != SitePurpose::kBits) continue;
    for (const RngSiteBuffer& buffer : site.buffers) {
      if (buffer.bytes <= 64) continue;  // key-sized
      bool xla_holds = false;
      for (const std::string& value : buffer.values) xla_holds |= crosses(value);
      INFO(site.name << " " << buffer.value << " " << buffer.shape);
      CHECK(buffer.held_across == xla_holds);
      held += buffer.held_across ? 1 : 0;
      ++examined;
    }
  }
  // A program whose hashes XLA fused into their consumers has no random-bit buffer to examine
  // (`examined` 0); its findings are still checked below.
  INFO(examined << " random-bit buffers examined");
  // No finding names a buffer that is not a held random-bit buffer.
  std::set<std::string> held_values;
  for (const RngSite& site : loaded.rng.sites) {
    for (const RngSiteBuffer& buffer : site.buffers) {
      if (site.purpose != SitePurpose::kBits || !buffer.held_across) continue;
      held_values.insert(buffer.values.begin(), buffer.values.end());
    }
  }
  for (const RngFinding& f : loaded.rng.findings) {
    if (f.kind != FindingKind::kRngKeyResidual) continue;
    for (const std::string& value : f.values) {
      INFO(f.site << " names " << value);
      CHECK(held_values.count(value) == 1);
    }
  }
  // The saving's positions below are checked against the one boundary of a step whose
  // backward pass is in one computation.
  if (held == 0 || boundaries.size() != 1) return;

  MemoryAnalysisOptions memory;
  memory.platform = PlatformProfile::For(
      ParsePlatform(program.at("platform_kind").get<std::string>()).value_or(Platform::kCpu));
  const PeakMemoryResult baseline = AnalyzePeakMemory(*loaded.input.module, memory);
  const RematSavingResult saving =
      EstimateRematSavings(*loaded.input.module, baseline, loaded.rng, memory);
  REQUIRE(saving.ran);
  // The saving is counted at the position where the live temporaries peak: a finding's buffer
  // counts there only if XLA's live-range file has it live there (XLA's own "peak" line also
  // counts parameters and outputs, so it can fall later, after they died), and only if the
  // recompute frees it there (not while the forward still reads it, nor at the backward read).
  // Schedule positions are compared in XLA's sequence, by instruction name (the flattened
  // schedules may hold different bookkeeping entries).
  ModuleAnalyses analyses(*loaded.input.module);
  const auto& sequence = analyses.LiveRanges().sequence();
  const auto to_xla = [&](int64_t t) -> int64_t {
    if (t < 0 || static_cast<size_t>(t) >= sequence.size()) return -1;
    const auto it = position.find(std::string(sequence[static_cast<size_t>(t)]->name));
    return it == position.end() ? -1 : it->second;
  };
  REQUIRE(baseline.peak_time >= 0);
  const int64_t peak = to_xla(baseline.peak_time);
  REQUIRE(peak >= 0);
  const auto live_at_peak = [&](const std::string& value) {
    const auto range = live->ranges.find(xla_name(value));
    return range != live->ranges.end() && range->second.start <= peak && peak <= range->second.end;
  };
  std::map<std::string, const PeakMemoryResult::Recomputed*> moved;
  for (const PeakMemoryResult::Recomputed& r : saving.recomputed) moved[r.value] = &r;
  int64_t findings_saving = 0;
  for (const RngFinding& f : loaded.rng.findings) {
    if (f.kind != FindingKind::kRngKeyResidual) continue;
    int64_t expected = 0;
    for (const RngSite& site : loaded.rng.sites) {
      if (site.name != f.site) continue;
      for (const RngSiteBuffer& buffer : site.buffers) {
        if (!buffer.held_across) continue;
        const auto r = moved.find(buffer.value);
        const bool freed = r != moved.end() && r->second->freed_after < baseline.peak_time &&
                           baseline.peak_time < r->second->recomputed_at;
        bool xla_live = false;
        int64_t xla_start = INT64_MAX;
        int64_t xla_end = -1;
        for (const std::string& value : buffer.values) {
          xla_live |= live_at_peak(value);
          const auto range = live->ranges.find(xla_name(value));
          if (range == live->ranges.end()) continue;
          xla_start = std::min(xla_start, range->second.start);
          xla_end = std::max(xla_end, range->second.end);
        }
        INFO(f.site << " " << buffer.value << " freed at the peak " << freed << ", XLA live there "
                    << xla_live);
        CHECK((!freed || xla_live));
        if (r != moved.end()) {
          // The last forward read and the first backward read the what-if found lie inside the
          // buffer's live range in XLA's file, on either side of the boundary.
          const int64_t freed_after = to_xla(r->second->freed_after);
          const int64_t recomputed_at = to_xla(r->second->recomputed_at);
          INFO("freed after " << freed_after << ", recomputed at " << recomputed_at << ", XLA "
                              << xla_start << "-" << xla_end << ", boundary " << boundary);
          CHECK(xla_start <= freed_after);
          CHECK(freed_after < boundary);
          CHECK(boundary <= recomputed_at);
          CHECK(recomputed_at <= xla_end);
        }
        if (freed) expected += r->second->bytes;
      }
    }
    INFO(f.site << " saving " << f.saving_bytes << " freed at the peak " << expected);
    CHECK(f.saving_bytes == expected);
    findings_saving += f.saving_bytes;
  }
  // The largest sum of live temporaries falls by at most what the findings free at its position.
  CHECK(saving.live_temp_saving_bytes <= findings_saving);
}

TEST_CASE("rng scope and phase from op_name") {
  CHECK(RngScope("jit(f)/jvp(M)/block_0/att_dropout/jit(_bernoulli)/jit(_uniform)/while") ==
        "jit(f)/jvp(M)/block_0/att_dropout");
  CHECK(RngScope("jit(f)/jit(_uniform)/while") == "jit(f)/jit(_uniform)");
  CHECK(RngScope("jit(f)/block_0/jit(_threefry_fold_in)/worker.<locals>.model/while") ==
        "jit(f)/block_0/jit(_threefry_fold_in)/worker.<locals>.model");
  CHECK(RngPhase("jit(f)/transpose(jvp(M))/block_0/jvp(M)/x") == SitePhase::kBackward);
  CHECK(RngPhase("jit(f)/jvp(M)/block_0/x") == SitePhase::kForward);
  CHECK(RngPhase("jit(f)/split") == SitePhase::kOther);
}

}  // namespace
}  // namespace spmdsim::passes
