// RNG sites of every dump in testdata/, with expectations derived from each program's own
// description (manifest.json: layers, remat, mode, prng, shard_map), the flipped-mode what-if
// against XLA's dump of the other mode, and rng-key-residual against XLA's live-range file.
#include "passes/rng_site_analysis.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "analyzer/input_loader.h"
#include "analyzer/xla_memory_files.h"

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
  loaded.rng = AnalyzeRngSites(*loaded.input.module);
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
    if (site.purpose != "bits") continue;
    t.materialized += site.materialized_bytes;
    t.wire += site.wire_bytes_per_device;
  }
  return t;
}

double ErrorPct(int64_t predicted, int64_t actual) {
  if (actual == 0) return predicted == 0 ? 0.0 : 100.0;
  return 100.0 * static_cast<double>(predicted - actual) / static_cast<double>(actual);
}

TEST_CASE("rng sites of every dump follow from the program's description") {
  const nlohmann::json manifest = ReadManifest();
  for (const auto& program : manifest.at("programs")) {
    const std::string name = program.at("name");
    DYNAMIC_SECTION(name) {
      const Loaded loaded = Load(program);
      const nlohmann::json& model = program.at("model");
      // Two dropouts per block; remat draws the forward bits again in the backward.
      const int64_t layers = model.at("num_layers").get<int64_t>();
      const bool remat = program.at("remat").get<bool>();
      const int64_t expected_sites = layers * 2 * (remat ? 2 : 1);
      CHECK(loaded.rng.totals.bits_sites == expected_sites);

      const bool rbg = program.at("prng_impl").get<std::string>() == "rbg";
      const bool partitionable = program.at("threefry_partitionable").get<bool>();
      const bool shard_map = program.at("shard_map_per_device_key").get<bool>();
      const std::string mode = rbg ? "rbg" : (partitionable ? "partitionable" : "replicated");
      const int64_t local = Product(model.at("dropout_shape_per_device"));
      const int64_t global = Product(model.at("dropout_shape_global"));
      int64_t forward = 0;
      int64_t depends = 0;
      for (const RngSite& site : loaded.rng.sites) {
        if (site.purpose != "bits") continue;
        INFO(site.name << " " << site.op_name);
        CHECK(site.mode == mode);
        CHECK(site.kind == (rbg ? "rng-bit-generator" : "threefry-rolled"));
        CHECK(site.dtype == "u32");
        CHECK(site.local_elements == local);
        // Under shard_map each device draws its own local array.
        CHECK(site.global_elements == (shard_map ? local : global));
        CHECK(site.op_name.find("dropout") != std::string::npos);
        forward += site.phase == "forward" ? 1 : 0;
        depends += site.key_depends_on_partition ? 1 : 0;
        if (mode == "replicated") {
          CHECK(site.collectives.size() == 6);  // 2 all-gathers, 4 collective-permutes
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
      CHECK(forward == layers * 2);
      // Semantics: only the shard_map program derives keys from the device's position.
      int64_t findings = 0;
      for (const RngFinding& f : loaded.rng.findings) {
        findings += f.kind == "rng-depends-on-partition" ? 1 : 0;
      }
      CHECK(depends == (shard_map ? expected_sites : 0));
      CHECK(findings == (shard_map ? expected_sites : 0));
    }
  }
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
      const BitsTotals actual = Totals(target.rng);
      const double memory_error = ErrorPct(predicted.memory_bytes, actual.materialized);
      const double wire_error = ErrorPct(predicted.wire_bytes_per_device, actual.wire);
      INFO("memory predicted " << predicted.memory_bytes << " actual " << actual.materialized
                               << " (" << memory_error << "%), wire predicted "
                               << predicted.wire_bytes_per_device << " actual " << actual.wire
                               << " (" << wire_error << "%)");
      CHECK(actual.materialized > 0);
      CHECK(std::abs(memory_error) < 10.0);
      CHECK(std::abs(wire_error) < 10.0);
    }
  }
}

// rng-key-residual where XLA keeps random values across the forward/backward boundary: the value's
// live range in XLA's own live-range file ends at a backward (transpose(jvp)) instruction; and no
// forward site value that XLA frees in the forward is reported.
TEST_CASE("rng-key-residual matches XLA's buffer live ranges") {
  const nlohmann::json manifest = ReadManifest();
  for (const auto& program : manifest.at("programs")) {
    const std::string name = program.at("name");
    if (program.at("size").get<std::string>() != "small") continue;
    DYNAMIC_SECTION(name) {
      const Loaded loaded = Load(program);
      std::string error;
      const std::optional<analyzer::XlaLiveRange> live =
          analyzer::LoadXlaLiveRange(std::string(SPMDSIM_TESTDATA_DIR) + "/" +
                                         program.at("files").at("live_range").get<std::string>(),
                                     error);
      REQUIRE(live);
      std::map<std::string, const ir::HloInstruction*> by_name;
      for (const ir::HloComputation* c : loaded.input.module->computations) {
        for (const ir::HloInstruction* i : c->instructions) by_name[std::string(i->name)] = i;
      }
      // The phase of the instruction at XLA's schedule position where a value's range ends.
      const auto end_phase = [&](const std::string& value) -> std::string {
        const auto range = live->ranges.find(value);
        if (range == live->ranges.end()) return "absent";
        const int64_t end = range->second.end;
        if (end < 0 || end >= static_cast<int64_t>(live->sequence.size())) return "end";
        const auto instr = by_name.find(live->sequence[end]);
        return instr == by_name.end() ? "unknown" : RngPhase(instr->second->metadata.op_name);
      };
      std::set<std::string> flagged;
      for (const RngFinding& f : loaded.rng.findings) {
        if (f.kind != "rng-key-residual") continue;
        CHECK(f.bytes > 0);
        for (const std::string& value : f.values) {
          INFO(f.site << " " << value);
          CHECK(end_phase(value) == "backward");
          flagged.insert(value);
        }
      }
      // Forward sites' values read outside the site, not flagged: XLA ends them in the forward.
      for (const RngSite& site : loaded.rng.sites) {
        if (site.phase != "forward") continue;
        for (const RngSiteBuffer& buffer : site.buffers) {
          if (flagged.count(buffer.value) != 0 || buffer.bytes <= 64) continue;
          const std::string phase = end_phase(buffer.value);
          INFO(site.name << " " << buffer.value);
          CHECK(phase != "backward");
        }
      }
    }
  }
}

TEST_CASE("rng scope and phase from op_name") {
  CHECK(RngScope("jit(f)/jvp(M)/block_0/att_dropout/jit(_bernoulli)/jit(_uniform)/while") ==
        "jit(f)/jvp(M)/block_0/att_dropout");
  CHECK(RngScope("jit(f)/jit(_uniform)/while") == "jit(f)/jit(_uniform)");
  CHECK(RngScope("jit(f)/block_0/jit(_threefry_fold_in)/worker.<locals>.model/while") ==
        "jit(f)/block_0/jit(_threefry_fold_in)/worker.<locals>.model");
  CHECK(RngPhase("jit(f)/transpose(jvp(M))/block_0/jvp(M)/x") == "backward");
  CHECK(RngPhase("jit(f)/jvp(M)/block_0/x") == "forward");
  CHECK(RngPhase("jit(f)/split") == "other");
}

}  // namespace
}  // namespace spmdsim::passes
