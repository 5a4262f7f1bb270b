// Runs the built `spmdsim stats` (SPMDSIM_BINARY) on bad input and checks what a user sees: the
// exit code (3: input that cannot be parsed, 2: usage or I/O error, 0: only warnings), the
// "file:line:col: error: ..." line with the offending source line and a caret, and that nothing
// crashes or hangs.
//
// Golden-style: every input under testdata/malformed/ (each a real dump excerpt broken one way)
// has <input>.expected beside it holding "exit N" and the first stderr line.
// tools/regen_malformed_expected.sh rewrites those files from the binary; review the diff.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/emit/utf8.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "testing/run_process.h"

namespace spmdsim::analyzer {
namespace {

namespace fs = std::filesystem;

// The repository root; the binary runs there so that paths in its messages are relative
// ("testdata/malformed/x.hlo:3:7: error: ..."), as in the .expected files.
const fs::path kRepo = fs::path(SPMDSIM_TESTDATA_DIR).parent_path();
const fs::path kMalformed = fs::path(SPMDSIM_TESTDATA_DIR) / "malformed";

// Longest a run may take before it counts as a hang (each input parses in milliseconds).
constexpr auto kHangLimit = std::chrono::seconds(60);

using RunResult = testing::ProcessResult;

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// Runs spmdsim with `args` in the repository root, stdout and stderr captured.
RunResult RunSpmdsim(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {SPMDSIM_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  // As a user would run it: under `ulimit -v 4000000` (not under the sanitizer).
  return testing::RunProcess(argv, {.cwd = kRepo.string(),
                                    .address_space_bytes = testing::kUserAddressSpaceLimit,
                                    .timeout = kHangLimit});
}

// Every input of testdata/malformed/ (or `dir`: files and directories), by name.
std::vector<std::string> MalformedInputs(const fs::path& dir = kMalformed) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".expected") || name == "README.md") continue;
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

struct Expected {
  int exit_code = -1;
  std::string first_line;
};

Expected ReadExpected(const std::string& name, const fs::path& dir = kMalformed) {
  std::ifstream in(dir / (name + ".expected"));
  REQUIRE(in.good());
  Expected expected;
  std::string exit_line;
  std::getline(in, exit_line);
  REQUIRE(exit_line.rfind("exit ", 0) == 0);
  expected.exit_code = std::stoi(exit_line.substr(5));
  std::getline(in, expected.first_line);
  return expected;
}

// Inputs whose error is a syntax error: the message must say what the parser expected there.
const char* const kSyntaxErrors[] = {
    "binary_garbage.hlo",         "empty.hlo",
    "header_then_garbage.hlo",    "truncated_mid_instruction.hlo",
    "truncated_operands.hlo",     "truncated_shape.hlo",
    "unbalanced_brace_extra.hlo", "unbalanced_brace_missing.hlo",
    "unclosed_module.hlo",        "unknown_type_f33.hlo",
    "unterminated_comment.hlo",   "unterminated_string.hlo",
};

TEST_CASE("every malformed input gets its expected exit code and message, and no crash") {
  const std::vector<std::string> names = MalformedInputs();
  REQUIRE(names.size() >= 30);
  const std::regex parse_error(R"(^testdata/malformed/[^:]+:[0-9]+:[0-9]+: error: .+)");
  for (const std::string& name : names) {
    const std::string path = "testdata/malformed/" + name;
    const RunResult run = RunSpmdsim({"stats", path});
    INFO(path << "\n--- stderr ---\n" << run.err);
    CHECK_FALSE(run.timed_out);
    CHECK(run.signal == 0);
    const Expected expected = ReadExpected(name);
    CHECK(run.exit_code == expected.exit_code);
    CHECK(FirstLine(run.err) == expected.first_line);
    // Binary input is never echoed: the excerpt is printable UTF-8, with no control character.
    CHECK(IsValidUtf8(run.err));
    CHECK(std::none_of(run.err.begin(), run.err.end(), [](char c) {
      const auto byte = static_cast<unsigned char>(c);
      return (byte < 0x20 && c != '\n') || byte == 0x7f;
    }));
    if (run.exit_code == 3) {
      // file:line:col: error: message, then the source line and a caret under the column.
      CHECK(std::regex_match(FirstLine(run.err), parse_error));
      CHECK(FirstLine(run.err).rfind(path + ":", 0) == 0);
      if (name != "empty.hlo") {  // an empty file has no line to show
        const std::string rest = run.err.substr(run.err.find('\n') + 1);
        const std::string caret_line = rest.substr(rest.find('\n') + 1);
        CHECK(caret_line.find('^') != std::string::npos);
      }
      CHECK(run.out.empty());
    } else if (run.exit_code == 2) {
      CHECK(FirstLine(run.err).rfind(path + ": error: ", 0) == 0);
      CHECK(run.out.empty());
    } else {
      CHECK(run.exit_code == 0);  // warnings only: the report is still written
      CHECK_FALSE(run.out.empty());
    }
  }
}

TEST_CASE("syntax errors name what the parser expected") {
  for (const char* name : kSyntaxErrors) {
    const std::string first_line = ReadExpected(name).first_line;
    INFO(name << ": " << first_line);
    CHECK(first_line.find(": error: ") != std::string::npos);
    CHECK(first_line.find("expected") != std::string::npos);
  }
}

TEST_CASE("a missing input file is an I/O error, exit 2") {
  const RunResult run = RunSpmdsim({"stats", "testdata/malformed/no_such_file.hlo"});
  CHECK(run.signal == 0);
  CHECK(run.exit_code == 2);
  CHECK(FirstLine(run.err) ==
        "testdata/malformed/no_such_file.hlo: error: no such file or directory");
  CHECK(run.out.empty());
}

TEST_CASE("bad flags and subcommands are usage errors, exit 2") {
  const std::vector<std::vector<std::string>> bad = {
      {"stats", "--frobnicate", "testdata/malformed/empty.hlo"},
      {"stats", "--format", "xml", "testdata/malformed/unknown_opcode.hlo"},
      {"stats", "--module"},
      {"frobnicate"},
  };
  for (const auto& args : bad) {
    const RunResult run = RunSpmdsim(args);
    INFO(args.back() << "\n--- stderr ---\n" << run.err);
    CHECK(run.signal == 0);
    CHECK(run.exit_code == 2);
    CHECK_FALSE(run.err.empty());
  }
}

// Every option is honoured or rejected with a plain message: no silently ignored option, and no
// range of 300 digits (CLI11's PositiveNumber prints 0 to DBL_MAX).
TEST_CASE("options out of their range or not offered are rejected with a plain message") {
  const std::string dump = "testdata/dumps/dp8_partitionable_remat";
  const std::vector<std::vector<std::string>> bad = {
      {"report", dump, "-o", "/dev/null", "--timeline-points", "0"},
      {"report", dump, "-o", "/dev/null", "--max-rows", "0"},
      {"analyze", dump, "--timeline-points", "-3"},
      {"check", dump, "--tolerance", "-1"},
      {"report", dump, "-o", "/dev/null", "--format", "json"},  // the report is HTML only
      {"analyze", dump, "--stage", "optimized"},
      {"report", dump, "-o", "-", "--trace", "-"},
      {"check", dump, "--junit", "-", "--sarif", "-"},
  };
  for (const auto& args : bad) {
    std::string joined;
    for (const std::string& a : args) joined += a + " ";
    const RunResult run = RunSpmdsim(args);
    INFO(joined << "\n--- stderr ---\n" << run.err);
    CHECK(run.exit_code == 2);
    CHECK(run.out.empty());
    CHECK_FALSE(run.err.empty());
    CHECK(FirstLine(run.err).size() < 160);
    CHECK(run.err.find("1797693134") == std::string::npos);
  }
  CHECK(FirstLine(RunSpmdsim(bad[0]).err) ==
        "--timeline-points: must be a whole number of at least 1, not 0");
}

TEST_CASE("an unknown opcode only warns: exit 0, the report counts it") {
  const RunResult run =
      RunSpmdsim({"stats", "--format", "json", "testdata/malformed/unknown_opcode.hlo"});
  CHECK(run.exit_code == 0);
  CHECK(FirstLine(run.err).rfind("testdata/malformed/unknown_opcode.hlo:", 0) == 0);
  CHECK(FirstLine(run.err).find(": warning: unknown opcode 'frobnicate'") != std::string::npos);
  const auto report = nlohmann::json::parse(run.out);
  const auto& stats = report.at("modules").at(0).at("stats");
  CHECK(stats.at("instructions_by_opcode").at("frobnicate") == 1);
  CHECK(stats.at("instruction_count") == 6);
  CHECK(stats.at("warnings") == 1);
}

TEST_CASE("an unknown attribute is kept verbatim and printed back, without a diagnostic") {
  const RunResult run = RunSpmdsim({"stats", "testdata/malformed/unknown_attribute.hlo"});
  CHECK(run.exit_code == 0);
  CHECK(run.err.empty());

  const std::string text = ReadAll(kMalformed / "unknown_attribute.hlo");
  const ir::ParseResult parsed =
      ir::ParseHloText(std::make_shared<ir::SourceBuffer>("unknown_attribute.hlo", text));
  REQUIRE(parsed.ok());
  const ir::HloInstruction* all_reduce = parsed.modules.at(0)->entry->root;
  REQUIRE(all_reduce->name == "all-reduce.31");
  CHECK(all_reduce->FindAttribute("frobnicate_level") == "{3, {4}}");
  CHECK(ir::PrintInstruction(*all_reduce).find(", frobnicate_level={3, {4}}") != std::string::npos);
  // Known attributes around it are still parsed.
  CHECK(all_reduce->use_global_device_ids());
  CHECK(all_reduce->Called("to_apply")->name == "region_87.88.clone");
}

}  // namespace
}  // namespace spmdsim::analyzer

