// The conventions every command keeps, run end to end on real dumps: "-" is standard input and
// standard output; --stage selects modules on every command; a dump directory lists its
// after-optimizations modules first, and a module before optimizations says on its first line
// that its figures are estimates; the help names `rng sites`.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "analyzer/test_support.h"

namespace spmdsim::analyzer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::RunOutput;
using test::RunSpmdsim;

const std::string kDump = std::string(SPMDSIM_TESTDATA_DIR) + "/dumps/dp8_partitionable_remat";
const std::string kAfterFile = kDump + "/module_0000.jit_train_step.cpu_after_optimizations.txt.gz";
const std::string kSeed = std::string(SPMDSIM_TESTDATA_DIR) + "/dumps/seed_dp8_partitionable_remat";

TEST_CASE("standard input: - reads a module, gzip or plain, for every command") {
  for (const char* command : {"stats", "analyze", "collectives", "rng sites"}) {
    INFO(command);
    const RunOutput from_file = RunSpmdsim(std::string(command) + " --format json " + kAfterFile);
    REQUIRE(from_file.exit_code == 0);
    const RunOutput gz = RunSpmdsim(std::string(command) + " --format json - < " + kAfterFile);
    CHECK(gz.exit_code == 0);
    // The same module, named <stdin>, its stage unknown (the file name said it).
    const json a = json::parse(from_file.out).at("modules").at(0);
    const json b = json::parse(gz.out).at("modules").at(0);
    CHECK(b.at("file") == "<stdin>");
    CHECK(a.at("name") == b.at("name"));
    if (a.contains("stats")) CHECK(a.at("stats") == b.at("stats"));
  }
  // A pipe, as users write it (the runner starts with the binary: --version is a no-op).
  const RunOutput zcat = RunSpmdsim("--version >/dev/null; zcat " + kAfterFile + " | " +
                                    SPMDSIM_BINARY + " stats --format json -");
  CHECK(zcat.exit_code == 0);
  CHECK(json::parse(zcat.out).at("modules").at(0).at("file") == "<stdin>");
}

TEST_CASE("standard output: - takes the report, the trace and check files") {
  char name[] = "/tmp/spmdsim_dash_XXXXXX";
  REQUIRE(mkdtemp(name) != nullptr);
  const fs::path dir = name;
  const std::string in_dir = "cd " + dir.string() + " && ";
  const RunOutput html = RunSpmdsim("report " + kDump + " -o - --stage after");
  CHECK(html.exit_code == 0);
  CHECK(html.out.rfind("<!DOCTYPE html>", 0) == 0);
  const RunOutput trace =
      RunSpmdsim("report " + kDump + " -o " + (dir / "r.html").string() + " --trace -");
  CHECK(trace.exit_code == 0);
  CHECK(json::parse(trace.out).contains("traceEvents"));
  const RunOutput junit = RunSpmdsim("check " + kDump + " --max-peak 1PiB --junit -");
  CHECK(junit.exit_code == 0);
  CHECK(junit.out.rfind("<?xml", 0) == 0);  // the verdict went to stderr
  const RunOutput baseline = RunSpmdsim("check " + kDump + " --write-baseline -");
  CHECK(baseline.exit_code == 0);
  CHECK(json::parse(baseline.out).at("kind") == "spmdsim-baseline");
  // The baseline read back from standard input.
  const RunOutput roundtrip = RunSpmdsim("check " + kDump + " --write-baseline - 2>/dev/null | " +
                                         SPMDSIM_BINARY + " check " + kDump + " --baseline -");
  CHECK(roundtrip.exit_code == 0);
  CHECK(roundtrip.out.find("PASSED") != std::string::npos);
  // No file named "-" anywhere.
  CHECK(RunSpmdsim("--version >/dev/null; " + in_dir + SPMDSIM_BINARY + " report " + kDump +
                   " -o - >/dev/null; test ! -e -")
            .exit_code == 0);
  fs::remove_all(dir);
}

TEST_CASE("the stage option selects modules on every command") {
  const std::vector<std::string> commands = {"stats", "analyze", "collectives", "rng sites",
                                             "check --max-peak 1PiB"};
  for (const std::string& command : commands) {
    for (const std::string stage : {"after", "before"}) {
      INFO(command << " --stage " << stage);
      const RunOutput run = RunSpmdsim(command + " --format json --stage " + stage + " " + kDump);
      REQUIRE(run.exit_code == 0);
      const json modules = json::parse(run.out).at("modules");
      REQUIRE(modules.size() == 1);
      CHECK(modules.at(0).at("stage") == stage + "_optimizations");
    }
  }
  const RunOutput diff = RunSpmdsim("diff --format json --stage after " + kDump + " " + kSeed);
  CHECK(diff.exit_code == 0);
  const json pairs = json::parse(diff.out).at("modules");
  REQUIRE(pairs.size() == 1);
  CHECK(pairs.at(0).at("a").at("stage") == "after_optimizations");
  const RunOutput report = RunSpmdsim("report -o - --stage before " + kDump);
  CHECK(report.exit_code == 0);
  CHECK(report.out.find("before_optimizations.txt.gz") != std::string::npos);
  CHECK(report.out.find("cpu_after_optimizations.txt.gz") == std::string::npos);
  // A stage that selects nothing is an error that says what was selected.
  CHECK(RunSpmdsim("stats --stage unknown " + kDump).exit_code == 2);
}

