// Runs the built `spmdsim check` (SPMDSIM_BINARY) as a CI job would: a baseline written from one
// real dump, another dump checked against it, with the figures asserted against XLA's own
// (memory_analysis.json beside each dump) and against `spmdsim rng sites` / `collectives`; the
// usage errors (exit 2), and the GitHub annotations, step summary, JUnit and SARIF files.
#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "analyzer/test_support.h"
#include "analyzer/views/ci_formats.h"

namespace spmdsim::analyzer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::RunOutput;
using test::RunSpmdsim;

const std::string kDumps = std::string(SPMDSIM_TESTDATA_DIR) + "/dumps/";
const std::string kRemat = kDumps + "dp8_partitionable_remat";
const std::string kNoremat = kDumps + "dp8_partitionable_noremat";
const std::string kShardmap = kDumps + "dp8_shardmap_key_partitionable";
const std::string kAfter = " --stage after_optimizations";

// A fresh directory for the files a run writes, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string name = (fs::temp_directory_path() / "spmdsim_check_XXXXXX").string();
    REQUIRE(mkdtemp(name.data()) != nullptr);
    path = name;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// XLA's figures for a dump's after_optimizations module (memory_analysis.json): the peak as
// argument + output - alias + temp, as compiled.memory_analysis() reports it.
struct XlaFigures {
  int64_t peak = 0;
  int64_t temp = 0;
};
XlaFigures ReadXla(const std::string& dump) {
  const json m = json::parse(ReadText(dump + "/memory_analysis.json"));
  XlaFigures x;
  x.temp = m.at("temp_size_in_bytes").get<int64_t>();
  x.peak = m.at("argument_size_in_bytes").get<int64_t>() +
           m.at("output_size_in_bytes").get<int64_t>() -
           m.at("alias_size_in_bytes").get<int64_t>() + x.temp;
  return x;
}

json AfterModule(const json& out) {
  for (const json& m : out.at("modules")) {
    if (m.at("stage") == "after_optimizations") return m;
  }
  FAIL("no after_optimizations module in the output");
  return json();
}

// (kind, op_name) of a finding in JSON output.
std::pair<std::string, std::string> Key(const json& finding) {
  return {finding.at("kind").get<std::string>(), finding.at("op_name").get<std::string>()};
}

const json& Row(const json& module, const std::string& metric) {
  for (const json& row : module.at("check").at("checks")) {
    if (row.at("metric") == metric) return row;
  }
  FAIL("no check row " << metric);
  return module;
}

// (kind, op_name) of every finding `spmdsim rng sites` reports for a dump's after_optimizations
// module, with each finding's source.
std::map<std::pair<std::string, std::string>, std::string> RngFindings(const std::string& dump) {
  const RunOutput run = RunSpmdsim("rng sites --format json " + dump);
  REQUIRE(run.exit_code == 0);
  std::map<std::pair<std::string, std::string>, std::string> findings;
  const json module = AfterModule(json::parse(run.out));
  for (const json& f : module.at("findings")) {
    findings[Key(f)] = f.at("source");
  }
  return findings;
}

// Findings `spmdsim rng sites` reports for a dump's after_optimizations module, all of them.
size_t FindingCount(const std::string& dump) {
  const RunOutput run = RunSpmdsim("rng sites --format json " + dump);
  REQUIRE(run.exit_code == 0);
  return AfterModule(json::parse(run.out)).at("findings").size();
}

size_t Count(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++count;
  }
  return count;
}

