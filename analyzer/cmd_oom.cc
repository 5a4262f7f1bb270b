// spmdsim oom LOGFILE [--format text|json]
// Reads XLA's "BufferAssignment OOM Debugging" listing from a log as users paste it ("-" reads
// stdin), lists the peak buffers, marks the ones that hold random bits and says what each RNG
// mode or a remat fix would save of them. Works before anyone has the dump.
//
// Sample text output (testdata/oom/seed_000.log):
//   OOM listing: 5 buffers, 1.88 GiB; 5 hold random bits (1.88 GiB), 3 sites
//     Buffer 10:  384.00 MiB  u32[128,1024,768]  custom-call  hash output (threefry2x32 custom
//                 call)  forward  .../block_0/mlp_dropout  stochastic.py:76
//     ...
//   random sites at the peak:
//     .../block_0/mlp_dropout (forward): 2 buffers, 768.00 MiB
//   what each fix would save of these buffers:
//     fused       1.88 GiB  a fused lowering ...
#include <fmt/format.h>

#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>

#include "analyzer/command.h"
#include "analyzer/human_units.h"
#include "analyzer/json_text.h"
#include "analyzer/oom_log.h"
#include "analyzer/stats_view.h"

namespace spmdsim::analyzer {
namespace {

struct OomOptions {
  std::string path;
  std::string format = "text";
};

nlohmann::ordered_json OomToJson(const OomReport& report) {
  nlohmann::ordered_json j;
  j["total_bytes"] = report.total_bytes;
  j["random_buffers"] = report.random_buffers;
  j["random_bytes"] = report.random_bytes;
  nlohmann::ordered_json buffers = nlohmann::ordered_json::array();
  for (const OomBuffer& b : report.buffers) {
    buffers.push_back({{"number", b.number},
                       {"size_bytes", b.size_bytes},
                       {"op_name", b.op_name},
                       {"source", b.source},
                       {"label", b.label},
                       {"shape", b.shape},
                       {"random", b.random},
                       {"role", b.role},
                       {"site", b.site},
                       {"phase", b.phase}});
  }
  j["buffers"] = std::move(buffers);
  nlohmann::ordered_json sites = nlohmann::ordered_json::array();
  for (const OomSite& s : report.sites) {
    sites.push_back(
        {{"site", s.site}, {"phase", s.phase}, {"buffers", s.buffers}, {"bytes", s.bytes}});
  }
  j["sites"] = std::move(sites);
  nlohmann::ordered_json savings = nlohmann::ordered_json::object();
  for (const OomSaving& s : report.savings) {
    savings[s.fix] = {{"saving_bytes", s.saving_bytes}, {"explanation", s.explanation}};
  }
  j["savings"] = std::move(savings);
  return j;
}

void PrintOomText(const OomReport& report, std::ostream& out) {
  out << fmt::format("OOM listing: {} buffers, {}; {} hold random bits ({}), {} sites\n",
                     report.buffers.size(), HumanBytes(report.total_bytes), report.random_buffers,
                     HumanBytes(report.random_bytes), report.sites.size());
  for (const OomBuffer& b : report.buffers) {
    out << fmt::format("  Buffer {}:  {}  {}  {}", b.number, HumanBytes(b.size_bytes), b.shape,
                       b.label);
    if (b.random) {
      out << fmt::format("  {}  {}  {}", b.role, b.phase, b.site);
    } else {
      out << "  " << b.op_name;
    }
    if (!b.source.empty()) out << "  " << b.source;
    out << "\n";
  }
  if (report.sites.empty()) {
    out << "no buffer in the listing holds random bits (threefry2x32, iota_2x32_shape, "
           "rng_bit_generator or random_bits op_names)\n";
    return;
  }
  out << "random sites at the peak:\n";
  for (const OomSite& s : report.sites) {
    out << fmt::format("  {} ({}): {} buffers, {}\n", s.site, s.phase, s.buffers,
                       HumanBytes(s.bytes));
  }
  out << "what each fix would save of these buffers:\n";
  for (const OomSaving& s : report.savings) {
    out << fmt::format("  {:<11} {:>11}  {}\n", s.fix, HumanBytes(s.saving_bytes), s.explanation);
  }
}

int RunOom(const OomOptions& options) {
  std::string text;
  if (options.path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::string error;
    std::optional<std::string> contents = ReadFileContents(options.path, error);
    if (!contents) {
      std::cerr << "spmdsim oom: " << error << "\n";
      return kExitUsage;
    }
    text = std::move(*contents);
  }
  std::string error;
  const std::optional<OomReport> report = ParseOomLog(text, error);
  if (!report) {
    std::cerr << "spmdsim oom: " << options.path << ": " << error << "\n";
    return kExitParse;
  }
  if (options.format == "json") {
    nlohmann::ordered_json out;
    out["schema_version"] = kSchemaVersion;
    out["file"] = options.path;
    out["oom"] = OomToJson(*report);
    std::cout << JsonText(out) << "\n";
  } else {
    PrintOomText(*report, std::cout);
  }
  std::cout.flush();
  return std::cout.good() ? kExitOk : kExitUsage;
}

}  // namespace

void RegisterOomCommand(CLI::App& app, RunFn& run) {
  auto options = std::make_shared<OomOptions>();
  CLI::App* command = app.add_subcommand(
      "oom", "Read XLA's OOM buffer listing from a log: which peak buffers are random bits");
  command->add_option("LOGFILE", options->path, "Log with XLA's OOM listing ('-' for stdin)")
      ->required();
  command->add_option("--format", options->format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  command->callback([options, &run] { run = [options] { return RunOom(*options); }; });
}

}  // namespace spmdsim::analyzer
