// spmdsim: what a sharded XLA program will cost, from its HLO dump.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <iostream>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "analyzer/cli/command.h"
#include "analyzer/cli/command_suggestion.h"
#include "analyzer/emit/control_chars.h"

namespace {

// Runs the command; an exception that escapes it (memory exhausted, or a defect) ends the run
// with a message and exit 2 rather than an abort, and with nothing half-written on stdout for
// the JSON formats (they print their document at the end).
int RunGuarded(const spmdsim::analyzer::RunFn& run) {
  try {
    return run();
  } catch (const std::bad_alloc&) {
    std::cerr << "spmdsim: error: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "spmdsim: error: internal error: " << e.what()
              << " (a defect of spmdsim: please report it with the input)\n";
  }
  return spmdsim::analyzer::kExitUsage;
}

// One run analyses a dump and exits: memory freed between analyses is better kept than handed
// back to the kernel, which would zero fresh pages for the next analysis' large arrays (a tenth
// of the CPU time of `analyze` on a million-instruction module went to those page faults).
void KeepFreedMemory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, INT32_MAX);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  using namespace spmdsim::analyzer;
  KeepFreedMemory();
  // What a dump says reaches the terminal as text, never as control sequences (control_chars.h).
  ControlEscapingBuffer escaped_out(std::cout);
  ControlEscapingBuffer escaped_err(std::cerr);
  CLI::App app{
      "spmdsim: memory, collective traffic and RNG costs of sharded XLA programs, "
      "from their HLO dumps"};
  app.set_version_flag("--version", "spmdsim " + std::string(kSpmdsimVersion));
  RunFn run;
  RegisterStatsCommand(app, run);
  RegisterCollectivesCommand(app, run);
  RegisterRngCommand(app, run);
  RegisterAnalyzeCommand(app, run);
  RegisterOomCommand(app, run);
  RegisterCheckCommand(app, run);
  RegisterDiffCommand(app, run);
  RegisterReportCommand(app, run);
  app.require_subcommand(0, 1);
  // A first argument that is not a command: the command it was probably meant to be, or the one
  // that reads the file it names (CLI11 would only say the argument was not expected).
  std::vector<std::string> commands;
  bool is_command = false;
  for (CLI::App* c : app.get_subcommands({})) {
    commands.push_back(c->get_name());
    is_command = is_command || (argc >= 2 && c->check_name(argv[1]));
  }
  if (argc >= 2 && !is_command) {
    std::error_code ec;
    const bool is_path = std::filesystem::exists(argv[1], ec) || std::string_view(argv[1]) == "-";
    if (const auto message = UnknownCommandMessage(argv[1], commands, is_path)) {
      std::cerr << *message << "\n";
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  // A skipped input (a module that does not parse) ends the run with its code, after the rest.
  const auto finish = [](int status) {
    const int deferred = DeferredLoadExitCode();
    return status == kExitUsage || deferred == kExitOk ? status : std::max(status, deferred);
  };
  if (run) return finish(RunGuarded(run));
  // No subcommand: the demo. Memory and collectives of the real dump compiled into the binary.
  int status = kExitOk;
  SetAnnounceEmbeddedDump(false);
  for (const char* name : {"analyze", "collectives"}) {
    run = nullptr;
    app.get_subcommand(name)->parse(std::vector<std::string>{});
    if (!run) return kExitUsage;
    if (status == kExitOk) std::cout << (name[0] == 'a' ? "" : "\n");
    status = std::max(status, RunGuarded(run));
  }
  return finish(status);
}