namespace spmdsim::analyzer {
namespace {

// A --xla_dump_to directory where one module does not parse: its located error is printed, the
// other modules are still analysed, and the exit code says a module was skipped.
TEST_CASE("one module that does not parse never hides the others in a directory") {
  const fs::path dir = fs::temp_directory_path() / "spmdsim_partial_dump";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path good = fs::path(SPMDSIM_TESTDATA_DIR) / "dumps/dp8_partitionable_remat";
  for (const auto& entry : fs::directory_iterator(good)) {
    fs::copy_file(entry.path(), dir / entry.path().filename());
  }
  fs::copy_file(kMalformed / "truncated_operands.hlo",
                dir / "module_0001.jit_broken.before_optimizations.txt");
  for (const char* command : {"stats", "analyze", "collectives", "rng"}) {
    INFO(command);
    std::vector<std::string> args = {command, dir.string(), "--format", "json"};
    if (std::string(command) == "rng") args.insert(args.begin() + 1, "sites");
    const RunResult run = RunSpmdsim(args);
    CHECK(run.signal == 0);
    CHECK(run.exit_code == 3);
    CHECK(run.err.find("module_0001.jit_broken.before_optimizations.txt:") != std::string::npos);
    CHECK(run.err.find("error:") != std::string::npos);
    const nlohmann::json out = nlohmann::json::parse(run.out);
    REQUIRE(out.at("modules").size() == 2);  // both forms of the train step
    // In the order XLA wrote them: module 0 before module 1, the optimized form first.
    CHECK(out.at("modules").at(0).at("stage") == "after_optimizations");
    CHECK(out.at("modules").at(1).at("stage") == "before_optimizations");
  }
  fs::remove_all(dir);
}

TEST_CASE("StableHLO text is told apart from HLO text") {
  const fs::path file = fs::temp_directory_path() / "spmdsim_stablehlo.mlir";
  {
    std::ofstream out(file);
    out << "module @jit_f attributes {mhlo.num_partitions = 8 : i32} {\n}\n";
  }
  const RunResult run = RunSpmdsim({"stats", file.string()});
  CHECK(run.exit_code == 3);
  CHECK(run.err.find(":1:1: error: this is MLIR (StableHLO), not HLO text") != std::string::npos);
  fs::remove(file);
}

// --- Hostile modules (testdata/hostile/, written by tools/make_hostile.py) ----------------------
// Each parses, or fails on a limit, and attacks the analyses: cycles, deep nesting, call DAGs,
// device counts, invalid UTF-8, sums past 2^63. Every command must end with its exit code and a
// message, within the hang limit, and every JSON it writes must parse, with no size wrapped
// negative.

const fs::path kHostile = fs::path(SPMDSIM_TESTDATA_DIR) / "hostile";

// Every JSON number under a key ending in "_bytes" (sizes and traffic; deltas are "_delta").
void CollectByteFields(const nlohmann::json& j, std::vector<std::pair<std::string, int64_t>>& out,
                       const std::string& key = "") {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) CollectByteFields(v, out, k);
  } else if (j.is_array()) {
    for (const auto& v : j) CollectByteFields(v, out, key);
  } else if (j.is_number_integer() && key.ends_with("_bytes")) {
    out.emplace_back(key, j.get<int64_t>());
  }
}

