// Readers of XLA's memory files on excerpts in the formats testdata/README.md documents, and on
// text that is not such a file.
#include "dump/xla_memory_files.h"

#include <catch2/catch.hpp>
#include <cstdint>

namespace spmdsim::dump {
namespace {

TEST_CASE("buffer assignment: allocations, flags, values and the memory_analysis() terms") {
  constexpr std::string_view kText = R"(BufferAssignment:
allocation 0: size 65536, parameter 26, shape |f32[256,64]| at ShapeIndex {}, maybe-live-out:
 value: <6930 param.39 @0> (size=65536,offset=0): f32[256,64]{1,0}
 value: <7572 multiply_add_fusion.9 @0> (size=65536,offset=0): f32[256,64]{1,0}
allocation 1: size 8, parameter 93, shape |u32[2]| at ShapeIndex {}:
 value: <7001 param.52 @0> (size=8,offset=0): u32[2]{0}
allocation 2: size 24, output shape is |(f32[256,64], u32[2], f32[])|, maybe-live-out:
 value: <7591 tuple.420{} @0> (size=24,offset=0): (f32[256,64]{1,0}, u32[2]{0}, f32[])
allocation 3: size 4, thread-local:
 value: <170 reduce_sum.434 @0> (size=4,offset=0): f32[]
allocation 4: size 16, constant:
 value: <6969 constant.749.clone @0> (size=16,offset=0): u32[4]{0}
allocation 5: size 1388344, preallocated-temp:
 value: <6408 copy.188 @0> (size=4,offset=1384384): s32[]
 value: <8100 while.978{3} (phi) @0> (size=4,offset=1385152): u32[]
)";
  const auto parsed = ParseXlaBufferAssignment(kText);
  REQUIRE(parsed);
  REQUIRE(parsed->allocations.size() == 6);
  const auto& a0 = parsed->allocations[0];
  CHECK(a0.parameter == 26);
  CHECK(a0.maybe_live_out);
  REQUIRE(a0.values.size() == 2);
  CHECK(a0.values[1].name == "multiply_add_fusion.9");
  CHECK(a0.values[1].Key() == "multiply_add_fusion.9{}");
  CHECK(parsed->allocations[2].output_tuple);
  CHECK(parsed->allocations[3].thread_local_);
  CHECK(parsed->allocations[4].constant);
  const auto& temp = parsed->allocations[5];
  CHECK(temp.preallocated_temp);
  CHECK(temp.values[1].Key() == "while.978{3}");
  CHECK(temp.values[1].is_phi);
  CHECK(temp.values[1].offset == 1385152);
  CHECK(temp.values[1].shape == "u32[]");
  CHECK(parsed->ArgumentBytes() == 65536 + 8);
  CHECK(parsed->OutputBytes() == 65536 + 24);
  CHECK(parsed->AliasBytes() == 65536);
  CHECK(parsed->TempBytes() == 1388344);
}

TEST_CASE("live range: sequence, ranges and the listing at the peak") {
  constexpr std::string_view kText = R"(HloLiveRange (max 3):
  InstructionSequence:
    0:partition-id.38
    1:param.38
    2:tuple.420
  BufferLiveRange:
    param.38{}:0-3
    while.978{1}:1-2
  Live ranges at 1 (peak):
    param.38{}: 65536 bytes (cumulative: 65536 bytes)
    while.978{1}: 4 bytes (cumulative: 65540 bytes)
  Stack trace breakdown for peak usage: 65 540 bytes
    main (100.0%, total: 65 540 bytes, current: 0 bytes, remaining: 65 540 bytes)
)";
  const auto parsed = ParseXlaLiveRange(kText);
  REQUIRE(parsed);
  CHECK(parsed->max_time == 3);
  CHECK(parsed->sequence == std::vector<std::string>{"partition-id.38", "param.38", "tuple.420"});
  REQUIRE(parsed->ranges.count("while.978{1}"));
  CHECK(parsed->ranges.at("while.978{1}").start == 1);
  CHECK(parsed->ranges.at("while.978{1}").end == 2);
  CHECK(parsed->peak_time == 1);
  CHECK(parsed->live_at_peak.size() == 2);
  CHECK(parsed->peak_live_bytes == 65540);
}

TEST_CASE("memory usage report and memory_analysis.json") {
  const auto report = ParseXlaMemoryUsageReport(R"(Memory Space: default (color=0)
Total bytes: 2980324 (2.84MiB)
  cumulative_size;       size;       offset; used_by_n_values; shapes_list
)");
  REQUIRE(report);
  REQUIRE(report->spaces.size() == 1);
  CHECK(report->spaces[0].name == "default");
  CHECK(report->spaces[0].total_bytes == 2980324);

  const auto analysis = ParseXlaMemoryAnalysis(
      R"({"alias_size_in_bytes": 4, "argument_size_in_bytes": 10, "output_size_in_bytes": 6,
          "temp_size_in_bytes": 100})");
  REQUIRE(analysis);
  CHECK(analysis->PeakBytes() == 10 + 6 - 4 + 100);
}

