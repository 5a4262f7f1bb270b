// Peak memory on small modules whose figures can be worked out by hand. The calibration against
// XLA's own figures on every real dump is analyzer/model/memory_calibration_test.cc.
#include "passes/memory/memory_analysis.h"

#include <catch2/catch.hpp>

#include "passes/memory/memory_test_modules.h"
#include "passes/module_facts.h"

namespace spmdsim::passes {
namespace {

using testing::kLoopModule;
using testing::Parse;

TEST_CASE("an elementwise chain reuses its dying operand's buffer") {
  const auto module = Parse(R"(HloModule chain, is_scheduled=true

ENTRY %main (p: f32[1024]) -> f32[256] {
  %p = f32[1024]{0} parameter(0)
  %e1 = f32[1024]{0} exponential(%p)
  %e2 = f32[1024]{0} negate(%e1)
  %e3 = f32[1024]{0} sqrt(%e2)
  ROOT %out = f32[256]{0} slice(%e3), slice={[0:256]}
}
)");
  const PeakMemoryResult r = AnalyzePeakMemory(*module);
  CHECK(r.argument_bytes == 4096);
  CHECK(r.output_bytes == 1024);
  CHECK(r.alias_bytes == 0);
  // e1, e2, e3 take turns in one 4 KiB slot; the output has its own allocation.
  CHECK(r.temp_bytes == 4096);
  CHECK(r.heap_bytes == 4096);
  CHECK(r.max_live_temp_bytes == 4096);
  CHECK(r.peak_bytes == 4096 + 1024 + 4096);
  CHECK(r.schedule == "module schedule");
}

TEST_CASE("temporaries that end before an output is defined live in the output's space") {
  const auto module = Parse(R"(HloModule chain, is_scheduled=true

ENTRY %main (p: f32[1024]) -> f32[1024] {
  %p = f32[1024]{0} parameter(0)
  %e1 = f32[1024]{0} exponential(%p)
  %e2 = f32[1024]{0} negate(%e1)
  ROOT %out = f32[1024]{0} add(%e2, %p)
}
)");
  // As in XLA's buffer assignment: e1 and e2 fit in the output allocation before `out` is
  // written (`out` may overwrite its dying operand e2 in place), so there is no temp at all.
  const PeakMemoryResult r = AnalyzePeakMemory(*module);
  CHECK(r.temp_bytes == 0);
  CHECK(r.temp_buffer_count == 0);
  CHECK(r.peak_bytes == 4096 + 4096);
}

// e1 is read by e3 and e4, so it lives while e2, e3 and e4 take turns in one slot.
constexpr char kFanModule[] = R"(HloModule fan, is_scheduled=true

ENTRY %main (p: f32[1024]) -> f32[256] {
  %p = f32[1024]{0} parameter(0)
  %e1 = f32[1024]{0} exponential(%p)
  %e2 = f32[1024]{0} negate(%e1)
  %e3 = f32[1024]{0} add(%e1, %e2)
  %e4 = f32[1024]{0} add(%e3, %e1)
  ROOT %out = f32[256]{0} slice(%e4), slice={[0:256]}
}
)";

TEST_CASE("operands still needed later keep their buffers") {
  const auto module = Parse(kFanModule);
  const PeakMemoryResult r = AnalyzePeakMemory(*module);
  // e1 lives until e4; e2, e3 and e4 take turns in a second slot.
  CHECK(r.temp_bytes == 8192);
  CHECK(r.peak_instruction == "e2");
  REQUIRE(r.live_at_peak.size() >= 2);
  CHECK(r.live_at_peak[0].size_bytes == 4096);
}

TEST_CASE("resized values: the buffer takes the new size and the heap is packed again") {
  const auto module = Parse(kFanModule);
  const PeakMemoryResult compiled = AnalyzePeakMemory(*module);
  MemoryAnalysisOptions options;
  // e1, held until e4, grown to 64 KiB: the heap is its 64 KiB and the 4 KiB slot the others
  // share. Shrunk to 1 KiB: 1 KiB + 4 KiB. A name that is no value changes nothing.
  options.resized_values = {{"e1", 65536}, {"no_such_value", 1}};
  const PeakMemoryResult grown = AnalyzePeakMemory(*module, options);
  CHECK(grown.temp_bytes == 65536 + 4096);
  CHECK(grown.peak_bytes == compiled.peak_bytes - compiled.temp_bytes + 65536 + 4096);
  options.resized_values = {{"e1", 1024}};
  CHECK(AnalyzePeakMemory(*module, options).temp_bytes == 1024 + 4096);
  // The parameter and the output keep their sizes: only temporaries are resized.
  options.resized_values = {{"p", 1}, {"out", 1}};
  CHECK(AnalyzePeakMemory(*module, options).peak_bytes == compiled.peak_bytes);
}

TEST_CASE("the loop module: donation, the loop's tuple table combined with the heap") {
  const auto module = Parse(kLoopModule);
  const PeakMemoryResult r = AnalyzePeakMemory(*module);
  CHECK(r.argument_bytes == 64);          // a and b, 32 bytes each
  CHECK(r.alias_bytes == 32);             // a is donated to output {0}
  CHECK(r.output_bytes == 32 + 32 + 16);  // a's buffer, sum, the root tuple table
  // XLA makes the allocations a, b, the loop's buffer, neg, out's table, the while state's table
  // (a temp), the three constants, then the heap. std::partition swaps the table with the last
  // constant and keeps the heap last: the table (2 pointers) at 0, the heap at 64.
  CHECK(r.temp_bytes == 64 + r.heap_bytes);
  CHECK(r.tuple_table_bytes == r.temp_bytes - r.heap_bytes);
  CHECK(r.peak_bytes == r.argument_bytes + r.output_bytes - r.alias_bytes + r.temp_bytes);
  // The listing names every argument and output allocation too.
  bool listed_b = false;
  for (const LiveBuffer& b : r.live_at_peak) listed_b |= b.instruction == "b";
  CHECK(listed_b);
}

TEST_CASE("a module not partitioned yet is sized per device from its shardings") {
  const auto module = Parse(R"(HloModule global, num_partitions=8

ENTRY %main (x: f32[1024,64], w: f32[64,64]) -> f32[1024,32] {
  %x = f32[1024,64]{1,0} parameter(0), sharding={devices=[8,1]<=[8]}
  %w = f32[64,64]{1,0} parameter(1), sharding={replicated}
  %h = f32[1024,64]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %t = f32[1024,64]{1,0} tanh(%h)
  ROOT %y = f32[1024,32]{1,0} slice(%t), slice={[0:1024], [0:32]}, sharding={devices=[8,1]<=[8]}
}
)");
  REQUIRE(IsUnpartitioned(*module));
  MemoryAnalysisOptions options;
  options.per_device_from_shardings = true;
  const PeakMemoryResult r = AnalyzePeakMemory(*module, options);
  CHECK(r.per_device_from_shardings);
  CHECK(r.schedule == "dependency order (module not scheduled)");
  CHECK(r.argument_bytes == 1024 * 64 * 4 / 8 + 64 * 64 * 4);
  CHECK(r.output_bytes == 1024 * 32 * 4 / 8);
  // h and t inherit the batch split from x: one 32 KiB slot (t reuses h's buffer).
  CHECK(r.temp_bytes == 1024 * 64 * 4 / 8);
  const PeakMemoryResult global = AnalyzePeakMemory(*module);
  CHECK(global.argument_bytes == 1024 * 64 * 4 + 64 * 64 * 4);
}

TEST_CASE("the memory curve has at most the requested points, each a maximum") {
  const auto module = Parse(kLoopModule);
  MemoryAnalysisOptions options;
  options.timeline_points = 4;
  const PeakMemoryResult r = AnalyzePeakMemory(*module, options);
  REQUIRE(!r.timeline.empty());
  CHECK(r.timeline.size() <= 4);
  int64_t high = 0;
  for (const TimelinePoint& p : r.timeline) high = std::max(high, p.live_bytes);
  CHECK(high <= r.peak_bytes);
  CHECK(high >= r.argument_bytes + r.output_bytes - r.alias_bytes);
}

TEST_CASE("XLA:TPU rules: a heap per memory space, 16 KiB slots, 512-byte tuple tables") {
  const auto module = Parse(R"(HloModule tpu, is_scheduled=true

ENTRY %main (p: f32[8,128]) -> f32[8,128] {
  %p = f32[8,128]{1,0:T(8,128)} parameter(0)
  %a = f32[8,128]{1,0:T(8,128)S(1)} copy(%p)
  %b = f32[8,128]{1,0:T(8,128)S(1)} exponential(%a)
  %c = f32[8,128]{1,0:T(8,128)} copy(%b)
  %t = (f32[8,128]{1,0:T(8,128)}, f32[8,128]{1,0:T(8,128)}) tuple(%c, %c)
  %g = f32[8,128]{1,0:T(8,128)} get-tuple-element(%t), index=0
  ROOT %out = f32[8,128]{1,0:T(8,128)} negate(%g)
}
)");
  MemoryAnalysisOptions tpu;
  tpu.platform = PlatformProfile::For(Platform::kTpu);
  const PeakMemoryResult r = AnalyzePeakMemory(*module, tpu);
  CHECK(r.argument_bytes == 4096);
  CHECK(r.output_bytes == 4096);
  // HBM: c alone in the heap. The allocations are p, out, t's table (512 B), then the heap:
  // std::partition leaves the table first and the heap at the next 16 KiB boundary.
  CHECK(r.heap_bytes == 4096);
  CHECK(r.temp_bytes == 16384 + 4096);
  CHECK(r.tuple_table_bytes == 16384);
  // VMEM: a and b, b in a's space as it dies; not in the HBM figures.
  REQUIRE(r.memory_spaces.size() == 1);
  CHECK(r.memory_spaces[0].space == 1);
  CHECK(r.memory_spaces[0].name == "VMEM");
  CHECK(r.memory_spaces[0].temp_bytes == 4096);
  CHECK(r.memory_spaces[0].value_count == 2);
  for (const LiveBuffer& b : r.live_at_peak) CHECK(b.instruction != "a");

  // Asked for VMEM: its heap is the temp, the peak lists its values, HBM is the other space.
  MemoryAnalysisOptions vmem = tpu;
  vmem.memory_space = 1;
  const PeakMemoryResult v = AnalyzePeakMemory(*module, vmem);
  CHECK(v.memory_space_name == "VMEM");
  CHECK(v.temp_bytes == 4096);
  CHECK(v.argument_bytes == 0);
  CHECK(v.peak_bytes == 4096);
  REQUIRE(v.memory_spaces.size() == 1);
  CHECK(v.memory_spaces[0].space == 0);
  CHECK(v.memory_spaces[0].temp_bytes == r.temp_bytes);
  REQUIRE_FALSE(v.live_at_peak.empty());
  for (const LiveBuffer& b : v.live_at_peak) CHECK((b.instruction == "a" || b.instruction == "b"));

  // The same module by XLA:CPU's rules: the layouts still say S(1); c takes the output's
  // allocation (it dies as out is defined), which leaves the table of two 8-byte pointers.
  const PeakMemoryResult cpu = AnalyzePeakMemory(*module);
  CHECK(cpu.memory_spaces.size() == 1);
  CHECK(cpu.heap_bytes == 0);
  CHECK(cpu.temp_bytes == 16);
}

TEST_CASE("XLA:TPU rules: a temporary never takes an output's allocation") {
  const auto module = Parse(R"(HloModule tpu_reuse, is_scheduled=true

ENTRY %main (p: f32[8,128]) -> f32[8,128] {
  %p = f32[8,128]{1,0:T(8,128)} parameter(0)
  %e = f32[8,128]{1,0:T(8,128)} exponential(%p)
  %s = f32[8,128]{1,0:T(8,128)} sqrt(%e)
  %n = f32[8,128]{1,0:T(8,128)} negate(%p)
  ROOT %out = f32[8,128]{1,0:T(8,128)} add(%s, %n)
}
)");
  // By XLA:CPU's rules e (dead before out) may live in out's allocation; XLA:TPU gives it a slot.
  MemoryAnalysisOptions tpu;
  tpu.platform = PlatformProfile::For(Platform::kTpu);
  const PeakMemoryResult on_tpu = AnalyzePeakMemory(*module, tpu);
  const PeakMemoryResult on_cpu = AnalyzePeakMemory(*module);
  CHECK(on_tpu.temp_buffer_count > on_cpu.temp_buffer_count);
  CHECK(on_tpu.temp_bytes >= 4096);
}

}  // namespace
}  // namespace spmdsim::passes