TEST_CASE("hostile modules: every command exits with a message, valid JSON, no wrapped size") {
  const std::vector<std::string> names = MalformedInputs(kHostile);
  REQUIRE(names.size() >= 20);
  const char* const kCommands[][4] = {
      {"analyze", "", "", ""},
      {"analyze", "--format", "json", ""},
      {"collectives", "", "", ""},
      {"collectives", "--format", "json", ""},
      {"rng", "sites", "", ""},
      {"rng", "sites", "--format", "json"},
      {"stats", "--format", "json", ""},
      {"check", "--max-peak=9223372036854775807", "--format", "json"},
      {"report", "-o", "/dev/null", ""},
      {"diff", "", "", ""},
  };
  for (const std::string& name : names) {
    const std::string path = "testdata/hostile/" + name;
    const Expected expected = ReadExpected(name, kHostile);
    for (const auto& command : kCommands) {
      std::vector<std::string> args;
      for (const char* arg : command) {
        if (*arg != '\0') args.emplace_back(arg);
      }
      const bool json = std::find(args.begin(), args.end(), "json") != args.end();
      args.push_back(path);
      if (args[0] == "diff") args.push_back(path);
      const RunResult run = RunSpmdsim(args);
      std::string joined;
      for (const std::string& a : args) joined += a + " ";
      INFO("spmdsim " << joined << "\n--- stderr ---\n" << run.err.substr(0, 2000));
      CHECK_FALSE(run.timed_out);
      CHECK(run.signal == 0);
      CHECK(run.exit_code == expected.exit_code);
      if (args[0] == "analyze" && !json) CHECK(FirstLine(run.err) == expected.first_line);
      if (run.exit_code == 3) {
        CHECK(FirstLine(run.err).rfind(path + ":", 0) == 0);
        CHECK(FirstLine(run.err).find(": error: ") != std::string::npos);
        CHECK(run.out.empty());
      }
      if (json && run.exit_code <= 1) {
        const nlohmann::json document = nlohmann::json::parse(run.out, nullptr, false);
        REQUIRE_FALSE(document.is_discarded());
        std::vector<std::pair<std::string, int64_t>> sizes;
        CollectByteFields(document, sizes);
        for (const auto& [key, value] : sizes) {
          INFO(key);
          CHECK(value >= 0);
        }
      }
    }
  }
}

