#include "analyzer/views/svg_chart.h"

#include <catch2/catch.hpp>

namespace spmdsim::analyzer {
namespace {

TEST_CASE("MemoryCurveSvg: nothing for an empty timeline") {
  CHECK(MemoryCurveSvg({}, {}).empty());
}

TEST_CASE("MemoryCurveSvg marks the highest point and escapes its instruction") {
  const std::vector<passes::TimelinePoint> timeline = {
      {0, "p.1", 1024}, {5, "fusion<&>\"'", 4096}, {9, "copy.2", 2048}};
  MemoryCurveOptions options;
  options.peak_bytes = 5000;
  options.schedule_length = 10;
  const std::string svg = MemoryCurveSvg(timeline, options);
  CHECK(svg.starts_with("<svg class=\"curve\""));
  CHECK(svg.find("highest 4.00 KiB at position 5: fusion&lt;&amp;&gt;&quot;&#39;") !=
        std::string::npos);
  CHECK(svg.find("<title>4096 bytes at position 5:") != std::string::npos);
  CHECK(svg.find("predicted peak 4.88 KiB") != std::string::npos);
  CHECK(svg.find("fusion<") == std::string::npos);
  CHECK(svg.find("http") == std::string::npos);
}

}  // namespace
}  // namespace spmdsim::analyzer
