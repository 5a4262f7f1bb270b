// Random provenance: on hand-written modules, and on every corpus cell against an oracle read
// from XLA's own files (the op_names XLA keeps on each value's instruction, and XLA's live-range
// file), not from spmdsim's definition of random bits.
#include "passes/rng/random_provenance.h"

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <unordered_map>

#include "ir/parser.h"
#include "passes/memory/buffer_alias_analysis.h"
#include "passes/module_analyses.h"
#include "passes/rng/rng_site_analysis.h"
#include "testing/corpus_files.h"
#include "testing/corpus_test.h"
#include "testing/xla_random_values.h"

namespace spmdsim::passes {
namespace {

// ---- Hand-written modules ------------------------------------------------------------------

// A threefry2x32 of `lanes` u32 elements in one computation, rounds unrolled as JAX lowers them
// for GPU and TPU: x0 += x1; x1 = rotl(x1, r) ^ x0, with the key schedule injected every four
// rounds. Writes instructions named p<prefix><n> and returns the names of the two output lanes.
std::pair<std::string, std::string> ThreefryText(std::string& out, const std::string& prefix,
                                                 const std::string& k0, const std::string& k1,
                                                 const std::string& x0, const std::string& x1,
                                                 int lanes) {
  const std::string t = "u32[" + std::to_string(lanes) + "]";
  int n = 0;
  const auto name = [&] { return "%" + prefix + std::to_string(n++); };
  const auto emit = [&](const std::string& text) {
    const std::string v = name();
    out += "  " + v + " = " + text + "\n";
    return v;
  };
  const auto bcast = [&](const std::string& scalar) {
    return emit(t + " broadcast(" + scalar + "), dimensions={}");
  };
  const std::string parity = emit("u32[] constant(466688986)");
  const std::string k2 =
      emit("u32[] xor(" + emit("u32[] xor(" + k0 + ", " + k1 + ")") + ", " + parity + ")");
  const std::string ks[3] = {k0, k1, k2};
  std::string a = emit(t + " add(" + x0 + ", " + bcast(k0) + ")");
  std::string b = emit(t + " add(" + x1 + ", " + bcast(k1) + ")");
  const int rotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  for (int round = 0; round < 20; ++round) {
    const int r = rotations[round % 8];
    a = emit(t + " add(" + a + ", " + b + ")");
    const std::string left = emit(t + " shift-left(" + b + ", " +
                                  bcast(emit("u32[] constant(" + std::to_string(r) + ")")) + ")");
    const std::string right =
        emit(t + " shift-right-logical(" + b + ", " +
             bcast(emit("u32[] constant(" + std::to_string(32 - r) + ")")) + ")");
    b = emit(t + " xor(" + emit(t + " or(" + left + ", " + right + ")") + ", " + a + ")");
    if (round % 4 == 3) {
      const int i = round / 4 + 1;
      a = emit(t + " add(" + a + ", " + bcast(ks[i % 3]) + ")");
      b = emit(t + " add(" + b + ", " +
               bcast(emit("u32[] add(" + ks[(i + 1) % 3] + ", " +
                          emit("u32[] constant(" + std::to_string(i) + ")") + ")")) +
               ")");
    }
  }
  return {a, b};
}

// A step: a key split by one hash (the key derivation), whose first word keys a second hash of
// 64 counters (the draw); the draw's bits are compared into a mask that selects activations.
std::string DropoutModule() {
  std::string text =
      "HloModule step\n\nENTRY %main (key: u32[2], x: f32[64]) -> (f32[64], u32[2]) {\n";
  text += "  %key = u32[2] parameter(0)\n";
  text += "  %x = f32[64] parameter(1)\n";
  text += "  %ks0 = u32[1] slice(%key), slice={[0:1]}\n";
  text += "  %k0 = u32[] reshape(%ks0)\n";
  text += "  %ks1 = u32[1] slice(%key), slice={[1:2]}\n";
  text += "  %k1 = u32[] reshape(%ks1)\n";
  text += "  %c0 = u32[2] iota(), iota_dimension=0\n";
  text += "  %c1 = u32[2] constant({2, 3})\n";
  const auto [s0, s1] = ThreefryText(text, "split", "%k0", "%k1", "%c0", "%c1", 2);
  text += "  %newkey = u32[2] add(" + s0 + ", %c0)\n";
  text += "  %sk = u32[1] slice(" + s1 + "), slice={[0:1]}\n";
  text += "  %dk0 = u32[] reshape(%sk)\n";
  text += "  %sk1 = u32[1] slice(" + s0 + "), slice={[1:2]}\n";
  text += "  %dk1 = u32[] reshape(%sk1)\n";
  text += "  %d0 = u32[32] iota(), iota_dimension=0\n";
  text += "  %d1 = u32[32] iota(), iota_dimension=0\n";
  const auto [b0, b1] = ThreefryText(text, "draw", "%dk0", "%dk1", "%d0", "%d1", 32);
  text += "  %bits = u32[64] concatenate(" + b0 + ", " + b1 + "), dimensions={0}\n";
  text += "  %copy.bits = u32[64] copy(%bits)\n";
  text += "  %threshold = u32[] constant(3865470566)\n";
  text += "  %thresholds = u32[64] broadcast(%threshold), dimensions={}\n";
  text += "  %mask = pred[64] compare(%copy.bits, %thresholds), direction=LT\n";
  text += "  %zero = f32[] constant(0)\n";
  text += "  %zeros = f32[64] broadcast(%zero), dimensions={}\n";
  text += "  %dropped = f32[64] select(%mask, %x, %zeros)\n";
  text += "  ROOT %out = (f32[64], u32[2]) tuple(%dropped, %newkey)\n";
  text += "}\n";
  return text;
}

const ir::HloInstruction* Named(const ir::HloModule& module, std::string_view name) {
  for (const ir::HloComputation* c : module.computations) {
    for (const ir::HloInstruction* instr : c->instructions) {
      if (instr->name == name) return instr;
    }
  }
  return nullptr;
}

TEST_CASE("bits, values derived from them, and the key derivation that keys them") {
  const std::string text = DropoutModule();
  ir::ParseResult parsed = ir::ParseHloText(std::make_shared<ir::SourceBuffer>("step.txt", text));
  INFO((parsed.error ? parsed.error->message : std::string()));
  REQUIRE(parsed.ok());
  REQUIRE(parsed.modules.size() == 1);
  const ir::HloModule& module = *parsed.modules[0];
  ModuleAnalyses analyses(module);
  const DataflowAnalysis& dataflow = analyses.Dataflow();
  const RandomProvenance& provenance = analyses.Provenance();
  const auto value_of = [&](std::string_view name) {
    const ir::HloInstruction* instr = Named(module, name);
    REQUIRE(instr != nullptr);
    return dataflow.UniqueValueAt(dataflow.FirstSlot(instr));
  };
  // Two hashes: the split and the draw it keys.
  REQUIRE(provenance.sources().size() == 2);
  CHECK(provenance.Kind(value_of("bits")) == RandomKind::kBits);
  CHECK(provenance.Kind(value_of("copy.bits")) == RandomKind::kBits);
  CHECK(provenance.IsRandom(value_of("copy.bits")));
  CHECK(provenance.Kind(value_of("mask")) == RandomKind::kDerived);
  CHECK(provenance.IsRandom(value_of("mask")));
  // The dropout's output is the activations', not random.
  CHECK(provenance.Kind(value_of("dropped")) == RandomKind::kNone);
  CHECK(provenance.Kind(value_of("thresholds")) == RandomKind::kNone);
  CHECK(provenance.Kind(value_of("d0")) == RandomKind::kNone);
  // The split's bits key the draw and leave the step as the next key: key derivation.
  CHECK(provenance.Kind(value_of("newkey")) == RandomKind::kBits);
  CHECK_FALSE(provenance.IsRandom(value_of("newkey")));
  CHECK_FALSE(provenance.IsRandom(value_of("sk")));
  CHECK(provenance.Source(value_of("bits")) != provenance.Source(value_of("newkey")));
}

// ---- The corpus, against XLA's files ---------------------------------------------------

SPMDSIM_CORPUS_TEST("random values held into the backward are XLA's value for value", program) {
  const auto& files = program.at("files");
  REQUIRE(files.at("live_range").is_string());
  const std::unique_ptr<ir::HloModule> loaded = testing::LoadCorpusModule(files.at("after"));
  REQUIRE(loaded);
  const ir::HloModule& module = *loaded;
  const dump::XlaLiveRange xla_live = testing::LoadCorpusLiveRange(files.at("live_range"));
  const dump::XlaLiveRange* live = &xla_live;
  ModuleAnalyses analyses(module);
  const RngSiteResult rng = AnalyzeRngSites(analyses);
  if (rng.backward_start.empty()) return;  // no backward pass
  std::map<std::string, int64_t> position;
  for (size_t t = 0; t < live->sequence.size(); ++t) position.emplace(live->sequence[t], t);
  // A scanned model has a backward pass in its loop body too: a value crosses either boundary.
  std::vector<int64_t> boundaries;
  for (const auto& [computation, start] : rng.backward_start) {
    REQUIRE(position.count(start) == 1);
    boundaries.push_back(position.at(start));
  }
  std::unordered_map<std::string_view, const ir::HloInstruction*> by_name;
  for (const ir::HloComputation* c : module.computations) {
    for (const ir::HloInstruction* instr : c->instructions) by_name.emplace(instr->name, instr);
  }
  const DataflowAnalysis& dataflow = analyses.Dataflow();
  const RandomProvenance& provenance = analyses.Provenance();
  std::map<std::string, int32_t> ours;  // XLA's value name -> value id
  for (const HloValue& value : dataflow.values()) {
    std::string name = dataflow.ValueName(value);
    if (name.find('{') == std::string::npos) name += "{}";
    ours.emplace(name, value.id);
  }
  std::set<std::string> expected;
  std::set<std::string> found;
  for (const auto& [name, range] : live->ranges) {
    bool crosses = false;
    for (const int64_t b : boundaries) crosses |= range.start < b && range.end >= b;
    if (!crosses) continue;
    const auto value = ours.find(name);
    if (value == ours.end()) continue;
    const ir::Shape& shape = dataflow.SlotShape(dataflow.value(value->second).slot);
    // Scalars (a reduce's init value, a loop bound) hold no random tensor, whatever their
    // padded size (XLA:TPU tiles a u32[] to 512 bytes).
    if (!shape.IsArray() || shape.ElementCount() <= 1) continue;
    const ir::HloInstruction* instr = dataflow.value(value->second).instruction;
    // A constant is in a constant allocation for the whole program: not held by anyone.
    if (instr->opcode == ir::Opcode::kConstant) continue;
    const std::string_view index = std::string_view(name).substr(name.find('{'));
    const bool combined = ir::CollectiveKindOf(instr->opcode) != ir::CollectiveKind::kNone &&
                          instr->operands.size() > 1;
    const bool xla = (!combined && testing::InDrawScope(testing::OpNameOf(*instr, index))) ||
                     testing::MovesRandomValue(*instr, index);
    if (xla) expected.insert(name);
    if (provenance.IsRandom(value->second)) found.insert(name);
  }
  std::vector<std::string> missed;
  std::vector<std::string> extra;
  std::set_difference(expected.begin(), expected.end(), found.begin(), found.end(),
                      std::back_inserter(missed));
  std::set_difference(found.begin(), found.end(), expected.begin(), expected.end(),
                      std::back_inserter(extra));
  for (const std::string& m : missed) {
    const int32_t id = ours.at(m);
    const int32_t src = provenance.Source(id);
    UNSCOPED_INFO("missed " << m << " kind " << RandomKindName(provenance.Kind(id)) << " source "
                            << src << " "
                            << (src >= 0 ? provenance.sources()[src].named_by->name : "")
                            << (src >= 0 && provenance.sources()[src].random ? " random" : "")
                            << " op " << dataflow.value(id).instruction->metadata().op_name);
  }
  for (const std::string& e : extra) UNSCOPED_INFO("extra " << e);
  INFO(expected.size() << " values held across by XLA's op_names, " << found.size()
                       << " by provenance");
  CHECK(missed == std::vector<std::string>{});
  CHECK(extra == std::vector<std::string>{});
}

// Random-bit bytes: the buffers (XLA's sizes; values grouped into buffers by the alias analysis,
// XLA's HloAliasAnalysis rules) holding a random value by the provenance, against those holding
// one of XLA's (testing/xla_random_values.h).
SPMDSIM_CORPUS_TEST("random-bit bytes are XLA's within 1%", program) {
  const auto& files = program.at("files");
  const std::unique_ptr<ir::HloModule> loaded = testing::LoadCorpusModule(files.at("after"));
  REQUIRE(loaded);
  const dump::XlaBufferAssignment assignment =
      testing::LoadCorpusBufferAssignment(files.at("buffer_assignment"));
  const std::map<std::string, int64_t> xla = testing::XlaRandomValues(*loaded, assignment);
  std::map<std::string, int64_t> size_of;
  for (const auto& allocation : assignment.allocations) {
    if (allocation.constant) continue;
    for (const auto& value : allocation.values) size_of.emplace(value.Key(), value.size);
  }
  ModuleAnalyses analyses(*loaded);
  const DataflowAnalysis& dataflow = analyses.Dataflow();
  const AliasAnalysis& alias = analyses.Alias();
  const RandomProvenance& provenance = analyses.Provenance();
  int64_t expected = 0;
  int64_t found = 0;
  std::vector<std::string> missed;
  std::vector<std::string> extra;
  for (const HloBuffer& buffer : alias.buffers()) {
    int64_t size = -1;
    bool ours = false;
    bool theirs = false;
    std::string name;
    for (const int32_t id : buffer.values) {
      const HloValue& value = dataflow.value(id);
      std::string key = dataflow.ValueName(value);
      if (key.find('{') == std::string::npos) key += "{}";
      const auto in_xla = size_of.find(key);
      if (in_xla == size_of.end()) continue;  // not in a non-constant allocation
      size = std::max(size, in_xla->second);
      theirs |= xla.count(key) != 0;
      const ir::Shape& shape = dataflow.SlotShape(value.slot);
      ours |= provenance.IsRandom(id) && value.instruction->opcode != ir::Opcode::kConstant &&
              shape.IsArray() && shape.ElementCount() > 1;
      if (name.empty()) name = key;
    }
    if (size < 0) continue;
    if (theirs) expected += size;
    if (ours) found += size;
    if (theirs && !ours) missed.push_back(name);
    if (ours && !theirs) extra.push_back(name);
  }
  for (const std::string& m : missed) UNSCOPED_INFO("missed " << m);
  for (const std::string& e : extra) UNSCOPED_INFO("extra " << e);
  INFO("XLA's random-bit bytes " << expected << ", the provenance's " << found);
  CHECK(std::llabs(found - expected) * 100 <= expected);
}

}  // namespace
}  // namespace spmdsim::passes