TEST_CASE("hostile modules: invalid UTF-8 in metadata is written as U+FFFD in JSON and HTML") {
  const std::string path = "testdata/hostile/invalid_utf8_metadata.hlo";
  const RunResult run = RunSpmdsim({"collectives", "--format", "json", path});
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("bad\xEF\xBF\xBDname") != std::string::npos);
  char dir_template[] = "/tmp/spmdsim_utf8_XXXXXX";
  const fs::path dir = mkdtemp(dir_template);
  const RunResult report = RunSpmdsim({"report", "-o", (dir / "r.html").string(), path});
  CHECK(report.exit_code == 0);
  const std::string html = ReadAll(dir / "r.html");
  CHECK(html.find('\xFF') == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("hostile modules: figures past 2^63 saturate and say so instead of wrapping") {
  const RunResult run = RunSpmdsim({"analyze", "testdata/hostile/sizes_overflow_int64.hlo"});
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("peak  over 8 EiB (64-bit limit)") != std::string::npos);
  CHECK_FALSE(std::regex_search(run.out, std::regex("(^|[ (])-[0-9]")));  // nothing negative
  const RunResult collectives =
      RunSpmdsim({"collectives", "--format", "json", "testdata/hostile/sizes_overflow_int64.hlo"});
  REQUIRE(collectives.exit_code == 0);
  const auto j = nlohmann::json::parse(collectives.out);
  for (const auto& op : j["modules"][0]["collectives"]["ops"]) {
    INFO(op.dump());
    CHECK(op["loop_multiplier"].get<int64_t>() >= 0);
  }
  // Two kinds of INT64_MAX runs each: their sum, the runs per step, saturates too.
  for (const char* format : {"text", "json"}) {
    const RunResult two = RunSpmdsim(
        {"collectives", "--format", format, "testdata/hostile/known_trip_count_two_kinds.hlo"});
    REQUIRE(two.exit_code == 0);
    CHECK(two.out.find("-9223372036854775808") == std::string::npos);
  }
  const RunResult html =
      RunSpmdsim({"report", "-o", "-", "testdata/hostile/known_trip_count_two_kinds.hlo"});
  REQUIRE(html.exit_code == 0);
  CHECK(html.out.find("-9223372036854775808") == std::string::npos);
}