TEST_CASE("check exits 1 on a real regression: peak and temp from XLA's figures") {
  TempDir dir;
  const XlaFigures remat = ReadXla(kRemat);
  const XlaFigures noremat = ReadXla(kNoremat);
  // Which program needs more memory is read from XLA's files, not assumed. (With the pinned JAX
  // and this small model, the rematerialized step's temp is 1 KiB larger.)
  REQUIRE(remat.peak != noremat.peak);
  const bool remat_larger = remat.peak > noremat.peak;
  const std::string smaller = remat_larger ? kNoremat : kRemat;
  const std::string larger = remat_larger ? kRemat : kNoremat;
  const XlaFigures low = remat_larger ? noremat : remat;
  const XlaFigures high = remat_larger ? remat : noremat;

  const std::string baseline = dir / "baseline.json";
  REQUIRE(RunSpmdsim("check " + smaller + kAfter + " --write-baseline " + baseline).exit_code == 0);
  const json written = json::parse(ReadText(baseline));
  CHECK(written.at("kind") == "spmdsim-baseline");
  CHECK(written.at("schema_version") == 1);
  REQUIRE(written.at("modules").size() == 1);
  CHECK(written.at("modules")[0].at("peak_bytes") == low.peak);
  CHECK(written.at("modules")[0].at("temp_bytes") == low.temp);

  const RunOutput run =
      RunSpmdsim("check " + larger + kAfter + " --baseline " + baseline + " --format json");
  CHECK(run.exit_code == 1);
  const json out = json::parse(run.out);
  CHECK(out.at("passed") == false);
  const json& module = AfterModule(out);
  CHECK(module.at("check").at("baseline") == "matched");
  for (const auto& [metric, before, after] :
       {std::tuple{"peak_bytes", low.peak, high.peak}, {"temp_bytes", low.temp, high.temp}}) {
    INFO(metric);
    const json& row = Row(module, metric);
    CHECK(row.at("baseline") == before);
    CHECK(row.at("now") == after);
    CHECK(row.at("change") == after - before);
    CHECK(row.at("status") == "regressed");
  }

  // The text says the same in one table and a verdict.
  const RunOutput text = RunSpmdsim("check " + larger + kAfter + " --baseline " + baseline);
  CHECK(text.exit_code == 1);
  CHECK(std::regex_search(text.out, std::regex("peak_bytes .* REGRESSED")));
  CHECK(text.out.find("FAILED: ") != std::string::npos);

  // A tolerance above the rise lets it through.
  const double pct = 100.0 * static_cast<double>(high.peak - low.peak) / low.peak;
  const double temp_pct = 100.0 * static_cast<double>(high.temp - low.temp) / low.temp;
  const std::string tolerance = std::to_string(std::max(pct, temp_pct) * 2);
  const RunOutput tolerant = RunSpmdsim("check " + larger + kAfter + " --baseline " + baseline +
                                        " --tolerance " + tolerance + " --format json");
  const json relaxed = AfterModule(json::parse(tolerant.out));
  CHECK(Row(relaxed, "peak_bytes").at("status") == "ok");
  CHECK(Row(relaxed, "temp_bytes").at("status") == "ok");
}

TEST_CASE("check: noremat against a remat baseline fails on new rng-key-residual findings") {
  TempDir dir;
  const std::string baseline = dir / "remat.json";
  REQUIRE(RunSpmdsim("check " + kRemat + " --write-baseline " + baseline).exit_code == 0);

  // The baseline keeps the module the devices run (the after-optimizations one; --stage all
  // adds the estimate), its file relative to the dump folder.
  const json written = json::parse(ReadText(baseline));
  REQUIRE(written.at("modules").size() == 1);
  CHECK(written.at("modules")[0].at("stage") == "after_optimizations");
  CHECK(written.at("modules")[0].at("file") ==
        "module_0000.jit_train_step.cpu_after_optimizations.txt.gz");
  // Against its own baseline the remat dump passes, every row ok.
  const RunOutput same =
      RunSpmdsim("check " + kRemat + " --baseline " + baseline + " --format json");
  CHECK(same.exit_code == 0);
  const json same_out = json::parse(same.out);
  CHECK(same_out.at("passed") == true);
  CHECK(same_out.at("modules").size() == 1);
  // Both stages when asked for.
  const std::string both = dir / "both.json";
  REQUIRE(RunSpmdsim("check " + kRemat + " --stage all --write-baseline " + both).exit_code == 0);
  CHECK(json::parse(ReadText(both)).at("modules").size() == 2);
  for (const json& m : same_out.at("modules")) {
    for (const json& row : m.at("check").at("checks")) CHECK(row.at("status") == "ok");
  }

  const RunOutput run =
      RunSpmdsim("check " + kNoremat + " --baseline " + baseline + " --format json");
  CHECK(run.exit_code == 1);
  const json module = AfterModule(json::parse(run.out));
  const XlaFigures remat = ReadXla(kRemat);
  const XlaFigures noremat = ReadXla(kNoremat);
  CHECK(Row(module, "peak_bytes").at("baseline") == remat.peak);
  CHECK(Row(module, "peak_bytes").at("now") == noremat.peak);
  CHECK(Row(module, "peak_bytes").at("status") == (noremat.peak > remat.peak ? "regressed" : "ok"));

  // New = in `rng sites` of noremat and not of remat, by (kind, op_name).
  const auto before = RngFindings(kRemat);
  std::set<std::pair<std::string, std::string>> expected;
  for (const auto& [key, source] : RngFindings(kNoremat)) {
    if (!before.count(key)) expected.insert(key);
  }
  REQUIRE(!expected.empty());
  std::set<std::pair<std::string, std::string>> reported;
  for (const json& f : module.at("check").at("findings")) {
    if (f.at("new") == true) reported.insert(Key(f));
  }
  CHECK(reported == expected);
  for (const auto& [kind, op_name] : reported) CHECK(kind == "rng-key-residual");
  CHECK(Row(module, "findings").at("status") == "regressed");
  CHECK(json::parse(run.out).at("new_findings") == expected.size());
}