TEST_CASE("a dump directory lists after-optimizations modules first, estimates said up front") {
  for (const std::string command : {"stats", "analyze", "collectives", "rng sites"}) {
    INFO(command);
    const RunOutput text = RunSpmdsim(command + " " + kSeed);
    REQUIRE(text.exit_code == 0);
    const size_t after = text.out.find("module jit_train_step, after optimizations  (");
    const size_t before = text.out.find(
        "module jit_train_step, before optimizations: an estimate (per-device sizes from the "
        "shardings");
    // analyze opens with the summary of the modules (module_summary_view.h), then each module's
    // fit verdict (docs/DEVICES.md) and the module.
    if (command == "analyze") {
      CHECK(text.out.rfind("2 modules; the largest peak is jit_train_step's (after "
                           "optimizations)",
                           0) == 0);
      const size_t details = text.out.find("\n\n") + 2;
      CHECK(text.out.compare(details, 21, "jit_train_step: peak ") == 0);
      CHECK(after == text.out.find('\n', details) + 1);
    } else {
      CHECK(after == 0);
    }
    CHECK(before != std::string::npos);
    CHECK(after < before);
    const RunOutput as_json = RunSpmdsim(command + " --format json " + kSeed);
    const json modules = json::parse(as_json.out).at("modules");
    REQUIRE(modules.size() == 2);
    CHECK(modules.at(0).at("stage") == "after_optimizations");
  }
}

TEST_CASE("several modules of one process: every after-optimizations module before any other") {
  const std::string dir =
      std::string(SPMDSIM_TESTDATA_DIR) + "/dumps/jax012_cpu8_flax_process_init_train_eval";
  const RunOutput run = RunSpmdsim("stats --format json " + dir);
  REQUIRE(run.exit_code == 0);
  const json modules = json::parse(run.out).at("modules");
  REQUIRE(modules.size() >= 4);
  bool seen_other = false;
  size_t after = 0;
  for (const json& m : modules) {
    const bool optimized = m.at("stage") == "after_optimizations";
    CHECK_FALSE((optimized && seen_other));
    seen_other = seen_other || !optimized;
    after += optimized ? 1 : 0;
  }
  CHECK(after == 3);  // init, train step, eval
}

// All 24 rng-key-residual findings of the seed dump come from one source line; only the scope
// tells the dropouts apart.
TEST_CASE("every text view names the dropout a finding is about") {
  const RunOutput sites = RunSpmdsim("rng sites --stage after " + kSeed);
  REQUIRE(sites.exit_code == 0);
  const RunOutput as_json = RunSpmdsim("rng sites --format json --stage after " + kSeed);
  const json findings = json::parse(as_json.out).at("modules").at(0).at("findings");
  REQUIRE(findings.size() == 24);
  std::set<std::string> scopes;
  size_t lines = 0;
  for (size_t at = sites.out.find("  finding "); at != std::string::npos;
       at = sites.out.find("  finding ", at + 1)) {
    const std::string line = sites.out.substr(at, sites.out.find('\n', at) - at);
    const size_t in = line.find(" in _transformer/block_");
    REQUIRE(in != std::string::npos);
    scopes.insert(line.substr(in + 4, line.find(" at ", in) - in - 4));
    ++lines;
  }
  CHECK(lines == findings.size());
  CHECK(scopes.size() == findings.size());  // 12 blocks x 2 dropouts, each named
  CHECK(scopes.count("_transformer/block_0/mlp_dropout") == 1);

  // check and diff name it too.
  const std::string noremat =
      std::string(SPMDSIM_TESTDATA_DIR) + "/dumps/dp8_partitionable_noremat";
  const RunOutput check =
      RunSpmdsim("check --stage after " + kDump + " --write-baseline - 2>/dev/null | " +
                 SPMDSIM_BINARY + " check --stage after " + noremat + " --baseline -");
  CHECK(check.exit_code == 1);
  CHECK(check.out.find("new finding rng-key-residual (warning) in _transformer/block_") !=
        std::string::npos);
  const RunOutput diff = RunSpmdsim("diff --stage after " + kDump + " " + noremat);
  CHECK(diff.out.find("+ rng-key-residual in _transformer/block_") != std::string::npos);
}

TEST_CASE("oom reads its log from standard input") {
  const std::string log = std::string(SPMDSIM_TESTDATA_DIR) + "/oom/seed_000.log";
  const RunOutput file = RunSpmdsim("oom --format json " + log);
  const RunOutput piped = RunSpmdsim("oom --format json - < " + log);
  REQUIRE(file.exit_code == 0);
  CHECK(piped.exit_code == 0);
  CHECK(json::parse(piped.out).at("oom") == json::parse(file.out).at("oom"));
}

TEST_CASE("the help names rng sites") {
  const RunOutput top = RunSpmdsim("--help");
  CHECK(top.out.find("rng sites") != std::string::npos);
  const RunOutput rng = RunSpmdsim("rng --help");
  CHECK(rng.out.find("rng sites") != std::string::npos);
}

}  // namespace
}  // namespace spmdsim::analyzer
