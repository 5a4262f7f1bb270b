// Every dump in testdata parses, round-trips through the printer, and `stats` agrees with counts
// taken from the raw text by a different method (a line scanner, not the parser).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "dump/file_reader.h"
#include "dump/module_loader.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/stats_analysis.h"

namespace spmdsim::analyzer {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> HloFiles() {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(SPMDSIM_TESTDATA_DIR "/dumps")) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.find("_optimizations") != std::string::npos &&
        name.find("-buffer-assignment") == std::string::npos &&
        name.find("-memory-usage-report") == std::string::npos &&
        name.find("-live-range") == std::string::npos) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Counts taken by scanning lines: an instruction line is "[ROOT ]%name = <shape> <opcode>(".
struct TextCounts {
  int64_t instructions = 0;
  int64_t computations = 0;
  std::map<std::string, int64_t> opcodes;
};

TextCounts CountByScanning(const std::string& text) {
  TextCounts counts;
  std::istringstream in(text);
  std::string line;
  bool in_body = false;
  while (std::getline(in, line)) {
    if (!in_body) {
      // "%c (p: f32[]) -> f32[] {", or older XLA's "ENTRY main.5_spmd {" without a signature.
      if (!line.empty() && line.back() == '{' && line.find(" = ") == std::string::npos &&
          line.find("HloModule") != 0) {
        in_body = true;
        ++counts.computations;
      }
      continue;
    }
    if (line == "}" || line.starts_with("} //")) {  // older XLA: "} // computation name"
      in_body = false;
      continue;
    }
    size_t pos = line.find_first_not_of(' ');
    if (pos == std::string::npos) continue;
    if (line.compare(pos, 5, "ROOT ") == 0) pos += 5;
    const size_t eq = line.find(" = ", pos);
    if (eq == std::string::npos) continue;
    ++counts.instructions;
    // Skip the shape: a balanced (...) tuple, or one token without spaces.
    size_t p = eq + 3;
    if (line[p] == '(') {
      int depth = 0;
      for (; p < line.size(); ++p) {
        if (line[p] == '(') ++depth;
        if (line[p] == ')' && --depth == 0) break;
      }
      ++p;
    } else {
      p = line.find(' ', p);
    }
    const size_t start = p + 1;
    const size_t paren = line.find('(', start);
    counts.opcodes[line.substr(start, paren - start)]++;
  }
  return counts;
}

TEST_CASE("every testdata dump parses, round-trips and matches a line scan") {
  const auto files = HloFiles();
  REQUIRE(files.size() >= 20);  // before and after optimizations of every program
  for (const std::string& file : files) {
    INFO(file);
    auto text = dump::ReadFileContents(file);
    REQUIRE(text);
    auto source = std::make_shared<ir::SourceBuffer>(file, *text);
    ir::ParseResult first = ir::ParseHloText(source);
    INFO((first.error ? first.error->ToString() : ""));
    REQUIRE(first.ok());
    REQUIRE(first.modules.size() == 1);
    const ir::HloModule& module = *first.modules[0];
    CHECK(module.warning_count == 0);

    // Round trip: print, parse again, print again; the two prints are identical, and the
    // second IR has the same computations, instructions, shapes and operands.
    const std::string printed = ir::PrintModule(module);
    ir::ParseResult second =
        ir::ParseHloText(std::make_shared<ir::SourceBuffer>(file + " (printed)", printed));
    INFO((second.error ? second.error->ToString() : ""));
    REQUIRE(second.ok());
    const ir::HloModule& again = *second.modules[0];
    CHECK(ir::PrintModule(again) == printed);
    REQUIRE(again.computations.size() == module.computations.size());
    for (size_t c = 0; c < module.computations.size(); ++c) {
      const auto& a = module.computations[c]->instructions;
      const auto& b = again.computations[c]->instructions;
      REQUIRE(a.size() == b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        if (a[i]->name != b[i]->name || !(a[i]->shape == b[i]->shape) ||
            a[i]->opcode != b[i]->opcode || a[i]->operands.size() != b[i]->operands.size()) {
          FAIL("instruction differs after round trip: " << a[i]->name);
        }
        if (a[i]->sharding()) {
          REQUIRE(b[i]->sharding());
          CHECK(*a[i]->sharding() == *b[i]->sharding());
        }
        if (a[i]->replica_groups())
          CHECK(a[i]->replica_groups()->Expand() == b[i]->replica_groups()->Expand());
        CHECK(a[i]->metadata().op_name == b[i]->metadata().op_name);
        CHECK(a[i]->metadata().source_line == b[i]->metadata().source_line);
      }
    }

    // stats against the line scanner. The scan sees what is printed: not the get-tuple-elements
    // of compact operands ("%t#3") nor the computations of XLA's async sugar ("X-start"), which
    // the IR adds as XLA's parser does; those are checked against the uncompacted text below.
    const passes::StatsResult stats = passes::ComputeStats(module);
    const TextCounts counts = CountByScanning(*text);
    std::map<std::string, int64_t> by_opcode(stats.instructions_by_opcode.begin(),
                                             stats.instructions_by_opcode.end());
    int64_t implicit_instructions = 0;
    int64_t implicit_computations = 0;
    for (const ir::HloComputation* computation : module.computations) {
      implicit_computations += computation->implicit ? 1 : 0;
      for (const ir::HloInstruction* instr : computation->instructions) {
        if (!instr->implicit && !computation->implicit) continue;
        ++implicit_instructions;
        if (--by_opcode[std::string(instr->opcode_name())] == 0) {
          by_opcode.erase(std::string(instr->opcode_name()));
        }
      }
    }
    CHECK(stats.instruction_count - implicit_instructions == counts.instructions);
    CHECK(stats.computation_count - implicit_computations == counts.computations);
    CHECK(by_opcode == counts.opcodes);
    // Collectives: the scan's counts of the synchronous and -start forms.
    for (const auto& [kind, count] : stats.collectives) {
      const auto opcode_count = [&](const std::string& opcode) {
        auto it = counts.opcodes.find(opcode);
        return it == counts.opcodes.end() ? int64_t{0} : it->second;
      };
      CHECK(count == opcode_count(kind) + opcode_count(kind + "-start"));
    }
  }
}