TEST_CASE("JSON inputs nested past the limit are refused before they are parsed") {
  char dir_template[] = "/tmp/spmdsim_deep_XXXXXX";
  const fs::path dir = mkdtemp(dir_template);
  const std::string deep = std::string(1 << 20, '[') + std::string(1 << 20, ']');
  const std::string json = (dir / "deep.json").string();
  std::ofstream(json) << deep;
  const std::string dump = std::string(SPMDSIM_TESTDATA_DIR) + "/dumps/dp8_partitionable_remat";
  const RunResult baseline = RunSpmdsim({"check", dump, "--baseline", json});
  CHECK(baseline.exit_code == 2);
  CHECK(baseline.err.find("nested more than 64 deep") != std::string::npos);
  const RunResult topology = RunSpmdsim({"collectives", dump, "--topology", json});
  CHECK(topology.exit_code == 2);
  CHECK(topology.err.find("nested more than 64 deep") != std::string::npos);
  // A companion file of a dump: the module is still analysed, the file named as unreadable.
  const fs::path with_companion = dir / "dump";
  fs::create_directories(with_companion);
  fs::copy_file(dump + "/module_0000.jit_train_step.cpu_after_optimizations.txt.gz",
                with_companion / "module_0000.jit_train_step.cpu_after_optimizations.txt.gz");
  fs::copy_file(json, with_companion / "memory_analysis.json");
  const RunResult analyze = RunSpmdsim({"analyze", with_companion.string()});
  CHECK(analyze.exit_code == 0);
  CHECK(analyze.out.find("nested more than 64 deep") != std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace spmdsim::analyzer