TEST_CASE("check --max-peak / --max-wire: over the limit fails, at the limit passes") {
  const XlaFigures remat = ReadXla(kRemat);
  const RunOutput collectives = RunSpmdsim("collectives --format json " + kRemat);
  REQUIRE(collectives.exit_code == 0);
  const int64_t wire =
      AfterModule(json::parse(collectives.out)).at("collectives").at("total_wire_bytes_per_device");
  REQUIRE(wire > 0);

  const RunOutput over = RunSpmdsim("check " + kRemat + kAfter + " --format json --max-peak " +
                                    std::to_string(remat.peak - 1));
  CHECK(over.exit_code == 1);
  const json over_module = AfterModule(json::parse(over.out));
  const json& row = Row(over_module, "max_peak");
  CHECK(row.at("now") == remat.peak);
  CHECK(row.at("limit") == remat.peak - 1);
  CHECK(row.at("status") == "breached");
  CHECK(RunSpmdsim("check " + kRemat + kAfter + " --max-peak " + std::to_string(remat.peak))
            .exit_code == 0);

  CHECK(RunSpmdsim("check " + kRemat + kAfter + " --max-wire " + std::to_string(wire - 1))
            .exit_code == 1);
  CHECK(RunSpmdsim("check " + kRemat + kAfter + " --max-wire " + std::to_string(wire)).exit_code ==
        0);

  // Units: the peak lies between 2 MiB and 1.5 GiB.
  REQUIRE(remat.peak > (int64_t{2} << 20));
  CHECK(RunSpmdsim("check " + kRemat + kAfter + " --max-peak 2MiB").exit_code == 1);
  CHECK(RunSpmdsim("check " + kRemat + kAfter + " --max-peak '1.5 GiB'").exit_code == 0);
}

TEST_CASE("check: usage and I/O errors exit 2, unparseable input 3") {
  TempDir dir;
  for (const char* size : {"12XB", "-1", "1e3", "GiB", "1.5.2MiB", "''"}) {
    INFO(size);
    CHECK(RunSpmdsim("check " + kRemat + " --max-peak " + size).exit_code == 2);
    CHECK(RunSpmdsim("check " + kRemat + " --max-wire " + size).exit_code == 2);
  }
  CHECK(RunSpmdsim("check " + kRemat + " --tolerance -1").exit_code == 2);
  CHECK(RunSpmdsim("check").exit_code == 2);  // no input

  // A real baseline, then broken copies of it.
  const std::string good = dir / "good.json";
  REQUIRE(RunSpmdsim("check " + kRemat + " --write-baseline " + good).exit_code == 0);
  const json base = json::parse(ReadText(good));
  std::map<std::string, std::string> broken;
  broken["missing.json"] = "";  // never written
  broken["not_json.json"] = "{\"schema_version\": 1,";
  json kind = base;
  kind["kind"] = "something-else";
  broken["kind.json"] = kind.dump();
  json version = base;
  version["schema_version"] = 2;
  broken["version.json"] = version.dump();
  json negative = base;
  negative["modules"][0]["peak_bytes"] = -5;
  broken["negative.json"] = negative.dump();
  json text_size = base;
  text_size["modules"][0]["temp_bytes"] = "1 GiB";
  broken["text_size.json"] = text_size.dump();
  json no_modules = base;
  no_modules.erase("modules");
  broken["no_modules.json"] = no_modules.dump();
  for (const auto& [name, text] : broken) {
    INFO(name);
    if (name != "missing.json") WriteText(dir / name, text);
    CHECK(RunSpmdsim("check " + kRemat + " --baseline " + dir / name).exit_code == 2);
  }
  CHECK(RunSpmdsim("check " + kRemat + " --baseline " + good).exit_code == 0);
  // A report that cannot be written.
  CHECK(RunSpmdsim("check " + kRemat + " --junit " + dir / "no/such/dir/j.xml").exit_code == 2);

  CHECK(RunSpmdsim("check " SPMDSIM_TESTDATA_DIR "/malformed/binary_garbage.hlo").exit_code == 3);
}

