// spmdsim_bench_phases: where `report`'s time goes, part by part, against `stats`, for one file
// or dump directory (docs/BENCHMARKS.md).
//
//   spmdsim_bench_phases PATH [--reps N]
//
// Each repetition (default 3) loads PATH as the tool does, counts it as `stats` does, then makes
// the report the way `report` does (the topology, the module's analyses, memory, collectives,
// RNG sites, the HTML page), forcing the dataflow, buffers and live ranges first so that each is
// timed on its own. Everything is freed (untimed) before the next repetition. For each part it
// prints the CPU seconds of this process (user and system: one core's work) in the first
// repetition (closest to a fresh process: its memory is new and faults in) and the best one,
// then the two sums as multiples of `stats`, and one line of key=value pairs for scripts:
//
//   file: big_module.txt  104.44 MB  488839 instructions  1 module(s)  3 repetition(s)
//                                first s    best s   x stats
//   read+parse                     0.300     0.248      0.93
//   stats: counts                  0.019     0.019      0.07
//   topology, facts                0.012     0.011      0.04
//   dataflow                       0.099     0.088      0.33
//   ...
//   = stats (the first two)        0.319     0.267      1.00
//   = report (all but counts)      1.238     1.182      4.43
//   bench_phases bytes=104435221 instructions=488839 reps=3 stats_cpu_s=0.2667 ...
//
// In-process figures leave out the process's start and exit; `tools/bench_commands.py` times the
// commands themselves. The exit status is 0, 2 on a usage or I/O error, 3 on a parse error.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/model/module_report.h"
#include "analyzer/model/topology_choice.h"
#include "analyzer/views/html_report.h"
#include "dump/module_loader.h"
#include "passes/module_analyses.h"
#include "passes/stats_analysis.h"
#include "tools/bench_clock.h"

namespace {

namespace analyzer = spmdsim::analyzer;
namespace passes = spmdsim::passes;
using spmdsim::bench::Now;

// The parts, in the order they run. The first two are `stats`; the first and the rest `report`.
constexpr const char* kParts[] = {
    "read+parse", "stats: counts", "topology, facts", "dataflow", "alias",         "live ranges",
    "memory",     "collectives",   "rng sites",       "fixes",    "free analyses", "html",
};
constexpr size_t kPartCount = std::size(kParts);
constexpr size_t kReadParse = 0;
constexpr size_t kStatsCounts = 1;

size_t PartIndex(std::string_view name) {
  for (size_t i = 0; i < kPartCount; ++i) {
    if (name == kParts[i]) return i;
  }
  std::fprintf(stderr, "spmdsim_bench_phases: unknown part %.*s\n", static_cast<int>(name.size()),
               name.data());
  std::abort();
}

// CPU seconds per part in one repetition, charged by a clock that moves from part to part.
class PartClock {
 public:
  explicit PartClock(std::vector<double>& seconds) : seconds_(seconds) {}
  // Charges the time since the last switch to the running part; then `name` runs.
  void Switch(std::string_view name) {
    Stop();
    running_ = PartIndex(name);
    since_ = Now().cpu;
  }
  void Stop() {
    if (running_) seconds_[*running_] += Now().cpu - since_;
    running_.reset();
  }

