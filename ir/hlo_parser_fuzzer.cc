// libFuzzer target over everything in spmdsim that reads untrusted text:
//   - the module parser, with a round trip: parse -> print -> parse (must succeed) -> print (must
//     equal the first print), and the stats of both parses must agree;
//   - the IR queries and analyses run on what parsed (shape sizes, shard shapes, device lists,
//     replica-group expansion, the counts `spmdsim stats` reports), as the commands run them;
//   - the standalone sub-parsers (ParseShape, ParseSharding, ParseReplicaGroups) and their
//     print -> parse round trip.
// The gzip reader in front of the parser is dump/'s, fuzzed by dump/companion_files_fuzzer.cc.
//
// A finding is a sanitizer report (ASan/UBSan), a timeout, an OOM, or an abort() from a round-trip
// check below, which prints the texts involved first. Build and run with tools/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "ir/attribute_parsers.h"
#include "ir/checked_math.h"
#include "ir/parser.h"
#include "ir/printer.h"

namespace spmdsim {

namespace {

// Device ids the IR queries may expand per input. A sharding or replica-group list may name up to
// ir::kMaxDevices devices; expanding one per instruction of a large input is work the analyses
// legitimately do, so the harness caps it to keep executions fast rather than report it.
constexpr int64_t kExpansionBudget = int64_t{1} << 16;

// Keeps a computed value alive without doing arithmetic on it (sizes may be near INT64_MAX).
void Use(int64_t value) {
  static volatile uint64_t sink = 0;
  sink = sink ^ static_cast<uint64_t>(value);
}

[[noreturn]] void RoundTripFailure(std::string_view what, std::string_view first,
                                   std::string_view second) {
  std::fprintf(stderr, "round-trip failure: %.*s\n--- first ---\n%.*s\n--- second ---\n%.*s\n",
               static_cast<int>(what.size()), what.data(), static_cast<int>(first.size()),
               first.data(), static_cast<int>(second.size()), second.data());
  std::abort();
}

// Calls what an analysis calls on one instruction; the results only have to be computed without
// a sanitizer report.
void ExerciseInstruction(const ir::HloInstruction& instr, int64_t& budget) {
  Use(instr.shape.ByteSize());
  Use(instr.shape.LeafBytes());
  Use(instr.shape.ElementCount());
  Use(static_cast<int64_t>(instr.shape.ToString(false).size()));
  Use(instr.shape.Subshape({0}) != nullptr);
  if (instr.sharding()) {
    const ir::Sharding& s = *instr.sharding();
    Use(s.TileCount());
    Use(s.DataRank());
    Use(s.ShardShape(instr.shape).LeafBytes());
    if (s.kind == ir::Sharding::Kind::kTiled && budget >= s.TileCount()) {
      budget -= s.TileCount();
      Use(static_cast<int64_t>(s.Devices().size()));
    }
  }
  if (instr.replica_groups()) {
    const ir::ReplicaGroups& g = *instr.replica_groups();
    Use(g.GroupSize());
    Use(g.NumGroups());
    const int64_t members = ir::SaturatingMul(g.GroupSize(), g.NumGroups());
    if (budget >= members) {
      budget -= members;
      for (const auto& group : g.Expand()) Use(static_cast<int64_t>(group.size()));
    }
  }
  Use(static_cast<int64_t>(instr.metadata().Source().size()));
  for (const ir::CalledComputation& called : instr.called_computations()) {
    Use(called.computation->IsFusionComputation());
  }
}

// What must not change when a module is printed and parsed again: the counts and sizes
// `spmdsim stats` reports, computed from the IR alone (ir/ uses nothing of the layers above it).
std::string StatsKey(const ir::HloModule& module) {
  std::string key = std::string(module.name) + "|" + std::to_string(module.computations.size()) +
                    "|" + std::to_string(module.num_partitions) + "|" +
                    std::to_string(module.replica_count) + "|" + (module.is_scheduled ? "s" : "u");
  std::map<std::string_view, int64_t> by_opcode;
  std::map<std::string_view, int64_t> targets;
  int64_t instructions = 0;
  for (const ir::HloComputation* computation : module.computations) {
    for (const ir::HloInstruction* instr : computation->instructions) {
      ++instructions;
      ++by_opcode[ir::OpcodeName(instr->opcode)];
      if (!instr->custom_call_target().empty()) ++targets[instr->custom_call_target()];
    }
  }
  key += "|" + std::to_string(instructions);
  if (module.entry != nullptr) {
    int64_t parameter_bytes = 0;
    for (const ir::HloInstruction* param : module.entry->parameters) {
      if (param != nullptr) parameter_bytes += param->shape.LeafDataBytes();
    }
    key += "|" + std::to_string(module.entry->parameters.size()) + "|" +
           std::to_string(parameter_bytes);
    if (module.entry->root != nullptr) {
      key += "|" + std::to_string(module.entry->root->shape.LeafDataBytes());
    }
  }
  for (const auto& [name, count] : by_opcode)
    key += "|" + std::string(name) + "=" + std::to_string(count);
  for (const auto& [name, count] : targets)
    key += "|t:" + std::string(name) + "=" + std::to_string(count);
  return key;
}

std::string PrintAll(const ir::ParseResult& result, std::string& stats) {
  std::string printed;
  for (const auto& module : result.modules) {
    printed += ir::PrintModule(*module);
    stats += StatsKey(*module) + "\n";
  }
  return printed;
}

void FuzzModuleText(std::string text) {
  auto source = std::make_shared<ir::SourceBuffer>("fuzz.hlo", std::move(text));
  (void)ir::LooksLikeHloText(source->text());
  const ir::ParseResult first = ir::ParseHloText(source);
  if (!first.ok()) {
    (void)first.error->ToString();
    return;
  }
  int64_t budget = kExpansionBudget;
  for (const auto& module : first.modules) {
    for (const ir::Diagnostic& warning : module->warnings) (void)warning.ToString();
    for (const ir::HloComputation* computation : module->computations) {
      for (const ir::HloInstruction* instr : computation->instructions) {
        ExerciseInstruction(*instr, budget);
      }
    }
  }
  std::string first_stats;
  const std::string printed = PrintAll(first, first_stats);
  auto printed_source = std::make_shared<ir::SourceBuffer>("printed.hlo", printed);
  const ir::ParseResult second = ir::ParseHloText(printed_source);
  if (!second.ok())
    RoundTripFailure("printed text does not parse", printed, second.error->ToString());
  std::string second_stats;
  const std::string reprinted = PrintAll(second, second_stats);
  if (reprinted != printed) RoundTripFailure("printing is not stable", printed, reprinted);
  if (second_stats != first_stats) {
    RoundTripFailure("stats changed by printing", first_stats, second_stats);
  }
}

// Each sub-parser on the whole input; what parses must print to text that parses to an equal
// value.
void FuzzSubParsers(std::string_view input) {
  if (auto shape = ir::ParseShape(input)) {
    const std::string printed = shape->ToString();
    std::string error;
    auto again = ir::ParseShape(printed, &error);
    if (!again) RoundTripFailure("printed shape does not parse", printed, error);
    if (!(*again == *shape))
      RoundTripFailure("shape changed by printing", printed, again->ToString());
    Use(shape->ByteSize());
    Use(shape->LeafBytes());
  }
  if (auto sharding = ir::ParseSharding(input)) {
    const std::string printed = sharding->ToString();
    std::string error;
    auto again = ir::ParseSharding(printed, &error);
    if (!again) RoundTripFailure("printed sharding does not parse", printed, error);
    if (!(*again == *sharding)) {
      RoundTripFailure("sharding changed by printing", printed, again->ToString());
    }
  }
  if (auto groups = ir::ParseReplicaGroups(input)) {
    const std::string printed = groups->ToString();
    std::string error;
    auto again = ir::ParseReplicaGroups(printed, &error);
    if (!again) RoundTripFailure("printed replica groups do not parse", printed, error);
    if (!(*again == *groups)) {
      RoundTripFailure("replica groups changed by printing", printed, again->ToString());
    }
  }
}

}  // namespace
}  // namespace spmdsim

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  spmdsim::FuzzSubParsers(input);
  spmdsim::FuzzModuleText(std::string(input));
  return 0;
}
