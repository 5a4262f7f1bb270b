// spmdsim_bench_parse: times the HLO text parser alone on one file, for tools/bench.sh.
//
//   spmdsim_bench_parse FILE [--reps N] [--lex-only]
//
// Reads FILE (plain text) and parses it, N times (default 5); each repetition frees its text and
// IR (untimed) before the next, so peak RSS is one text plus one IR. For each of
//   read+parse  reading the file (from the page cache) into memory, then parsing it
//   parse       the parse alone
// it prints the best of the repetitions in CPU seconds of this process (what one core spends,
// steady on a loaded machine) and in wall seconds, as MB/s (10^6 bytes of text per second) and
// instructions per second, then one line of key=value pairs for scripts:
//
//   file: big_module.txt  104.42 MB  488839 instructions  38546 computations  1 module(s)
//                cpu s    MB/s  M instr/s    wall s    MB/s
//   read+parse   0.512   204.0       0.95     0.530   197.0
//   parse        0.480   217.5       1.02     0.495   211.0
//   bench_parse bytes=104423710 instructions=488839 reps=5 read_parse_cpu_s=0.5120 ...
//
// --lex-only runs the lexer over the whole text instead (tokens, no IR), to split lexing from
// parsing when profiling. The exit status is 0, 2 on a usage or I/O error, 3 on a parse error.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "ir/lexer.h"
#include "ir/parser.h"
#include "tools/bench_clock.h"

namespace {

struct Options {
  std::string path;
  int reps = 5;  // repetitions; the best is reported, as the least disturbed by other load
  bool lex_only = false;
};

using spmdsim::bench::Now;
using spmdsim::bench::Stamp;

// The best (least disturbed) of the repetitions, on each clock.
struct Best {
  double wall = 1e300;
  double cpu = 1e300;
  void Add(Stamp from, Stamp to) {
    wall = std::min(wall, to.wall - from.wall);
    cpu = std::min(cpu, to.cpu - from.cpu);
  }
};

// Reads a whole file into one string sized up front; false on an I/O error.
bool ReadFile(const std::string& path, std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  bool ok = std::fseek(f, 0, SEEK_END) == 0;
  const long size = ok ? std::ftell(f) : -1;
  ok = ok && size >= 0 && std::fseek(f, 0, SEEK_SET) == 0;
  if (ok) {
    text.resize(static_cast<size_t>(size));
    ok = std::fread(text.data(), 1, text.size(), f) == text.size();
  }
  std::fclose(f);
  return ok;
}

struct ParseCounts {
  int64_t modules = 0;
  int64_t computations = 0;
  int64_t instructions = 0;
};

// Counts what a parse produced; false (after printing the error) when the text did not parse.
bool Count(const spmdsim::ir::ParseResult& result, ParseCounts& counts) {
  if (!result.ok()) {
    std::fprintf(stderr, "%s\n", result.error->ToString().c_str());
    return false;
  }
  counts = {};
  for (const auto& module : result.modules) {
    ++counts.modules;
    counts.computations += static_cast<int64_t>(module->computations.size());
    counts.instructions += module->InstructionCount();
  }
  return true;
}

int64_t LexOnce(std::string_view text) {
  spmdsim::ir::Lexer lexer(text);
  int64_t tokens = 0;
  while (lexer.Next().kind != spmdsim::ir::TokenKind::kEof) ++tokens;
  return tokens;
}

void PrintHeader() {
  std::printf("%-11s %7s %7s %10s %9s %7s\n", "", "cpu s", "MB/s", "M instr/s", "wall s", "MB/s");
}

void PrintRow(const char* label, const Best& t, double megabytes, int64_t instructions) {
  std::printf("%-11s %7.3f %7.1f %10.2f %9.3f %7.1f\n", label, t.cpu, megabytes / t.cpu,
              static_cast<double>(instructions) / t.cpu / 1e6, t.wall, megabytes / t.wall);
}

int Run(const Options& options) {
  if (options.lex_only) {
    std::string text;
    if (!ReadFile(options.path, text)) {
      std::fprintf(stderr, "spmdsim_bench_parse: cannot read %s\n", options.path.c_str());
      return 2;
    }
    Best lex;
    int64_t tokens = 0;
    for (int i = 0; i < options.reps; ++i) {
      const Stamp start = Now();
      tokens = LexOnce(text);
      lex.Add(start, Now());
    }
    const double megabytes = static_cast<double>(text.size()) / 1e6;
    std::printf("file: %s  %.2f MB  %lld tokens\n", options.path.c_str(), megabytes,
                static_cast<long long>(tokens));
    PrintHeader();
    PrintRow("lex only", lex, megabytes, 0);
    std::printf("bench_parse bytes=%zu tokens=%lld reps=%d lex_cpu_s=%.4f lex_wall_s=%.4f\n",
                text.size(), static_cast<long long>(tokens), options.reps, lex.cpu, lex.wall);
    return 0;
  }

  ParseCounts counts;
  Best parse;
  Best read_parse;
  size_t bytes = 0;
  for (int i = 0; i < options.reps; ++i) {
    const Stamp start = Now();
    std::string text;
    if (!ReadFile(options.path, text)) {
      std::fprintf(stderr, "spmdsim_bench_parse: cannot read %s\n", options.path.c_str());
      return 2;
    }
    bytes = text.size();
    auto source = std::make_shared<const spmdsim::ir::SourceBuffer>(options.path, std::move(text));
    const Stamp read_done = Now();
    spmdsim::ir::ParseResult result = spmdsim::ir::ParseHloText(source);
    const Stamp parse_done = Now();
    if (!Count(result, counts)) return 3;
    parse.Add(read_done, parse_done);
    read_parse.Add(start, parse_done);
    // The IR and the text are freed here, outside the timed span.
  }
  const double megabytes = static_cast<double>(bytes) / 1e6;
  std::printf("file: %s  %.2f MB  %lld instructions  %lld computations  %lld module(s)\n",
              options.path.c_str(), megabytes, static_cast<long long>(counts.instructions),
              static_cast<long long>(counts.computations), static_cast<long long>(counts.modules));
  PrintHeader();
  PrintRow("read+parse", read_parse, megabytes, counts.instructions);
  PrintRow("parse", parse, megabytes, counts.instructions);
  std::printf(
      "bench_parse bytes=%zu instructions=%lld reps=%d read_parse_cpu_s=%.4f "
      "read_parse_wall_s=%.4f parse_cpu_s=%.4f parse_wall_s=%.4f\n",
      bytes, static_cast<long long>(counts.instructions), options.reps, read_parse.cpu,
      read_parse.wall, parse.cpu, parse.wall);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  bool usage_error = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--reps" && i + 1 < argc) {
      options.reps = std::atoi(argv[++i]);
    } else if (arg == "--lex-only") {
      options.lex_only = true;
    } else if (!arg.empty() && arg.front() != '-' && options.path.empty()) {
      options.path = std::string(arg);
    } else {
      usage_error = true;
    }
  }
  if (usage_error || options.path.empty() || options.reps < 1) {
    std::fprintf(stderr, "usage: spmdsim_bench_parse FILE [--reps N] [--lex-only]\n");
    return 2;
  }
  return Run(options);
}