 private:
  std::vector<double>& seconds_;
  std::optional<size_t> running_;
  double since_ = 0;
};

struct Counts {
  size_t bytes = 0;
  int64_t instructions = 0;
  size_t modules = 0;
};

// One repetition; the exit status: 0, else (after printing why) 2 when PATH cannot be read or
// has no module and 3 when it does not parse.
int RunOnce(const std::string& path, std::vector<double>& seconds, Counts& counts) {
  PartClock clock(seconds);
  clock.Switch("read+parse");
  spmdsim::dump::LoadOutcome loaded = spmdsim::dump::LoadInputs(path);
  clock.Stop();
  if (loaded.failure) {
    std::fprintf(stderr, "%s\n", loaded.failure->message.c_str());
    return loaded.failure->kind == spmdsim::dump::DumpErrorKind::kParse ? 3 : 2;
  }
  const std::vector<spmdsim::dump::ModuleInput>& modules = loaded.inputs.modules;
  counts = {};
  clock.Switch("stats: counts");
  for (const auto& input : modules) {
    const passes::StatsResult stats = passes::ComputeStats(*input.module);
    counts.instructions += stats.instruction_count;
  }
  clock.Stop();
  counts.modules = modules.size();
  for (const auto& input : modules) {
    if (input.module->source != nullptr) counts.bytes += input.module->source->text().size();
  }

  clock.Switch("topology, facts");
  std::string error;
  const std::optional<analyzer::TopologyRequest> request =
      analyzer::MakeTopologyRequest("", 0, error);
  if (!request) {
    std::fprintf(stderr, "spmdsim_bench_phases: %s\n", error.c_str());
    return 2;
  }
  std::vector<std::unique_ptr<passes::ModuleAnalyses>> analyses;
  for (const auto& input : modules) {
    analyses.push_back(std::make_unique<passes::ModuleAnalyses>(*input.module));
  }
  const auto topologies = analyzer::ChooseTopologies(modules, *request, error, analyses);
  if (!topologies) {
    std::fprintf(stderr, "spmdsim_bench_phases: %s\n", error.c_str());
    return 2;
  }
  std::vector<analyzer::ModuleReport> reports;
  for (size_t i = 0; i < modules.size(); ++i) {
    clock.Switch("dataflow");
    analyses[i]->Dataflow();
    clock.Switch("alias");
    analyses[i]->Alias();
    clock.Switch("live ranges");
    analyses[i]->LiveRanges();
    analyzer::ModuleReportOptions options;
    options.topology = &(*topologies)[i].topology;
    options.on_part = [&](std::string_view part) {
      if (part == "done") {
        clock.Stop();
      } else {
        clock.Switch(part);
      }
    };
    reports.push_back(analyzer::BuildModuleReport(modules[i], options, analyses[i].get()));
    clock.Switch("free analyses");  // as `report` does, once the module's report is made
    analyses[i].reset();
  }
  clock.Switch("html");
  analyzer::HtmlReportOptions html;
  html.topology = analyzer::DescribeTopologyChoices(*topologies);
  const std::string page = analyzer::RenderHtmlReport(reports, html);  // as `report`; not written
  clock.Stop();
  return 0;
}

// What `stats` does (read+parse, the counts) and what `report` does (all but the counts).
double StatsSeconds(const std::vector<double>& s) { return s[kReadParse] + s[kStatsCounts]; }
double ReportSeconds(const std::vector<double>& s) {
  double total = 0;
  for (size_t i = 0; i < kPartCount; ++i) {
    if (i != kStatsCounts) total += s[i];
  }
  return total;
}

int Run(const std::string& path, int reps) {
  std::vector<double> first(kPartCount, 0);
  std::vector<double> best(kPartCount, 1e300);
  double best_stats = 1e300;
  double best_report = 1e300;
  Counts counts;
  for (int r = 0; r < reps; ++r) {
    std::vector<double> seconds(kPartCount, 0);
    if (const int status = RunOnce(path, seconds, counts); status != 0) return status;
    if (r == 0) first = seconds;
    for (size_t i = 0; i < kPartCount; ++i) best[i] = std::min(best[i], seconds[i]);
    best_stats = std::min(best_stats, StatsSeconds(seconds));
    best_report = std::min(best_report, ReportSeconds(seconds));
  }
  const double stats = best_stats;
  std::printf("file: %s  %.2f MB  %lld instructions  %zu module(s)  %d repetition(s)\n",
              path.c_str(), static_cast<double>(counts.bytes) / 1e6,
              static_cast<long long>(counts.instructions), counts.modules, reps);
  std::printf("%-26s %9s %9s %9s\n", "", "first s", "best s", "x stats");
  for (size_t i = 0; i < kPartCount; ++i) {
    std::printf("%-26s %9.3f %9.3f %9.2f\n", kParts[i], first[i], best[i], best[i] / stats);
  }
  std::printf("%-26s %9.3f %9.3f %9.2f\n", "= stats (the first two)", StatsSeconds(first), stats,
              1.0);
  std::printf("%-26s %9.3f %9.3f %9.2f\n", "= report (all but counts)", ReportSeconds(first),
              best_report, best_report / stats);
  std::printf(
      "bench_phases bytes=%zu instructions=%lld reps=%d stats_cpu_s=%.4f "
      "report_cpu_s=%.4f report_over_stats=%.3f",
      counts.bytes, static_cast<long long>(counts.instructions), reps, stats, best_report,
      best_report / stats);
  for (size_t i = 0; i < kPartCount; ++i) {
    std::string key;  // "stats: counts" -> stats_counts
    for (const char c : std::string_view(kParts[i])) {
      const bool word = std::isalnum(static_cast<unsigned char>(c)) != 0;
      if (word) {
        key += c;
      } else if (!key.empty() && key.back() != '_') {
        key += '_';
      }
    }
    std::printf(" %s_cpu_s=%.4f", key.c_str(), best[i]);
  }
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  int reps = 3;
  bool usage_error = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (!arg.empty() && arg.front() != '-' && path.empty()) {
      path = std::string(arg);
    } else {
      usage_error = true;
    }
  }
  if (usage_error || path.empty() || reps < 1) {
    std::fprintf(stderr, "usage: spmdsim_bench_phases PATH [--reps N]\n");
    return 2;
  }
  return Run(path, reps);
}
