#include "analyzer/model/oom_report.h"

#include <fmt/format.h>

#include <utility>

#include "analyzer/model/oom_rng.h"
#include "analyzer/model/oom_sizes.h"

namespace spmdsim::analyzer {

std::vector<dump::OomLogBuffer> PeakBuffersAsListed(const std::vector<passes::LiveBuffer>& live) {
  std::vector<dump::OomLogBuffer> listed;
  for (const passes::LiveBuffer& b : live) {
    dump::OomLogBuffer entry;
    entry.number = static_cast<int64_t>(listed.size()) + 1;
    entry.size_text = std::to_string(b.size_bytes);
    entry.op_name = b.op_name;
    entry.source = b.source;
    entry.label = b.opcode;
    entry.instruction = b.instruction;
    entry.shape = b.shape;
    entry.allocation_type = std::string(passes::LiveBufferKindName(b.kind));
    listed.push_back(std::move(entry));
  }
  return listed;
}

std::optional<OomReport> ParseOomLog(std::string_view text, std::string& error,
                                     const OomOptions& options) {
  dump::DumpResult<dump::OomLog> log = dump::ReadOomLog(text);
  if (!log) {
    error = log.error().message;
    return std::nullopt;
  }
  OomReport report;
  static_cast<dump::OomMessage&>(report) = std::move(static_cast<dump::OomMessage&>(*log));
  if (log->buffers.empty() && !options.peak_buffers.empty()) {
    log->buffers = options.peak_buffers;
    report.notes.push_back(fmt::format(
        "the buffers are the {} largest live at spmdsim's peak of the --dump module, not XLA's "
        "listing (the message lists none)",
        log->buffers.size()));
  }
  report.buffers.reserve(log->buffers.size());
  for (dump::OomLogBuffer& listed : log->buffers) report.buffers.push_back({std::move(listed)});
  ResolveOomSizes(report);
  ClassifyOomRandomBuffers(report);
  CategorizeOomBuffers(report);
  AddOomRngWhatIf(report, options);
  return report;
}

}  // namespace spmdsim::analyzer
