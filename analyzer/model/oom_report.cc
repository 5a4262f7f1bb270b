#include "analyzer/model/oom_report.h"

#include <utility>

#include "analyzer/model/oom_rng.h"
#include "analyzer/model/oom_sizes.h"

namespace spmdsim::analyzer {

std::optional<OomReport> ParseOomLog(std::string_view text, std::string& error,
                                     const OomOptions& options) {
  dump::DumpResult<dump::OomLog> log = dump::ReadOomLog(text);
  if (!log) {
    error = log.error().message;
    return std::nullopt;
  }
  OomReport report;
  static_cast<dump::OomMessage&>(report) = std::move(static_cast<dump::OomMessage&>(*log));
  report.buffers.reserve(log->buffers.size());
  for (dump::OomLogBuffer& listed : log->buffers) report.buffers.push_back({std::move(listed)});
  ResolveOomSizes(report);
  ClassifyOomRandomBuffers(report);
  CategorizeOomBuffers(report);
  AddOomRngWhatIf(report, options);
  return report;
}

}  // namespace spmdsim::analyzer