TEST_CASE("check under GitHub Actions: annotations and the step summary") {
  TempDir dir;
  const std::string baseline = dir / "remat.json";
  REQUIRE(RunSpmdsim("check " + kRemat + " --write-baseline " + baseline).exit_code == 0);
  const auto before = RngFindings(kRemat);
  std::map<std::pair<std::string, std::string>, std::string> fresh;
  for (const auto& [key, source] : RngFindings(kNoremat)) {
    if (!before.count(key)) fresh[key] = source;
  }
  REQUIRE(!fresh.empty());
  // The checkout: two levels above the findings' source file (".../tools/gen_dumps.py").
  const SourceLocation where = SplitSource(fresh.begin()->second);
  REQUIRE(where.line > 0);
  const std::string root = fs::path(where.file).parent_path().parent_path().string();
  const std::string summary = dir / "summary.md";
  WriteText(summary, "earlier step\n");
  const std::string env =
      "GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY=" + summary + " GITHUB_WORKSPACE=" + root;

  // What the annotations must say, from the JSON of the same check: an error per failing row
  // (the findings row aside) and per new finding, each new finding at its source line.
  const RunOutput as_json =
      RunSpmdsim("check " + kNoremat + " --baseline " + baseline + " --format json");
  const json expected = json::parse(as_json.out);
  size_t failing_rows = 0;
  size_t new_at_source = 0;
  for (const json& m : expected.at("modules")) {
    for (const json& row : m.at("check").at("checks")) {
      failing_rows += row.at("status") != "ok" && row.at("metric") != "findings" ? 1 : 0;
    }
    for (const json& f : m.at("check").at("findings")) {
      new_at_source += f.at("new") == true && f.at("source") == fresh.begin()->second ? 1 : 0;
    }
  }
  REQUIRE(new_at_source > 0);

  const RunOutput run = RunSpmdsim("check " + kNoremat + " --baseline " + baseline, env);
  CHECK(run.exit_code == 1);
  const std::string located = "::error file=" + GithubEscapeProperty(RelativeTo(where.file, root)) +
                              ",line=" + std::to_string(where.line) + ",title=";
  CHECK(Count(run.out, located) == new_at_source);
  CHECK(Count(run.out, "\n::error ") == failing_rows + expected.at("new_findings").get<size_t>());

  const std::string md = ReadText(summary);
  CHECK(md.rfind("earlier step\n", 0) == 0);  // appended, not overwritten
  CHECK(md.find("### spmdsim check") != std::string::npos);
  // The findings row: how many the baseline has, how many there are now.
  CHECK(md.find(fmt::format("| jit\\_train\\_step | after\\_optimizations | findings | {} | {} |",
                            FindingCount(kRemat), FindingCount(kNoremat))) != std::string::npos);
  CHECK(md.find("**REGRESSED**") != std::string::npos);

  // Outside GitHub Actions: no annotations, the summary file untouched.
  const RunOutput plain =
      RunSpmdsim("check " + kNoremat + " --baseline " + baseline, "GITHUB_STEP_SUMMARY=" + summary);
  CHECK(plain.out.find("::error") == std::string::npos);
  CHECK(ReadText(summary) == md);

  // Without a baseline (a limit only) the same findings are warnings at their source line.
  const RunOutput warnings = RunSpmdsim("check " + kNoremat + " --max-peak 1PiB", env);
  CHECK(warnings.exit_code == 0);
  CHECK(Count(warnings.out, "::warning file=" + RelativeTo(where.file, root) + ",line=") ==
        RngFindings(kNoremat).size());
}

