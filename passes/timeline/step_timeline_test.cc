#include "passes/timeline/step_timeline.h"

#include <catch2/catch.hpp>
#include <memory>

#include "ir/parser.h"

namespace spmdsim::passes {
namespace {

// A while loop around a synchronous all-reduce, then an asynchronous all-gather that overlaps a
// multiply, then a copy after its done.
constexpr const char* kModule = R"(HloModule m, is_scheduled=true, num_partitions=4

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%body (p: (s32[], f32[262144])) -> (s32[], f32[262144]) {
  %p = (s32[], f32[262144]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %x = f32[262144] get-tuple-element(%p), index=1
  %ar = f32[262144] all-reduce(%x), channel_id=1, replica_groups=[1,4]<=[4], use_global_device_ids=true, to_apply=%add
  %one = s32[] constant(1)
  %i2 = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[262144]) tuple(%i2, %ar)
}

%cond (p: (s32[], f32[262144])) -> pred[] {
  %p = (s32[], f32[262144]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main (x: f32[262144]) -> f32[1048576] {
  %x = f32[262144] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[262144]) tuple(%zero, %x)
  %loop = (s32[], f32[262144]) while(%init), condition=%cond, body=%body
  %r = f32[262144] get-tuple-element(%loop), index=1
  %ags = (f32[262144], f32[1048576]) all-gather-start(%r), channel_id=2, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
  %m = f32[262144] multiply(%r, %r)
  %agd = f32[1048576] all-gather-done(%ags)
  ROOT %c = f32[1048576] copy(%agd)
}
)";

std::unique_ptr<ir::HloModule> Parse(const char* text) {
  auto result = ir::ParseHloText(std::make_shared<ir::SourceBuffer>("t.hlo", text));
  REQUIRE(result.ok());
  REQUIRE(result.modules.size() == 1);
  return std::move(result.modules[0]);
}

const StepSlice& SliceOf(const StepTimeline& timeline, std::string_view name) {
  for (const StepSlice& slice : timeline.slices) {
    if (slice.instruction->name == name) return slice;
  }
  FAIL("no slice for " << name);
  return timeline.slices.front();
}

TEST_CASE("step timeline: compute by output bytes, collectives on their own track") {
  const auto module = Parse(kModule);
  CollectiveResult collectives = AnalyzeCollectives(*module);
  // Fixed collective times, so the test states the schedule rather than the topology model.
  for (CollectiveOp& op : collectives.ops)
    op.est_time_us = op.kind == ir::CollectiveKind::kAllReduce ? 10 : 0.5;
  StepTimelineOptions options;
  options.compute_bandwidth_GBps = 1000;  // 1000 bytes per ns
  options.min_slice_us = 1;
  const StepTimeline timeline = SimulateStep(*module, collectives, options);

  // The loop's condition compare (1 us minimum), then the body: the all-reduce holds the
  // compute track for its 10 us, then the add (1 us).
  const StepSlice& compare = SliceOf(timeline, "lt");
  CHECK(compare.kind == StepSliceKind::kCompute);
  CHECK(compare.start_ns == 0);
  CHECK(compare.duration_ns == 1000);
  const StepSlice& all_reduce = SliceOf(timeline, "ar");
  CHECK(all_reduce.kind == StepSliceKind::kCollective);
  CHECK(all_reduce.track() == StepTrack::kCollectives);
  CHECK_FALSE(all_reduce.asynchronous);
  CHECK(all_reduce.start_ns == 1000);
  CHECK(all_reduce.duration_ns == 10000);
  CHECK(SliceOf(timeline, "i2").start_ns == 11000);
  // The while spans one pass of condition and body, and its slice precedes theirs.
  const StepSlice& loop = SliceOf(timeline, "loop");
  CHECK(loop.kind == StepSliceKind::kControlFlow);
  CHECK(loop.start_ns == 0);
  CHECK(loop.duration_ns == 12000);
  CHECK(&timeline.slices.front() == &loop);

  // The all-gather starts at 12 us and runs 0.5 us while the multiply (1 MiB: 1049 ns at
  // 1000 GB/s) runs on the compute track; the done waits for nothing more, since the multiply
  // ends later; the copy (4 MiB) follows the multiply.
  const StepSlice& gather = SliceOf(timeline, "ags");
  CHECK(gather.asynchronous);
  CHECK(gather.start_ns == 12000);
  CHECK(gather.duration_ns == 500);
  const StepSlice& multiply = SliceOf(timeline, "m");
  CHECK(multiply.start_ns == 12000);
  CHECK(multiply.duration_ns == 1049);
  const StepSlice& copy = SliceOf(timeline, "c");
  CHECK(copy.start_ns == 12000 + 1049);
  CHECK(copy.duration_ns == 4194);
  CHECK(timeline.step_ns == 12000 + 1049 + 4194);

  // Positions: a caller's comes after its callees; free instructions take none of the clock.
  CHECK(timeline.position_ns.at("loop") == 12000);
  CHECK(timeline.position_ns.at("agd") == 12000 + 1049);
  CHECK(timeline.position_ns.at("zero") == 0);
}

TEST_CASE("step timeline: a done waits for its collective to end") {
  const auto module = Parse(kModule);
  CollectiveResult collectives = AnalyzeCollectives(*module);
  for (CollectiveOp& op : collectives.ops)
    op.est_time_us = op.kind == ir::CollectiveKind::kAllReduce ? 10 : 5000;
  const StepTimeline timeline = SimulateStep(*module, collectives);
  // The all-gather (5 ms) outlasts the multiply: its done, and so the copy, wait for its end.
  CHECK(SliceOf(timeline, "c").start_ns == 12000 + 5000000);
}

TEST_CASE("step timeline: hostile sizes saturate instead of overflowing") {
  const auto module = Parse(kModule);
  CollectiveResult collectives = AnalyzeCollectives(*module);
  for (CollectiveOp& op : collectives.ops) op.est_time_us = 1e300;
  const StepTimeline timeline = SimulateStep(*module, collectives);
  for (const StepSlice& slice : timeline.slices) {
    CHECK(slice.start_ns >= 0);
    CHECK(slice.duration_ns >= 0);
    // One instruction's own time is capped; a loop's slice spans several of them.
    if (slice.kind != StepSliceKind::kControlFlow) CHECK(slice.duration_ns <= kMaxStepNs);
    CHECK(slice.start_ns + slice.duration_ns <= timeline.step_ns);
  }
  CHECK(timeline.step_ns >= 2 * kMaxStepNs);
}

}  // namespace
}  // namespace spmdsim::passes
