#include "analyzer/views/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>

#include "analyzer/emit/html_escape.h"
#include "analyzer/emit/human_units.h"

namespace spmdsim::analyzer {
namespace {

// Space kept for the axis labels, in pixels.
constexpr double kLeft = 78;
constexpr double kRight = 16;
constexpr double kTop = 24;
constexpr double kBottom = 30;

}  // namespace

std::string MemoryCurveSvg(const std::vector<passes::TimelinePoint>& timeline,
                           const MemoryCurveOptions& options) {
  if (timeline.empty()) return {};
  const double width = std::max(options.width, 200);
  const double height = std::max(options.height, 120);
  const double plot_w = width - kLeft - kRight;
  const double plot_h = height - kTop - kBottom;
  int64_t x_end = std::max<int64_t>(options.schedule_length - 1, timeline.back().time);
  x_end = std::max<int64_t>(x_end, 1);
  size_t highest = 0;
  for (size_t i = 1; i < timeline.size(); ++i) {
    if (timeline[i].live_bytes > timeline[highest].live_bytes) highest = i;
  }
  const int64_t y_max =
      std::max<int64_t>({options.peak_bytes, timeline[highest].live_bytes, int64_t{1}});
  const auto x_of = [&](int64_t time) {
    return kLeft + plot_w * static_cast<double>(std::clamp<int64_t>(time, 0, x_end)) /
                       static_cast<double>(x_end);
  };
  const auto y_of = [&](int64_t bytes) {
    const double fraction =
        static_cast<double>(std::clamp<int64_t>(bytes, 0, y_max)) / static_cast<double>(y_max);
    return kTop + plot_h * (1.0 - fraction);
  };
  const double base = kTop + plot_h;

  std::string svg = fmt::format(
      "<svg class=\"curve\" viewBox=\"0 0 {0:.0f} {1:.0f}\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "role=\"img\" aria-label=\"memory curve: live bytes per device over {2} schedule "
      "positions, highest {3}\">\n",
      width, height, x_end + 1, HtmlEscape(HumanBytes(timeline[highest].live_bytes)));
  // Horizontal grid lines and y labels at quarters of the scale.
  for (int q = 0; q <= 4; ++q) {
    const int64_t bytes = y_max / 4 * q + (q == 4 ? y_max % 4 : 0);
    const double y = y_of(bytes);
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
        "<text class=\"axis\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
        kLeft, y, kLeft + plot_w, y, kLeft - 6, y + 4, HtmlEscape(HumanBytes(bytes)));
  }
  // X labels: first and last position and the quarters between.
  for (int q = 0; q <= 4; ++q) {
    const int64_t time = x_end / 4 * q + (q == 4 ? x_end % 4 : 0);
    svg += fmt::format(
        "<text class=\"axis\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
        x_of(time), base + 18, time);
  }
  // The curve: each point holds its value until the next one.
  std::string path = fmt::format("M{:.1f},{:.1f}", x_of(timeline.front().time), base);
  for (size_t i = 0; i < timeline.size(); ++i) {
    const double y = y_of(timeline[i].live_bytes);
    const int64_t next = i + 1 < timeline.size() ? timeline[i + 1].time : x_end;
    path += fmt::format(" L{:.1f},{:.1f} L{:.1f},{:.1f}", x_of(timeline[i].time), y, x_of(next), y);
  }
  path += fmt::format(" L{:.1f},{:.1f} Z", x_of(x_end), base);
  svg += "<path class=\"area\" d=\"" + path + "\"/>\n";
  svg += fmt::format(
      "<line class=\"frame\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\"/>\n",
      kLeft, base, kLeft + plot_w);
  if (options.peak_bytes > 0) {
    const double y = y_of(options.peak_bytes);
    svg += fmt::format(
        "<line class=\"peak\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
        "<text class=\"peaklabel\" x=\"{:.1f}\" y=\"{:.1f}\">predicted peak {}</text>\n",
        kLeft, y, kLeft + plot_w, y, kLeft + 6, y - 5, HtmlEscape(HumanBytes(options.peak_bytes)));
  }
  const passes::TimelinePoint& top = timeline[highest];
  const double mx = x_of(top.time);
  const double my = y_of(top.live_bytes);
  // Keep the label inside the plot: left of the marker when it sits in the right half.
  const bool label_left = mx > kLeft + plot_w / 2;
  svg += fmt::format(
      "<circle class=\"max\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\"><title>{} bytes at position {}: "
      "{}</title></circle>"
      "<text class=\"maxlabel\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\">highest {} at "
      "position {}: {}</text>\n",
      mx, my, top.live_bytes, top.time, HtmlEscape(top.instruction), label_left ? mx - 8 : mx + 8,
      std::min(my + 16, base - 6), label_left ? "end" : "start",
      HtmlEscape(HumanBytes(top.live_bytes)), top.time, HtmlEscape(top.instruction));
  svg += "</svg>\n";
  return svg;
}

}  // namespace spmdsim::analyzer