TEST_CASE("check --junit: a testsuite per module, a testcase per check, failures counted") {
  TempDir dir;
  const std::string baseline = dir / "remat.json";
  REQUIRE(RunSpmdsim("check " + kRemat + " --write-baseline " + baseline).exit_code == 0);
  const std::string junit = dir / "junit.xml";
  const RunOutput run = RunSpmdsim("check " + kNoremat + " --baseline " + baseline +
                                   " --max-peak 1GiB --format json --junit " + junit);
  CHECK(run.exit_code == 1);
  const json out = json::parse(run.out);
  size_t rows = 0;
  size_t failed = 0;
  for (const json& m : out.at("modules")) {
    for (const json& row : m.at("check").at("checks")) {
      ++rows;
      failed += row.at("status") != "ok" ? 1 : 0;
    }
  }
  REQUIRE(failed > 0);
  const std::string xml = ReadText(junit);
  CHECK(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", 0) == 0);
  CHECK(Count(xml, "<testsuites ") == 1);
  CHECK(Count(xml, "</testsuites>") == 1);
  CHECK(Count(xml, "<testsuite ") == out.at("modules").size());
  CHECK(Count(xml, "</testsuite>") == out.at("modules").size());
  CHECK(Count(xml, "<testcase ") == rows);
  CHECK(Count(xml, "</testcase>") == rows);
  CHECK(Count(xml, "<failure ") == failed);
  CHECK(Count(xml, "</failure>") == failed);
  CHECK(xml.find("<testsuites name=\"spmdsim check\" tests=\"" + std::to_string(rows) +
                 "\" failures=\"" + std::to_string(failed) + "\"") != std::string::npos);
  // Dump text is escaped: op_names hold parentheses, messages hold nothing raw that XML forbids.
  CHECK(std::regex_search(xml, std::regex("message=\"[^\"<>]*\"")));
  CHECK(!std::regex_search(xml, std::regex("&(?!(amp|lt|gt|quot|#39);)")));
}

// The SARIF log of a check, with the findings of `rng sites` for the same dump in its results.
void CheckSarif(const json& sarif, const std::string& dump, const std::string& source_root,
                bool expect_new) {
  CHECK(sarif.at("$schema") == "https://json.schemastore.org/sarif-2.1.0.json");
  CHECK(sarif.at("version") == "2.1.0");
  REQUIRE(sarif.at("runs").size() == 1);
  const json& run = sarif.at("runs")[0];
  const json& driver = run.at("tool").at("driver");
  CHECK(driver.at("name") == "spmdsim");
  std::map<std::string, std::string> id_of;  // rule name -> id
  for (const json& rule : driver.at("rules")) id_of[rule.at("name")] = rule.at("id");
  CHECK(id_of.at("rng-key-residual") == "SPMD001");
  CHECK(id_of.at("rng-depends-on-partition") == "SPMD002");
  CHECK(id_of.at("rng-replicated-collectives") == "SPMD003");
  CHECK(id_of.at("peak-memory-regression") == "SPMD101");
  CHECK(id_of.at("collective-bytes-regression") == "SPMD103");

  const auto findings = RngFindings(dump);
  REQUIRE(!findings.empty());
  size_t matched = 0;
  for (const json& result : run.at("results")) {
    const json& properties = result.at("properties");
    if (!properties.contains("kind") || properties.at("stage") != "after_optimizations") continue;
    const auto key = std::make_pair(properties.at("kind").get<std::string>(),
                                    properties.at("op_name").get<std::string>());
    REQUIRE(findings.count(key));
    ++matched;
    CHECK(result.at("ruleId") == id_of.at(key.first));
    CHECK(driver.at("rules")[result.at("ruleIndex").get<size_t>()].at("id") == result.at("ruleId"));
    CHECK(result.at("level") == (expect_new ? "error" : "warning"));
    CHECK(!result.at("message").at("text").get<std::string>().empty());
    const SourceLocation where = SplitSource(findings.at(key));
    const json& physical = result.at("locations")[0].at("physicalLocation");
    const std::string uri = physical.at("artifactLocation").at("uri");
    if (source_root.empty()) {
      CHECK(uri == "file://" + where.file);
    } else {
      CHECK(uri == RelativeTo(where.file, source_root));
      CHECK(physical.at("artifactLocation").at("uriBaseId") == "%SRCROOT%");
    }
    CHECK(physical.at("region").at("startLine") == where.line);
  }
  CHECK(matched >= findings.size());
}

TEST_CASE("check --sarif: SARIF 2.1.0 with stable rule ids and the findings' source lines") {
  TempDir dir;
  // rng-depends-on-partition findings (keys folded with the axis index inside shard_map).
  const std::string shardmap = dir / "shardmap.sarif";
  REQUIRE(RunSpmdsim("check " + kShardmap + " --max-peak 1PiB --sarif " + shardmap).exit_code == 0);
  const json shardmap_log = json::parse(ReadText(shardmap));
  CheckSarif(shardmap_log, kShardmap, "", false);
  bool saw_partition = false;
  for (const json& result : shardmap_log.at("runs")[0].at("results")) {
    saw_partition = saw_partition || result.at("ruleId") == "SPMD002";
  }
  CHECK(saw_partition);

  // rng-key-residual findings, new against the remat baseline, paths relative to the checkout.
  const std::string baseline = dir / "remat.json";
  REQUIRE(RunSpmdsim("check " + kRemat + " --write-baseline " + baseline).exit_code == 0);
  const SourceLocation where = SplitSource(RngFindings(kNoremat).begin()->second);
  const std::string root = fs::path(where.file).parent_path().parent_path().string();
  const std::string noremat = dir / "noremat.sarif";
  CHECK(RunSpmdsim("check " + kNoremat + " --baseline " + baseline + " --source-root " + root +
                   " --sarif " + noremat)
            .exit_code == 1);
  const json noremat_log = json::parse(ReadText(noremat));
  CheckSarif(noremat_log, kNoremat, root, true);
  CHECK(noremat_log.at("runs")[0].at("originalUriBaseIds").at("%SRCROOT%").at("uri") ==
        "file://" + root + "/");

  // The rule table is the same in every log.
  CHECK(noremat_log.at("runs")[0].at("tool").at("driver").at("rules") ==
        shardmap_log.at("runs")[0].at("tool").at("driver").at("rules"));
}

// A renamed module (or a wrong path) must not pass CI: the baseline matches nothing, and every
// output says so and says which modules each side holds.
TEST_CASE("check that compared nothing fails on every output format") {
  TempDir dir;
  const std::string written = dir / "remat.json";
  REQUIRE(RunSpmdsim("check " + kRemat + " --write-baseline " + written).exit_code == 0);
  json renamed = json::parse(ReadText(written));
  REQUIRE(!renamed.at("modules").empty());
  for (json& m : renamed.at("modules")) m["name"] = "jit_renamed_step";
  const std::string baseline = dir / "renamed.json";
  WriteText(baseline, renamed.dump());
  const std::string summary = dir / "summary.md";
  const std::string env = "GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY=" + summary;
  const std::string junit = dir / "junit.xml";
  const std::string sarif = dir / "check.sarif";

  const RunOutput text = RunSpmdsim(
      "check " + kRemat + " --baseline " + baseline + " --junit " + junit + " --sarif " + sarif,
      env);
  CHECK(text.exit_code == 1);
  CHECK(text.out.find("FAILED: nothing was compared: no module of the inputs matches") !=
        std::string::npos);
  CHECK(text.out.find("jit_renamed_step (after_optimizations)") != std::string::npos);
  CHECK(text.out.find("jit_train_step (after_optimizations)") != std::string::npos);
  CHECK(text.out.find("PASSED") == std::string::npos);
  // GitHub: one error for the run, a warning per module on one side only.
  const size_t one_side = renamed.at("modules").size() * 2;
  CHECK(Count(text.out, "::error ") == 1);
  CHECK(Count(text.out, "title=spmdsim check compared nothing::") == 1);
  CHECK(Count(text.out, "title=spmdsim module on one side only::") == one_side);
  CHECK(ReadText(summary).find("FAILED\\: nothing was compared") != std::string::npos);
  const std::string xml = ReadText(junit);
  CHECK(xml.find("<failure type=\"nothing-compared\"") != std::string::npos);
  CHECK(Count(xml, "<skipped ") == one_side);
  size_t nothing = 0;
  size_t unmatched = 0;
  const json log = json::parse(ReadText(sarif));
  for (const json& result : log.at("runs")[0].at("results")) {
    nothing += result.at("ruleId") == "SPMD301" ? 1 : 0;
    unmatched += result.at("ruleId") == "SPMD302" ? 1 : 0;
  }
  CHECK(nothing == 1);
  CHECK(unmatched == one_side);

  const RunOutput as_json =
      RunSpmdsim("check " + kRemat + " --baseline " + baseline + " --format json");
  CHECK(as_json.exit_code == 1);
  const json out = json::parse(as_json.out);
  CHECK(out.at("passed") == false);
  CHECK(out.at("nothing_compared").get<std::string>().find("jit_renamed_step") !=
        std::string::npos);

  // --stage that leaves no module is a usage error, as --module that matches none; a run with
  // neither a baseline nor a limit compared nothing.
  CHECK(RunSpmdsim("check " + kRemat + " --baseline " + written + " --stage unknown").exit_code ==
        2);
  const RunOutput bare = RunSpmdsim("check " + kRemat);
  CHECK(bare.exit_code == 1);
  CHECK(bare.out.find("nothing to compare with") != std::string::npos);
  // The matching baseline passes; writing a baseline alone passes.
  CHECK(RunSpmdsim("check " + kRemat + " --baseline " + written).exit_code == 0);
}

}  // namespace
}  // namespace spmdsim::analyzer

