// What a user who takes a wrong turn is told: each case runs the built `spmdsim` (SPMDSIM_BINARY)
// as a user would and checks the exit code and that the message names the next step (issue 46's
// message cases: a misspelt command, a path where the command goes, `diff` with one input, XLA's
// protobuf dumps, a command given no input, `oom` given a dump, a TPU OOM and the GPU-only fix).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/run_process.h"

namespace spmdsim::analyzer {
namespace {

namespace fs = std::filesystem;

const fs::path kRepo = fs::path(SPMDSIM_TESTDATA_DIR).parent_path();
const std::string kDump = "testdata/dumps/dp8_partitionable_remat";

testing::ProcessResult Run(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {SPMDSIM_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunProcess(argv, {.cwd = kRepo.string(),
                                    .address_space_bytes = testing::kUserAddressSpaceLimit,
                                    .timeout = std::chrono::seconds(120)});
}

bool Says(const testing::ProcessResult& run, const std::string& text) {
  return run.err.find(text) != std::string::npos;
}

// A fresh folder under /tmp, removed with the object.
struct TempDir {
  fs::path path;
  TempDir() {
    char name[] = "/tmp/spmdsim_messages_XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void WriteBinary(const fs::path& path) {
  std::ofstream out(path, std::ios::binary);
  const char bytes[] = {'\x0a', '\x12', 'j', 'i', 't', '\0', '\x1b', '\xff', '\x80', '\x01'};
  for (int i = 0; i < 100; ++i) out.write(bytes, sizeof(bytes));
}

TEST_CASE("a misspelt command is offered the command it was meant to be") {
  const testing::ProcessResult run = Run({"analyse", kDump});
  INFO(run.err);
  CHECK(run.exit_code == 2);
  CHECK(run.out.empty());
  CHECK(run.err == "spmdsim: error: unknown command 'analyse'; did you mean 'analyze'?\n");
  CHECK(Says(Run({"colectives", kDump}), "did you mean 'collectives'?"));
  const testing::ProcessResult unknown = Run({"frobnicate"});
  CHECK(unknown.exit_code == 2);
  CHECK(Says(unknown, "commands: stats, collectives"));
}

TEST_CASE("a dump given where the command goes is told the command that reads it") {
  const testing::ProcessResult run = Run({kDump});
  INFO(run.err);
  CHECK(run.exit_code == 2);
  CHECK(Says(run, "to analyse it: spmdsim analyze " + kDump));
}

TEST_CASE("diff with one input says it compares two") {
  const testing::ProcessResult run = Run({"diff", kDump});
  INFO(run.err);
  CHECK(run.exit_code == 2);
  CHECK(Says(run, "diff compares two: spmdsim diff BEFORE AFTER"));
  CHECK_FALSE(Says(run, "b is required"));
}

TEST_CASE("XLA's protobuf dumps are named as such, with the flag that dumps text") {
  TempDir dir;
  WriteBinary(dir.path / "module_0001.jit_step.before_optimizations.hlo.pb");
  WriteBinary(dir.path / "module_0001.jit_step.sm_9.0_gpu_after_optimizations.hlo.pb");
  // A folder of only protobuf dumps.
  const testing::ProcessResult folder = Run({"stats", dir.path.string()});
  INFO(folder.err);
  CHECK(folder.exit_code == 2);
  CHECK(Says(folder, "it holds 2 protobuf dump file(s) (.pb)"));
  CHECK(Says(folder, "--xla_dump_hlo_as_text"));
  // One protobuf file: no binary line shown as the place of a syntax error.
  const fs::path file = dir.path / "module_0001.jit_step.before_optimizations.hlo.pb";
  const testing::ProcessResult one = Run({"analyze", file.string()});
  INFO(one.err);
  CHECK(one.exit_code == 3);
  CHECK(Says(one, file.string() + ":1:1: error: binary data, not HLO text"));
  CHECK(Says(one, "--xla_dump_hlo_as_text"));
  CHECK(one.err.find('\x1b') == std::string::npos);
  // Beside text dumps, the protobuf files are skipped with a note and the text is analysed.
  fs::copy(kRepo / kDump, dir.path / "text");
  WriteBinary(dir.path / "text" / "module_0099.jit_x.hlo.pb");
  const testing::ProcessResult mixed = Run({"stats", (dir.path / "text").string()});
  INFO(mixed.err);
  CHECK(mixed.exit_code == 0);
  CHECK(Says(mixed, "note: skipped 1 protobuf dump file(s) (.pb)"));
}

TEST_CASE("a command given no input says it shows the demo dump; spmdsim alone does not") {
  const testing::ProcessResult sites = Run({"rng", "sites"});
  INFO(sites.err);
  CHECK(sites.exit_code == 0);
  CHECK(Says(sites, "no input given: this is the demo dump built into spmdsim"));
  const testing::ProcessResult demo = Run({});
  CHECK(demo.exit_code == 0);
  CHECK_FALSE(Says(demo, "no input given"));
}

TEST_CASE("oom given a dump says the dump goes with --dump") {
  const testing::ProcessResult folder = Run({"oom", kDump});
  INFO(folder.err);
  CHECK(folder.exit_code == 2);
  CHECK(Says(folder, "spmdsim oom LOG --dump " + kDump));
  fs::path module;
  for (const auto& entry : fs::directory_iterator(kRepo / kDump)) {
    const std::string name = entry.path().filename().string();
    if (name.find("after_optimizations.txt") != std::string::npos) module = entry.path();
  }
  REQUIRE_FALSE(module.empty());
  const testing::ProcessResult file = Run({"oom", module.string()});
  INFO(file.err);
  CHECK(file.exit_code == 3);
  CHECK(Says(file, "this is an HLO module, not an OOM message: give it with --dump"));
}

TEST_CASE("a TPU OOM is never offered XLA:GPU's threefry kernel lowering as a fix") {
  size_t tpu_logs_with_random_bits = 0;
  for (const auto& entry : fs::directory_iterator(kRepo / "testdata" / "oom")) {
    if (entry.path().extension() != ".log") continue;
    const testing::ProcessResult run =
        Run({"oom", entry.path().string(), "--format", "json", "--devices", "8"});
    INFO(entry.path() << "\n" << run.err);
    REQUIRE(run.exit_code == 0);
    const nlohmann::json json = nlohmann::json::parse(run.out).at("oom");
    const bool tpu = entry.path().filename().string().rfind("tpu", 0) == 0;
    const bool offers_kernel_fix =
        json.value("savings", nlohmann::json::object()).contains("fused");
    if (tpu) {
      CHECK_FALSE(offers_kernel_fix);
      tpu_logs_with_random_bits += json.value("random_bytes", int64_t{0}) > 0;
    } else if (json.value("random_bytes", int64_t{0}) > 0) {
      CHECK(offers_kernel_fix);
    }
  }
  CHECK(tpu_logs_with_random_bits > 0);
}

TEST_CASE("a module whose header names no device count runs on the devices its collectives name") {
  // The PyTorch/XLA module of testdata with its header's replica_count=8 taken out, as some
  // PyTorch/XLA dumps are printed: its all-reduce's replica groups still name devices 0..7.
  const fs::path original = kRepo / "testdata" / "pytorch_xla" /
                            "module_0000.SyncTensorsGraph.29.sm_8.0_gpu_after_optimizations.txt";
  std::ifstream in(original);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string header_count = ", replica_count=8";
  const size_t at = text.find(header_count);
  REQUIRE(at != std::string::npos);
  text.erase(at, header_count.size());
  TempDir dir;
  const fs::path file = dir.path / original.filename();
  std::ofstream(file) << text;
  const testing::ProcessResult collectives = Run({"collectives", file.string()});
  INFO(collectives.out << collectives.err);
  CHECK(collectives.exit_code == 0);
  CHECK(collectives.out.find(", 8 devices,") != std::string::npos);
  CHECK(collectives.out.find("its collectives name device ids up to 7: 8 devices assumed") !=
        std::string::npos);
  const testing::ProcessResult stats = Run({"stats", file.string(), "--format", "json"});
  const nlohmann::json module = nlohmann::json::parse(stats.out).at("modules").at(0).at("stats");
  CHECK(module.at("devices") == 8);
  CHECK(module.at("devices_from_collectives") == true);
  CHECK(module.at("replica_count") == 1);
}

}  // namespace
}  // namespace spmdsim::analyzer