TEST_CASE("text in another format is refused with a reason") {
  const auto not_assignment = ParseXlaBufferAssignment("HloModule m\n");
  REQUIRE_FALSE(not_assignment);
  CHECK(not_assignment.error().kind == DumpErrorKind::kParse);
  CHECK(not_assignment.error().message.find("buffer-assignment") != std::string::npos);
  CHECK_FALSE(ParseXlaLiveRange("allocation 0: size 4\n"));
  CHECK_FALSE(ParseXlaMemoryUsageReport(""));
  CHECK_FALSE(ParseXlaMemoryAnalysis("[1, 2]"));
  CHECK_FALSE(ParseXlaMemoryAnalysis("{\"x\": 1}"));
  // A negative size is no memory_analysis(): refused, not printed as "-8 EiB".
  const auto negative = ParseXlaMemoryAnalysis(
      "{\"temp_size_in_bytes\": 1, \"argument_size_in_bytes\": -9223372036854775808}");
  REQUIRE_FALSE(negative);
  CHECK(negative.error().message.find("argument_size_in_bytes is negative") != std::string::npos);
  CHECK_FALSE(ParseXlaBufferAssignment("allocation x: size 4\n"));
}

// Found by the companion files fuzzer: the totals of hostile files overflowed int64.
TEST_CASE("buffer assignment: totals saturate at INT64_MAX and negative sizes are refused") {
  constexpr std::string_view kHuge =
      R"(allocation 0: size 9223372036854775807, parameter 0, maybe-live-out:
allocation 1: size 9223372036854775807, parameter 1, maybe-live-out:
allocation 2: size 9223372036854775807, preallocated-temp:
allocation 3: size 9223372036854775807, preallocated-temp:
)";
  const auto parsed = ParseXlaBufferAssignment(kHuge);
  REQUIRE(parsed);
  CHECK(parsed->ArgumentBytes() == INT64_MAX);
  CHECK(parsed->OutputBytes() == INT64_MAX);
  CHECK(parsed->AliasBytes() == INT64_MAX);
  CHECK(parsed->TempBytes() == INT64_MAX);

  const auto negative =
      ParseXlaBufferAssignment("allocation 0: size -9223372036854775808, parameter 0:\n");
  REQUIRE_FALSE(negative);
  CHECK(negative.error().message == "line 1: unreadable allocation line");
  const auto negative_value = ParseXlaBufferAssignment(
      "allocation 0: size 8, parameter 0:\n value: <1 p @0> (size=-8,offset=0): u32[2]\n");
  REQUIRE_FALSE(negative_value);
  CHECK(negative_value.error().message == "line 2: unreadable value line");
}

TEST_CASE("live range: the total live at the peak saturates at INT64_MAX") {
  constexpr std::string_view kText = R"(HloLiveRange (max 3):
  Live ranges at 1 (peak):
    a{}: 9223372036854775807 bytes (cumulative: 9223372036854775807 bytes)
    b{}: 9223372036854775807 bytes (cumulative: 9223372036854775807 bytes)
    c{}: -5 bytes (cumulative: 0 bytes)
)";
  const auto parsed = ParseXlaLiveRange(kText);
  REQUIRE(parsed);
  CHECK(parsed->live_at_peak.size() == 2);  // the negative entry is not a size
  CHECK(parsed->peak_live_bytes == INT64_MAX);
}

TEST_CASE(
    "memory_analysis.json: the peak saturates, negative sizes are refused, values past "
    "INT64_MAX are left out") {
  const auto huge = ParseXlaMemoryAnalysis(
      R"({"argument_size_in_bytes": 9223372036854775807, "output_size_in_bytes": 1,
          "alias_size_in_bytes": 0, "temp_size_in_bytes": 9223372036854775807})");
  REQUIRE(huge);
  CHECK(huge->PeakBytes() == INT64_MAX);
  CHECK_FALSE(ParseXlaMemoryAnalysis(
      R"({"argument_size_in_bytes": -9223372036854775808, "output_size_in_bytes": 0,
          "alias_size_in_bytes": 9223372036854775807, "temp_size_in_bytes": 0})"));
  const auto unsigned_field = ParseXlaMemoryAnalysis(
      R"({"argument_size_in_bytes": 18446744073709551615, "temp_size_in_bytes": 7})");
  REQUIRE(unsigned_field);
  CHECK(unsigned_field->fields.count("argument_size_in_bytes") == 0);
  CHECK(unsigned_field->PeakBytes() == 7);
}

}  // namespace
}  // namespace spmdsim::dump