namespace spmdsim::analyzer {
namespace {

// A dump folder where one module does not parse: the others are checked, but the run never
// passes, and every output names the file that was not read.
TEST_CASE("check: a folder with a module that does not parse never passes, in every output") {
  TempDir dir;
  const fs::path folder = fs::path(dir / "dump");
  fs::copy(kRemat, folder);
  const std::string broken =
      (folder / "module_0099.jit_broken.cpu_after_optimizations.txt").string();
  WriteText(broken,
            "HloModule broken\n\nENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2] frob(\n}\n");
  const std::string junit = dir / "junit.xml";
  const std::string sarif = dir / "check.sarif";
  const std::string summary = dir / "summary.md";
  const std::string args = "check " + folder.string() + kAfter + " --max-peak 100GiB --junit " +
                           junit + " --sarif " + sarif;
  const RunOutput text = RunSpmdsim(args, "GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY=" + summary);
  INFO(text.out);
  CHECK(text.exit_code == 3);  // the parse error's code, after the rest
  CHECK(text.out.find("PASSED") == std::string::npos);
  CHECK(text.out.find("FAILED: 1 file could not be read or parsed (" + broken + ")") !=
        std::string::npos);
  CHECK(text.out.find("::error file=" + broken) != std::string::npos);
  CHECK(ReadText(summary).find("PASSED") == std::string::npos);
  const std::string xml = ReadText(junit);
  CHECK(xml.find("<failure type=\"unreadable-input\"") != std::string::npos);
  CHECK(xml.find("failures=\"0\" errors=\"0\" skipped=\"0\">\n  <testsuite") == std::string::npos);
  const json log = json::parse(ReadText(sarif));
  bool sarif_names_it = false;
  for (const json& result : log["runs"][0]["results"]) {
    sarif_names_it |= result["ruleId"] == "SPMD303" && result["level"] == "error";
  }
  CHECK(sarif_names_it);
  const RunOutput as_json = RunSpmdsim(args + " --format json");
  const json out = json::parse(as_json.out);
  CHECK(out["passed"] == false);
  REQUIRE(out["unread_inputs"].size() == 1);
  CHECK(out["unread_inputs"][0]["file"] == broken);
  const std::string message = out["unread_inputs"][0]["message"];
  CHECK(message.rfind(broken + ":5:1: error: ", 0) == 0);
  // The modules read were checked all the same.
  CHECK(out["modules"].size() == 1);
}

}  // namespace
}  // namespace spmdsim::analyzer