// XLA writes the after-optimizations dump with compact get-tuple-element operands ("%t#3") and
// compiled.as_text() without them; both are the same module, so the IR of one must count the same
// instructions, opcode by opcode, as the IR of the other (tools/gen_dumps.py keeps as_text() where
// it differs from the dump).
// Instructions by opcode, outside async-wrapped computations, an async-start/done that wraps an
// X counted as "X-start"/"X-done": the dump writes an async-start wrapping an all-reduce where
// as_text() writes all-reduce-start, two spellings of one module.
std::map<std::string, int64_t> AsyncNormalizedOpcodes(const ir::HloModule& module) {
  std::set<const ir::HloComputation*> wrapped;
  for (const ir::HloComputation* c : module.computations) {
    for (const ir::HloInstruction* instr : c->instructions) {
      if (instr->opcode == ir::Opcode::kAsyncStart && instr->Called("calls") != nullptr) {
        wrapped.insert(instr->Called("calls"));
      }
    }
  }
  std::map<std::string, int64_t> out;
  for (const ir::HloComputation* c : module.computations) {
    if (wrapped.count(c) > 0) continue;
    for (const ir::HloInstruction* instr : c->instructions) {
      std::string name(instr->opcode_name());
      const ir::HloInstruction* start = instr;  // an update or done: the start it ends
      while (
          start->opcode != ir::Opcode::kAsyncStart && !start->operands.empty() &&
          (start->opcode == ir::Opcode::kAsyncUpdate || start->opcode == ir::Opcode::kAsyncDone)) {
        start = start->operands[0];
      }
      const ir::HloComputation* callee = start->Called("calls");
      if (callee != nullptr && callee->root != nullptr) {
        const std::string root(ir::OpcodeName(callee->root->opcode));
        if (instr->opcode == ir::Opcode::kAsyncStart) name = root + "-start";
        if (instr->opcode == ir::Opcode::kAsyncUpdate) name = root + "-update";
        if (instr->opcode == ir::Opcode::kAsyncDone) name = root + "-done";
      }
      ++out[name];
    }
  }
  return out;
}

TEST_CASE("a compact dump and compiled.as_text() of the same module give the same IR") {
  std::ifstream in(SPMDSIM_TESTDATA_DIR "/manifest.json");
  const nlohmann::json manifest = nlohmann::json::parse(in);
  int compared = 0;
  int compact = 0;
  for (const auto& program : manifest.at("programs")) {
    for (const auto& module : program.at("modules")) {
      const auto& files = module.at("files");
      if (files.at("compiled_as_text").is_null()) continue;
      INFO(program.at("name").get<std::string>() << " " << module.at("jit_name"));
      const auto load = [](const std::string& relative) {
        auto text = dump::ReadFileContents(std::string(SPMDSIM_TESTDATA_DIR) + "/" + relative);
        REQUIRE(text);
        return ir::ParseHloText(std::make_shared<ir::SourceBuffer>(relative, std::move(*text)));
      };
      const ir::ParseResult dump = load(files.at("after"));
      const ir::ParseResult as_text = load(files.at("compiled_as_text"));
      REQUIRE(dump.ok());
      REQUIRE(as_text.ok());
      const passes::StatsResult a = passes::ComputeStats(*dump.modules[0]);
      const passes::StatsResult b = passes::ComputeStats(*as_text.modules[0]);
      CHECK(AsyncNormalizedOpcodes(*dump.modules[0]) ==
            AsyncNormalizedOpcodes(*as_text.modules[0]));
      CHECK(a.collectives == b.collectives);
      for (const ir::HloComputation* c : dump.modules[0]->computations) {
        for (const ir::HloInstruction* instr : c->instructions) compact += instr->implicit ? 1 : 0;
      }
      ++compared;
    }
  }
  CHECK(compared >= 40);
  CHECK(compact > 1000);  // the newest XLA's dumps do use the compact form
}

TEST_CASE("collective counts on the replicated-threefry dump are what XLA inserted") {
  // dp8 replicated threefry: each of the 4 dropout sites hashes 1/8 of the counters, then
  // all-gathers and permutes; gradients are reduced by one combined all-reduce. The scan above
  // checks the parser against the text; this pins the numbers so a regression is visible.
  dump::LoadOutcome outcome = dump::LoadInputs(SPMDSIM_TESTDATA_DIR "/dumps/dp8_replicated_remat");
  REQUIRE_FALSE(outcome.failure);
  for (const dump::ModuleInput& input : outcome.inputs.modules) {
    if (input.stage != dump::ModuleStage::kAfterOptimizations) continue;
    const passes::StatsResult stats = passes::ComputeStats(*input.module);
    CHECK(stats.collectives.at("all-reduce") == 1);
    CHECK(stats.collectives.at("all-gather") == 16);
    CHECK(stats.collectives.at("collective-permute") == 32);
    CHECK(stats.num_partitions == 8);
    CHECK_FALSE(input.files.buffer_assignment.empty());
    CHECK_FALSE(input.files.memory_usage_report.empty());
    CHECK_FALSE(input.files.memory_analysis.empty());
  }
}

}  // namespace
}  // namespace spmdsim::analyzer
