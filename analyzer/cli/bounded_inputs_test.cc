// Hostile inputs of every kind spmdsim reads, run as a user would under a 4 GB address-space limit
// (`ulimit -v 4000000`): each ends with its exit code and message within 10 s of CPU time, within
// the memory bound docs/TESTING.md states, and with outputs that are well-formed. Under the
// sanitizers (which reserve terabytes of address space) the limit is left off and the time allowed
// is longer.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/run_process.h"

namespace spmdsim::analyzer {
namespace {

namespace fs = std::filesystem;

constexpr bool kSanitized = testing::kAddressSanitizer;
constexpr double kSecondsAllowed = kSanitized ? 120.0 : 10.0;

const fs::path kRepo = fs::path(SPMDSIM_TESTDATA_DIR).parent_path();

// A fresh folder under /tmp, removed with the object.
struct TempDir {
  fs::path path;
  TempDir() {
    char name[] = "/tmp/spmdsim_bounded_XXXXXX";
    path = mkdtemp(name);
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    for (const auto& entry : fs::recursive_directory_iterator(
             path, fs::directory_options::skip_permission_denied, ec)) {
      fs::permissions(entry.path(), fs::perms::owner_all, fs::perm_options::add, ec);
    }
    fs::remove_all(path, ec);
  }
};

testing::ProcessResult Run(const std::vector<std::string>& args, const std::string& stdin_path = "",
                           uint32_t uid = 0) {
  std::vector<std::string> argv = {SPMDSIM_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  testing::ProcessOptions options;
  options.cwd = kRepo.string();
  options.stdin_path = stdin_path;
  options.address_space_bytes = testing::kUserAddressSpaceLimit;
  // The bound is on CPU time (a CI machine running two tests at once doubles wall time); the wall
  // limit only catches a hang.
  options.timeout = std::chrono::seconds(static_cast<int>(kSecondsAllowed) * 6);
  options.uid = uid;
  const testing::ProcessResult result = testing::RunProcess(argv, options);
  INFO("spmdsim " << fmt::format("{}", fmt::join(args, " ")) << ": exit " << result.exit_code
                  << ", " << result.seconds << " s wall, " << result.cpu_seconds << " s CPU, "
                  << result.max_rss_kb << " KB\n"
                  << result.err.substr(0, 2000));
  CHECK(result.signal == 0);
  CHECK_FALSE(result.timed_out);
  CHECK(result.cpu_seconds < kSecondsAllowed);
  return result;
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

void Write(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

// Every JSON document in `text` parses (one per run).
void RequireJson(const std::string& text) { CHECK(nlohmann::json::accept(text)); }

TEST_CASE("standard input past the input limit is refused with the limit's message, not OOM") {
  for (const char* command : {"analyze", "oom"}) {
    const testing::ProcessResult run = Run({command, "-"}, "/dev/zero");
    CHECK(run.exit_code == 2);
    CHECK(FirstLine(run.err).ends_with(
        "<stdin>: error: more than 2048 MiB of text, the most spmdsim reads in one input "
        "(ir/limits.h)"));
  }
}

// A gzip bomb: 2 GiB + 1 MiB of blanks compress to ~2 MB, so it is made here, not committed.
TEST_CASE("a gzip input that decompresses past the input limit is refused, exit 2") {
  TempDir dir;
  const std::string path = (dir.path / "bomb.hlo.gz").string();
  gzFile gz = gzopen(path.c_str(), "wb1");
  REQUIRE(gz != nullptr);
  const std::string header = "HloModule bomb\n";
  gzwrite(gz, header.data(), static_cast<unsigned>(header.size()));
  const std::string blanks(size_t{1} << 20, ' ');
  for (int i = 0; i < 2049; ++i) gzwrite(gz, blanks.data(), static_cast<unsigned>(blanks.size()));
  gzclose(gz);
  const testing::ProcessResult run = Run({"stats", path});
  CHECK(run.exit_code == 2);
  CHECK(FirstLine(run.err) == path +
                                  ": error: decompresses to more than 2048 MiB of text, the most "
                                  "spmdsim reads in one input (ir/limits.h)");
}

TEST_CASE("10,000 collectives over 65,536 devices keep one copy of their groups") {
  TempDir dir;
  std::string text =
      "HloModule iota_groups, num_partitions=65536\n\n"
      "%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
      "  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n\n"
      "ENTRY %main (a: f32[4]) -> f32[4] {\n  %a0 = f32[4]{0} parameter(0)\n";
  constexpr int kOps = 10000;
  for (int i = 1; i <= kOps; ++i) {
    text += fmt::format(
        "  {}%a{} = f32[4]{{0}} all-reduce(%a{}), channel_id={}, "
        "replica_groups=[1,65536]<=[65536], "
        "use_global_device_ids=true, to_apply=%add\n",
        i == kOps ? "ROOT " : "", i, i - 1, i);
  }
  text += "}\n";
  const std::string path = (dir.path / "groups.hlo").string();
  Write(path, text);
  for (const std::string command : {"collectives", "check", "analyze"}) {
    std::vector<std::string> args = {command, path, "--format", "json"};
    if (command == "check") args.insert(args.end(), {"--max-wire", "1PiB"});
    const testing::ProcessResult run = Run(args);
    CHECK(run.exit_code == 0);
    RequireJson(run.out);
    // docs/TESTING.md: a group list is held once per distinct list, not per op.
    if (!kSanitized) CHECK(run.max_rss_kb < 256 * 1024);
  }
  const testing::ProcessResult rng = Run({"rng", "sites", path});
  CHECK(rng.exit_code == 0);
}

TEST_CASE("a folder of 10,000 small modules takes memory for what it holds") {
  TempDir dir;
  constexpr int kModules = 10000;
  for (int i = 0; i < kModules; ++i) {
    Write(dir.path / fmt::format("module_{:05d}.m{}.after_optimizations.txt", i, i),
          fmt::format("HloModule m{}\n\nENTRY %main (a: f32[4]) -> f32[4] {{\n"
                      "  %a = f32[4]{{0}} parameter(0)\n  ROOT %n = f32[4]{{0}} negate(%a)\n}}\n",
                      i));
  }
  const testing::ProcessResult run = Run({"analyze", dir.path.string(), "--format", "json"});
  CHECK(run.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE_FALSE(j.is_discarded());
  CHECK(j.at("modules").size() == kModules);
  if (!kSanitized) CHECK(run.max_rss_kb < 1024 * 1024);  // docs/TESTING.md: ~35 KB per module
}

TEST_CASE("an OOM listing of 100,000 buffers and a 256 MiB op_name stay within the bound") {
  TempDir dir;
  {
    std::ofstream log(dir.path / "many.log");
    log << "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 402653184 bytes.\n";
    for (int i = 1; i <= 100000; ++i) {
      log << "        Buffer " << i << ":\n                Size: 384.00MiB\n"
          << "                Operator: op_name=\"jit(step)/block_" << i
          << "/dropout/threefry2x32\" source_file=\"/home/u/model.py\" source_line=76\n"
          << "                XLA Label: custom-call\n"
          << "                Shape: u32[128,1024,768]\n                "
             "==========================\n\n";
    }
  }
  const auto input_kb = static_cast<int64_t>(fs::file_size(dir.path / "many.log") / 1024);
  const testing::ProcessResult many =
      Run({"oom", (dir.path / "many.log").string(), "--format", "json"});
  CHECK(many.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(many.out, nullptr, false);
  REQUIRE_FALSE(j.is_discarded());
  CHECK(j.at("oom").at("buffers").size() == 100000);
  // docs/TESTING.md: the JSON is written one buffer at a time, ~12 bytes held per input byte.
  if (!kSanitized) CHECK(many.max_rss_kb < 16 * input_kb + 64 * 1024);
  {
    std::ofstream log(dir.path / "long.log");
    log << "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 402653184 bytes.\n"
        << "        Buffer 1:\n                Size: 384.00MiB\n"
        << "                Operator: op_name=\"";
    const std::string piece(size_t{1} << 20, 'a');
    for (int i = 0; i < 256; ++i) log << piece;
    log << "\" source_file=\"x.py\" source_line=1\n                XLA Label: fusion\n"
        << "                Shape: u32[128,1024,768]\n                ==========================\n";
  }
  for (const char* format : {"text", "json"}) {
    const testing::ProcessResult run =
        Run({"oom", (dir.path / "long.log").string(), "--format", format});
    CHECK(run.exit_code == 0);
    CHECK(run.out.size() < 64 * 1024);  // the op_name cut to 8 KiB where it is shown
    CHECK(run.out.find("more bytes not kept") != std::string::npos);
    if (std::string(format) == "json") RequireJson(run.out);
  }
}

TEST_CASE("an OOM listing's size past 64 bits stays in the total, saturated") {
  TempDir dir;
  Write(dir.path / "big.log",
        "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 402653184 bytes.\n"
        "        Buffer 1:\n                Size: 99999999999999999999.00GiB\n"
        "                Operator: op_name=\"a\"\n                XLA Label: fusion\n"
        "                Shape: u32[4]\n                ==========================\n"
        "        Buffer 2:\n                Size: 384.00MiB\n"
        "                Operator: op_name=\"b\"\n                XLA Label: fusion\n"
        "                Shape: u32[4]\n                ==========================\n");
  const testing::ProcessResult json =
      Run({"oom", (dir.path / "big.log").string(), "--format", "json"});
  REQUIRE(json.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(json.out);
  CHECK(j.at("oom").at("total_bytes") == INT64_MAX);
  const testing::ProcessResult text = Run({"oom", (dir.path / "big.log").string()});
  CHECK(text.out.find("0 B listed") == std::string::npos);
  CHECK(text.out.find("over 8 EiB") != std::string::npos);
}

TEST_CASE("a chain of 20,000 key derivations is walked in linear time") {
  TempDir dir;
  std::string text =
      "HloModule keychain\n\nENTRY %main (k0: u32[1], k1: u32[1]) -> u32[1] {\n"
      "  %a0 = u32[1]{0} parameter(0)\n  %b0 = u32[1]{0} parameter(1)\n"
      "  %c0 = u32[1]{0} constant({0})\n  %c1 = u32[1]{0} constant({1})\n";
  constexpr int kKeys = 20000;
  for (int i = 1; i <= kKeys; ++i) {
    text += fmt::format(
        "  %t{0} = (u32[1]{{0}}, u32[1]{{0}}) custom-call(%a{1}, %b{1}, %c0, %c1), "
        "custom_call_target=\"cu_threefry2x32_ffi\", api_version=API_VERSION_TYPED_FFI, "
        "metadata={{op_name=\"jit(f)/jit(_threefry_fold_in)/threefry2x32\"}}\n"
        "  %a{0} = u32[1]{{0}} get-tuple-element(%t{0}), index=0\n"
        "  %b{0} = u32[1]{{0}} get-tuple-element(%t{0}), index=1\n",
        i, i - 1);
  }
  text += fmt::format("  ROOT %r = u32[1]{{0}} add(%a{0}, %b{0})\n}}\n", kKeys);
  const std::string path = (dir.path / "chain.hlo").string();
  Write(path, text);
  // 40 s and 101 s before (each key's walk went back over the whole chain); 0.2 s and 0.6 s now.
  const testing::ProcessResult rng = Run({"rng", "sites", path, "--format", "json"});
  CHECK(rng.exit_code == 0);
  RequireJson(rng.out);
  CHECK(Run({"diff", path, path}).exit_code == 0);
}

TEST_CASE("control characters of a dump reach no output raw") {
  TempDir dir;
  // An ESC sequence as XLA's text escapes it, raw C0 and C1 controls, and the non-characters
  // U+FFFE/U+FFFF, in op_names, a source path and the file's own name.
  const std::string op_name =
      "jit(f)/\\x1b[31mred\\x07/\x1b]0;title\x07/\xc2\x9b"
      "2J/\xef\xbf\xbe`x`<img src=x onerror=alert(1)>";
  const std::string source = "/tmp/m`od\xef\xbf\xbf|<b>ule*.py";
  const std::string text =
      "HloModule esc, num_partitions=2\n\n"
      "%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
      "  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n\n"
      "ENTRY %main (a: f32[1048576]) -> f32[1048576] {\n  %a = f32[1048576]{0} parameter(0)\n"
      "  %m = f32[1048576]{0} multiply(%a, %a), metadata={op_name=\"" +
      op_name + "\" source_file=\"" + source +
      "\" source_line=3}\n"
      "  ROOT %r = f32[1048576]{0} all-reduce(%m), channel_id=1, replica_groups={{0,1}}, "
      "use_global_device_ids=true, to_apply=%add, metadata={op_name=\"" +
      op_name + "\" source_file=\"" + source + "\" source_line=3}\n}\n";
  const std::string path = (dir.path / "esc\xef\xbf\xbe`name\x1b[0m.hlo").string();
  Write(path, text);
  const auto raw_control = [](const std::string& out) {
    for (size_t i = 0; i < out.size(); ++i) {
      const auto c = static_cast<unsigned char>(out[i]);
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) return true;
      if (c == 0xc2 && i + 1 < out.size() && static_cast<unsigned char>(out[i + 1]) >= 0x80 &&
          static_cast<unsigned char>(out[i + 1]) <= 0x9f) {
        return true;
      }
      if (out.compare(i, 3, "\xef\xbf\xbe") == 0 || out.compare(i, 3, "\xef\xbf\xbf") == 0) {
        return true;
      }
    }
    return false;
  };
  for (const std::vector<std::string>& args : {std::vector<std::string>{"analyze", path},
                                               {"collectives", path},
                                               {"rng", "sites", path},
                                               {"analyze", path, "--format", "json"},
                                               {"report", path, "-o", "-"},
                                               {"analyze", dir.path.string() + "/nothing"}}) {
    const testing::ProcessResult run = Run(args);
    CHECK_FALSE(raw_control(run.out));
    CHECK_FALSE(raw_control(run.err));
  }
  CHECK(Run({"analyze", path}).out.find("\\x1b[31mred\\x07") != std::string::npos);
  // The CI formats: JUnit XML holds no character XML lacks and SARIF parses back (the step
  // summary's Markdown: ci_formats_test.cc).
  const std::string junit = (dir.path / "junit.xml").string();
  const std::string sarif = (dir.path / "log.sarif").string();
  const std::string baseline = (dir.path / "baseline.json").string();
  REQUIRE(Run({"check", path, "--write-baseline", baseline}).exit_code == 0);
  const testing::ProcessResult check = Run({"check", path, "--baseline", baseline, "--junit", junit,
                                            "--sarif", sarif, "--max-peak", "1KiB"});
  CHECK(check.exit_code == 1);
  std::ifstream junit_in(junit);
  const std::string xml((std::istreambuf_iterator<char>(junit_in)), {});
  CHECK_FALSE(raw_control(xml));
  CHECK(xml.find("<testsuites") != std::string::npos);
  std::ifstream sarif_in(sarif);
  CHECK(nlohmann::json::accept(sarif_in));
}

TEST_CASE("topology figures outside physical ranges are refused with the range") {
  TempDir dir;
  const std::string dump = std::string(SPMDSIM_TESTDATA_DIR) + "/dumps/dp8_partitionable_remat";
  const auto topology = [&](const std::string& latency, const std::string& bandwidth) {
    const fs::path path = dir.path / "t.json";
    Write(path, R"({"name": "t", "devices_per_node": 8, "intra_node": {"latency_us": )" + latency +
                    R"(, "bus_bandwidth_GBps": )" + bandwidth + "}}");
    return Run({"collectives", dump, "--topology", path.string()});
  };
  const testing::ProcessResult slow = topology("1", "1e-300");
  CHECK(slow.exit_code == 2);
  CHECK(slow.err.find("bus_bandwidth_GBps\" must be a number of GB/s from 0.001") !=
        std::string::npos);
  const testing::ProcessResult late = topology("1e308", "100");
  CHECK(late.exit_code == 2);
  CHECK(late.err.find("latency_us\" must be a number of microseconds from 0 to 1e6") !=
        std::string::npos);
  CHECK(topology("5", "100").exit_code == 0);
}

TEST_CASE("a folder walk goes on past a subfolder it cannot list, naming it") {
  TempDir dir;
  const std::string module = std::string(SPMDSIM_TESTDATA_DIR) + "/hostile/call_chain_256_deep.hlo";
  fs::copy_file(module, dir.path / "module_0000.a.after_optimizations.txt");
  fs::create_directories(dir.path / "locked");
  fs::copy_file(module, dir.path / "locked" / "module_0001.b.after_optimizations.txt");
  fs::permissions(dir.path / "module_0000.a.after_optimizations.txt",
                  fs::perms::others_read | fs::perms::group_read, fs::perm_options::add);
  fs::permissions(dir.path / "locked", fs::perms::none);
  // As a user who is not root (root lists any folder): nobody.
  const testing::ProcessResult run = Run({"analyze", dir.path.string()}, "", 65534);
  // The other modules analysed; the exit is an unreadable file's, after them (2: an I/O error).
  CHECK(run.exit_code == 2);
  CHECK(run.out.find("module call_chain") != std::string::npos);
  CHECK(run.err.find((dir.path / "locked").string() +
                     ": error: cannot list directory: Permission denied; its files are skipped") !=
        std::string::npos);
}

}  // namespace
}  // namespace spmdsim::analyzer