namespace spmdsim::analyzer {
namespace {

// The buffers `analyze` lists at the peak of a dump's after-optimizations module.
json LiveAtPeak(const std::string& dump) {
  const RunOutput run =
      RunSpmdsim("analyze " + dump + " --stage after --format json --timeline-points 1");
  REQUIRE(run.exit_code == 0);
  return json::parse(run.out).at("modules").at(0).at("memory").at("live_at_peak");
}

// The seed step on 8 H100s: a baseline of XLA's replicated-threefry compile, then the
// partitionable compile checked against it. The baseline keeps what is live at the peak, by
// category (the buffers analyze lists there, byte for byte) and by group; the failure names the
// groups that grew and points every CI format at the user's source line of the largest.
TEST_CASE("check: a peak regression says what grew at the peak and where in the program") {
  const std::string before = kDumps + "jax012_gpu8_seed_flax_dp_replicated_kernel_remat";
  const std::string after = kDumps + "jax012_gpu8_seed_flax_dp_partitionable_kernel_remat";
  TempDir dir;
  const std::string baseline = dir / "baseline.json";
  REQUIRE(RunSpmdsim("check " + before + " --write-baseline " + baseline).exit_code == 0);
  const json written = json::parse(ReadText(baseline)).at("modules").at(0);
  const json analyzed = LiveAtPeak(before);
  int64_t live = 0;
  for (const json& b : analyzed) live += b.at("size_bytes").get<int64_t>();
  int64_t by_category = 0;
  for (const auto& [category, bytes] : written.at("peak_by_category").items()) {
    by_category += bytes.get<int64_t>();
  }
  CHECK(by_category == live);
  CHECK(written.at("peak_groups").size() <= 64);
  std::map<std::string, int64_t> old_groups;
  for (const json& g : written.at("peak_groups")) {
    old_groups[g.at("category").get<std::string>() + "|" + g.at("op_name").get<std::string>() +
               "|" + g.at("shape").get<std::string>()] = g.at("bytes");
  }

  const std::string junit = dir / "junit.xml";
  const std::string sarif = dir / "check.sarif";
  const std::string args = "check " + after + " --baseline " + baseline;
  const RunOutput text =
      RunSpmdsim(args + " --junit " + junit + " --sarif " + sarif, "GITHUB_ACTIONS=true");
  INFO(text.out.substr(0, 4000));
  CHECK(text.exit_code == 1);
  CHECK(text.out.find("  what grew at the peak:\n    ") != std::string::npos);
  const json out = json::parse(RunSpmdsim(args + " --format json").out);
  const json check = out.at("modules").at(0).at("check");
  REQUIRE_FALSE(check.at("grew").empty());
  std::string peak_source;
  for (const json& row : check.at("checks")) {
    if (row.at("metric") != "peak_bytes") continue;
    CHECK(row.at("status") == "regressed");
    CHECK(row.at("message").get<std::string>().find(". What grew at the peak: ") !=
          std::string::npos);
    peak_source = row.at("source");
  }
  REQUIRE_FALSE(peak_source.empty());
  int64_t previous = INT64_MAX;
  for (const json& g : check.at("grew")) {
    const std::string key = g.at("category").get<std::string>() + "|" +
                            g.at("op_name").get<std::string>() + "|" +
                            g.at("shape").get<std::string>();
    const auto was = old_groups.find(key);
    // A group that grew, by its bytes now less what the baseline kept of it (0 when the
    // baseline has no such group).
    const int64_t change = g.at("change_bytes");
    CHECK(change > 0);
    CHECK(g.at("bytes").get<int64_t>() - change == (was == old_groups.end() ? 0 : was->second));
    CHECK(g.at("change_bytes").get<int64_t>() <= previous);
    previous = g.at("change_bytes");
  }
  CHECK(check.at("grew")[0].at("source") == peak_source);
  // The source is a line of the program whose buffer is live at the new peak.
  const json now_live = LiveAtPeak(after);
  bool live_there = false;
  for (const json& b : now_live) live_there |= b.at("source") == peak_source;
  CHECK(live_there);
  // GitHub, SARIF and JUnit point at that line.
  const size_t colon = peak_source.rfind(':');
  const std::string file = peak_source.substr(0, colon);
  const std::string line = peak_source.substr(colon + 1);
  const std::string annotated =
      "," + std::string("line=") + line + ",title=spmdsim peak_bytes regressed::";
  const size_t at = text.out.find(annotated);
  REQUIRE(at != std::string::npos);
  const size_t start = text.out.rfind("::error file=", at);
  const bool names_file =
      start != std::string::npos && file.ends_with(text.out.substr(start + 13, at - start - 13));
  CHECK(names_file);
  const json log = json::parse(ReadText(sarif));
  bool sarif_located = false;
  for (const json& r : log["runs"][0]["results"]) {
    if (r["ruleId"] != "SPMD101") continue;
    const json& location = r["locations"][0]["physicalLocation"];
    sarif_located = location["region"]["startLine"] == std::stoi(line) &&
                    location["artifactLocation"]["uri"].get<std::string>().find(
                        fs::path(file).filename().string()) != std::string::npos;
  }
  CHECK(sarif_located);
  CHECK(ReadText(junit).find("What grew at the peak: ") != std::string::npos);
}

}  // namespace
}  // namespace spmdsim::analyzer
