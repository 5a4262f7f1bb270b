// OperandsThatMayShare names, for an instruction's output, every operand that
// CanShareOperandBufferWithUser may accept: the heap simulation asks the rules only about those
// (a combined all-reduce of N operands would otherwise cost N^2 questions). Checked pair by pair
// on modules with one user of each rule and on every corpus dump, under every platform's rules.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "passes/memory/buffer_sharing_rules.h"
#include "passes/memory/memory_analysis.h"
#include "passes/memory/memory_test_modules.h"
#include "testing/corpus_files.h"
#include "testing/corpus_test.h"

namespace spmdsim::passes {
namespace {

using testing::Find;
using testing::Parse;

struct Coverage {
  int64_t accepted = 0;  // pairs the rules accept (each among the named operands)
  int64_t pruned = 0;    // pairs never asked about: their operand is not named
};

// Every (output value, operand slot) pair the heap simulation (an operand's defining slot) or
// the assignment (any slot of an operand holding an assigned value) may ask about: the rules
// accept it only where OperandsThatMayShare names its operand, or says any operand may.
Coverage CheckNamedOperandsCoverAcceptance(const ir::HloModule& module, Platform platform) {
  const DataflowAnalysis df = DataflowAnalysis::Run(module);
  SharingRuleMemo memo;
  Coverage coverage;
  for (const HloValue& value : df.values()) {
    const ir::HloInstruction& user = *value.instruction;
    if (user.operands.empty()) continue;
    const auto may = OperandsThatMayShare(df, user, value.slot, memo, platform);
    for (const ir::HloInstruction* operand : user.operands) {
      const int32_t first = df.FirstSlot(operand);
      if (first < 0) continue;
      const bool named = !may || std::find(may->begin(), may->end(), operand) != may->end();
      for (int32_t slot = first; slot < first + df.SlotCount(operand); ++slot) {
        const bool accepted =
            CanShareOperandBufferWithUser(df, *operand, slot, user, value.slot, memo, platform);
        INFO(PlatformName(platform) << ": " << user.name << " output slot " << value.slot
                                    << ", operand " << operand->name << " slot " << slot);
        if (accepted) CHECK(named);
        coverage.accepted += accepted ? 1 : 0;
        coverage.pruned += named ? 0 : 1;
      }
    }
  }
  return coverage;
}

constexpr Platform kPlatforms[] = {Platform::kCpu, Platform::kGpu, Platform::kTpu};

constexpr std::string_view kWideUsers = R"(HloModule wide_users, is_scheduled=true, num_partitions=8

%add (add.x: f32[], add.y: f32[]) -> f32[] {
  %add.x = f32[] parameter(0)
  %add.y = f32[] parameter(1)
  ROOT %add.s = f32[] add(%add.x, %add.y)
}

%lt (lt.a: f32[], lt.b: f32[], lt.c: f32[], lt.d: f32[], lt.e: s32[], lt.f: s32[]) -> pred[] {
  %lt.a = f32[] parameter(0)
  %lt.b = f32[] parameter(1)
  %lt.c = f32[] parameter(2)
  %lt.d = f32[] parameter(3)
  %lt.e = s32[] parameter(4)
  %lt.f = s32[] parameter(5)
  ROOT %lt.l = pred[] compare(%lt.a, %lt.b), direction=LT
}

ENTRY %main (p: f32[16], q: s32[16], i: s32[], u: f32[4], m: f32[16,16]) -> f32[16] {
  %p = f32[16]{0} parameter(0)
  %q = s32[16]{0} parameter(1)
  %i = s32[] parameter(2)
  %u = f32[4]{0} parameter(3)
  %m = f32[16,16]{1,0} parameter(4)
  %a0 = f32[16]{0} negate(%p)
  %a1 = f32[16]{0} exponential(%p)
  %a2 = f32[16]{0} sine(%p)
  %ar = (f32[16]{0}, f32[16]{0}, f32[16]{0}) all-reduce(%a0, %a1, %a2), channel_id=1, replica_groups=[1,8]<=[8], use_global_device_ids=true, to_apply=%add
  %g1 = f32[16]{0} get-tuple-element(%ar), index=1
  %in = f32[16]{0} custom-call(%g1, %p), custom_call_target="inplace", output_to_operand_aliasing={{}: (0, {})}
  %k0 = f32[16]{0} negate(%g1)
  %k1 = f32[16]{0} cosine(%g1)
  %v = s32[16]{0} negate(%q)
  %sorted = (f32[16]{0}, f32[16]{0}, s32[16]{0}) sort(%k0, %k1, %v), dimensions={0}, to_apply=%lt
  %s1 = f32[16]{0} get-tuple-element(%sorted), index=1
  %w = f32[16]{0} add(%s1, %k0)
  %d = f32[16]{0} dynamic-update-slice(%w, %u, %i)
  %cc = (f32[16]{0}, f32[16]{0}) custom-call(%d, %w, %a1), custom_call_target="update", output_to_operand_aliasing={{1}: (0, {})}
  %c1 = f32[16]{0} get-tuple-element(%cc), index=1
  %mm = f32[16,16]{1,0} negate(%m)
  %bias = f32[16,16]{1,0} exponential(%m)
  %gemm = f32[16,16]{1,0} custom-call(%mm, %mm, %bias), custom_call_target="__cublas$lt$matmul", backend_config={"gemm_backend_config":{"beta":1}}
  %r = f32[16]{0} reduce(%gemm, %a2), dimensions={1}, to_apply=%add
  %cr = f32[16]{0} add(%c1, %r)
  ROOT %out = f32[16]{0} add(%cr, %in)
}
)";

TEST_CASE("the operands named for sharing cover every one the rules accept, user by user") {
  const auto module = Parse(kWideUsers);
  const DataflowAnalysis df = DataflowAnalysis::Run(*module);
  SharingRuleMemo memo;
  const auto named = [&](std::string_view user, ShapeIndex index, Platform platform) {
    const ir::HloInstruction* u = Find(*module, user);
    return OperandsThatMayShare(df, *u, df.SlotAt(u, index), memo, platform);
  };
  using Names = std::vector<const ir::HloInstruction*>;
  // A combined all-reduce: XLA:GPU and XLA:TPU reduce result i in operand i's buffer; XLA:CPU in
  // none.
  CHECK(named("ar", {1}, Platform::kGpu) == Names{Find(*module, "a1")});
  CHECK(named("ar", {2}, Platform::kTpu) == Names{Find(*module, "a2")});
  CHECK(named("ar", {1}, Platform::kCpu) == Names{});
  // A variadic sort writes result i over operand i.
  CHECK(named("sorted", {2}, Platform::kCpu) == Names{Find(*module, "v")});
  // A dynamic-update-slice writes over operand 0; an aliasing custom call over its pair.
  CHECK(named("d", {}, Platform::kCpu) == Names{Find(*module, "w")});
  CHECK(named("cc", {1}, Platform::kCpu) == Names{Find(*module, "d")});
  CHECK(named("cc", {0}, Platform::kCpu) == Names{});
  // An in-place value offered where the user reads it, not where it is defined.
  CHECK(named("in", {}, Platform::kCpu) == Names{Find(*module, "g1")});
  // cuBLASLt's bias on XLA:GPU.
  CHECK(named("gemm", {}, Platform::kGpu) == Names{Find(*module, "bias")});
  // Elementwise users may take any operand: no names.
  CHECK_FALSE(named("w", {}, Platform::kCpu).has_value());

  for (Platform platform : kPlatforms) {
    const Coverage coverage = CheckNamedOperandsCoverAcceptance(*module, platform);
    CHECK(coverage.accepted > 0);
    CHECK(coverage.pruned > 0);
  }
}

SPMDSIM_CORPUS_TEST("the operands named for sharing cover every one the rules accept", program) {
  const std::unique_ptr<ir::HloModule> module =
      spmdsim::testing::LoadCorpusModule(program.at("files").at("after"));
  for (Platform platform : kPlatforms) {
    const Coverage coverage = CheckNamedOperandsCoverAcceptance(*module, platform);
    CHECK(coverage.accepted > 0);
  }
}

// The memory analysis with the offers the rules name and with every offer, as XLA makes them:
// the same buffer assignment and heap, value for value.
void CheckPrunedOffersGiveTheExhaustiveAnswer(const ir::HloModule& module, Platform platform) {
  MemoryAnalysisOptions options;
  options.platform = PlatformProfile::For(platform);
  options.record_placements = true;
  const PeakMemoryResult pruned = AnalyzePeakMemory(module, options);
  options.offer_exhaustively = true;
  const PeakMemoryResult exhaustive = AnalyzePeakMemory(module, options);
  INFO(PlatformName(platform));
  CHECK(pruned.temp_bytes == exhaustive.temp_bytes);
  CHECK(pruned.heap_bytes == exhaustive.heap_bytes);
  CHECK(pruned.max_live_temp_bytes == exhaustive.max_live_temp_bytes);
  CHECK(pruned.peak_bytes == exhaustive.peak_bytes);
  CHECK(pruned.temp_buffer_count == exhaustive.temp_buffer_count);
  REQUIRE(pruned.placements.size() == exhaustive.placements.size());
  for (size_t i = 0; i < pruned.placements.size(); ++i) {
    INFO(pruned.placements[i].value);
    CHECK(pruned.placements[i].value == exhaustive.placements[i].value);
    CHECK(pruned.placements[i].offset == exhaustive.placements[i].offset);
  }
}

// A combined all-reduce of `n` operands (more than the 64 newest allocations a buffer is
// offered one by one), some repeated, of two sizes, whose results are read at shuffled times
// by outputs and by temporaries: results, operands and outputs meet in many allocations.
std::string CombinedAllReduceModule(int n, uint32_t seed) {
  std::mt19937 random(seed);
  const auto shape = [](int i) { return i % 3 == 0 ? "f32[32]{0}" : "f32[16]{0}"; };
  std::string text =
      "HloModule combined, is_scheduled=true, num_partitions=8\n\n"
      "%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
      "  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n\n"
      "ENTRY %main {\n";
  std::vector<int> operand_of(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    text +=
        "  %p" + std::to_string(i) + " = " + shape(i) + " parameter(" + std::to_string(i) + ")\n";
    text +=
        "  %t" + std::to_string(i) + " = " + shape(i) + " negate(%p" + std::to_string(i) + ")\n";
    // Now and then an operand repeats an earlier one of its size.
    operand_of[static_cast<size_t>(i)] = i >= 3 && random() % 7 == 0 ? i - 3 : i;
  }
  std::string results;
  std::string operands;
  for (int i = 0; i < n; ++i) {
    results += std::string(i == 0 ? "" : ", ") + shape(i);
    operands +=
        std::string(i == 0 ? "" : ", ") + "%t" + std::to_string(operand_of[static_cast<size_t>(i)]);
  }
  text += "  %ar = (" + results + ") all-reduce(" + operands +
          "), channel_id=1, replica_groups=[1,8]<=[8], use_global_device_ids=true, "
          "to_apply=%add\n";
  std::vector<int> order(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  std::shuffle(order.begin(), order.end(), random);
  std::string outputs;
  std::string output_shapes;
  for (int i : order) {
    const std::string k = std::to_string(i);
    text += "  %g" + k + " = " + shape(i) + " get-tuple-element(%ar), index=" + k + "\n";
    // A third of the results pass through a temporary before reaching an output.
    std::string read = "%g" + k;
    if (random() % 3 == 0) {
      text += "  %u" + k + " = " + shape(i) + " exponential(" + read + ")\n";
      read = "%u" + k;
    }
    text += "  %o" + k + " = " + shape(i) + " add(" + read + ", %p" + k + ")\n";
    outputs += std::string(outputs.empty() ? "" : ", ") + "%o" + k;
    output_shapes += std::string(output_shapes.empty() ? "" : ", ") + shape(i);
  }
  text += "  ROOT %out = (" + output_shapes + ") tuple(" + outputs + ")\n}\n";
  return text;
}

TEST_CASE("pruned offers give the exhaustive answer on combined all-reduces") {
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    const auto module = Parse(CombinedAllReduceModule(150, seed));
    for (Platform platform : kPlatforms) {
      INFO("seed " << seed);
      CheckPrunedOffersGiveTheExhaustiveAnswer(*module, platform);
    }
  }
}

SPMDSIM_CORPUS_TEST("pruned offers give the exhaustive answer on every dump", program) {
  const std::unique_ptr<ir::HloModule> module =
      spmdsim::testing::LoadCorpusModule(program.at("files").at("after"));
  for (Platform platform : kPlatforms) CheckPrunedOffersGiveTheExhaustiveAnswer(*module, platform);
}

}  // namespace
}  // namespace spmdsim::passes
