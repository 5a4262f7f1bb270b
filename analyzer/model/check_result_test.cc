// The rules of `spmdsim check` on hand-made figures (the end-to-end runs on real dumps are in
// cmd_check_test.cc): tolerance, limits, new findings by (kind, op_name), module matching, and
// the baseline file's round trip and errors.
#include "analyzer/model/check_result.h"

#include <catch2/catch.hpp>

#include "analyzer/model/baseline.h"
#include "analyzer/model/module_match.h"

namespace spmdsim::analyzer {
namespace {

ModuleFigures Figures(int64_t peak, int64_t wire = 0) {
  ModuleFigures m;
  m.name = "jit_step";
  m.stage = "after_optimizations";
  m.file = "dump/module.txt";
  m.peak_bytes = peak;
  m.temp_bytes = peak / 2;
  m.wire_bytes_per_device = wire;
  if (wire > 0) m.wire_by_kind["all-reduce"] = wire;
  return m;
}

const CheckRow& Row(const CheckRun& run, const std::string& metric) {
  for (const CheckRow& row : run.modules.at(0).rows) {
    if (row.MetricName() == metric) return row;
  }
  FAIL("no row " << metric);
  return run.modules.at(0).rows.at(0);
}

TEST_CASE("tolerance: a rise up to it passes, one byte more regresses") {
  const std::vector<ModuleFigures> base = {Figures(1000)};
  CheckOptions options;
  options.tolerance_pct = 10;
  CHECK(RunChecks({Figures(1100)}, &base, options).Passed());
  const CheckRun over = RunChecks({Figures(1101)}, &base, options);
  CHECK(!over.Passed());
  CHECK(Row(over, "peak_bytes").status == CheckStatus::kRegressed);
  CHECK(Row(over, "peak_bytes").limit == 1100);
  CHECK(Row(over, "peak_bytes").ChangePct() == Approx(10.1));
  // Default 0: any rise; a fall is fine.
  CHECK(!RunChecks({Figures(1001)}, &base, {}).Passed());
  CHECK(RunChecks({Figures(900)}, &base, {}).Passed());
}

TEST_CASE("from a baseline of 0 any rise regresses, whatever the tolerance") {
  const std::vector<ModuleFigures> base = {Figures(1000, 0)};
  CheckOptions options;
  options.tolerance_pct = 1000;
  const CheckRun run = RunChecks({Figures(1000, 1)}, &base, options);
  CHECK(Row(run, "wire_bytes_per_device").status == CheckStatus::kRegressed);
  CHECK(Row(run, "wire_bytes_per_device[all-reduce]").status == CheckStatus::kRegressed);
  CHECK(!Row(run, "wire_bytes_per_device").ChangePct().has_value());
}

TEST_CASE("absolute limits apply without a baseline") {
  CheckOptions options;
  options.max_peak_bytes = 1000;
  options.max_wire_bytes = 50;
  const CheckRun run = RunChecks({Figures(1000, 51)}, nullptr, options);
  CHECK(Row(run, "max_peak").status == CheckStatus::kOk);
  CHECK(Row(run, "max_wire").status == CheckStatus::kBreached);
  CHECK(run.CountRows(CheckStatus::kBreached) == 1);
  CHECK(run.modules.at(0).match == BaselineMatch::kNone);
}

TEST_CASE("new findings are those whose (kind, op_name) the baseline lacks") {
  ModuleFigures base = Figures(1000);
  base.findings.push_back({"rng-key-residual", "jit(f)/dropout/while", "while.5", 64, "", "", ""});
  ModuleFigures now = Figures(1000);
  // Same finding under a new instruction name: not new.
  now.findings.push_back(
      {"rng-key-residual", "jit(f)/dropout/while", "while.9", 64, "warning", "f.py:3", "m"});
  now.findings.push_back(
      {"rng-depends-on-partition", "jit(f)/dropout/while", "while.9", 0, "warning", "f.py:3", "m"});
  const std::vector<ModuleFigures> baseline = {base};
  const CheckRun run = RunChecks({now}, &baseline, {});
  CHECK(run.NewFindings() == 1);
  CHECK(!run.modules.at(0).findings.at(0).is_new);
  CHECK(run.modules.at(0).findings.at(1).is_new);
  CHECK(Row(run, "findings").status == CheckStatus::kRegressed);
}

TEST_CASE("modules missing from the inputs or from the baseline are reported") {
  ModuleFigures other = Figures(10);
  other.name = "jit_other";
  const std::vector<ModuleFigures> baseline = {other};
  const CheckRun run = RunChecks({Figures(1000)}, &baseline, {});
  REQUIRE(run.modules.size() == 2);
  CHECK(run.modules[0].match == BaselineMatch::kNewModule);
  CHECK(run.modules[1].match == BaselineMatch::kMissing);
  CHECK(run.modules[1].figures.name == "jit_other");
  // Nothing matched: the baseline compared nothing, and that fails.
  CHECK(!run.Passed());
  CHECK(run.nothing_compared.find("jit_other (after_optimizations)") != std::string::npos);

  // One module matched and one did not: the unmatched ones are reported and do not fail.
  const std::vector<ModuleFigures> both = {Figures(1000), other};
  ModuleFigures fresh = Figures(5);
  fresh.name = "jit_fresh";
  const CheckRun partly = RunChecks({Figures(1000), fresh}, &both, {});
  REQUIRE(partly.modules.size() == 3);
  CHECK(partly.modules[1].match == BaselineMatch::kNewModule);
  CHECK(partly.modules[2].match == BaselineMatch::kMissing);
  CHECK(partly.nothing_compared.empty());
  CHECK(partly.Passed());
}

TEST_CASE("a check that compared nothing fails") {
  // Neither a baseline nor a limit.
  CHECK(!RunChecks({Figures(1000)}, nullptr, {}).Passed());
  CheckOptions writing;
  writing.writing_baseline = true;  // --write-baseline alone is a run that compares nothing
  CHECK(RunChecks({Figures(1000)}, nullptr, writing).Passed());
  // No module among the inputs.
  const std::vector<ModuleFigures> baseline = {Figures(1000)};
  const CheckRun empty = RunChecks({}, &baseline, {});
  CHECK(!empty.Passed());
  CHECK(empty.nothing_compared.find("no module among the inputs") == 0);
  // A limit was checked, but the baseline the user asked to compare with matched nothing.
  ModuleFigures renamed = Figures(1000);
  renamed.name = "jit_renamed";
  CheckOptions limit;
  limit.max_peak_bytes = 1 << 20;
  const CheckRun unmatched = RunChecks({renamed}, &baseline, limit);
  CHECK(unmatched.CountRows(CheckStatus::kBreached) == 0);
  CHECK(!unmatched.Passed());
}

TEST_CASE("MatchModules: by (name, stage) in order, then by name when asked") {
  const std::vector<ModuleKey> a = {{"f", "before"}, {"f", "after"}, {"g", "after"}};
  const std::vector<ModuleKey> b = {{"f", "after"}, {"f", "before"}, {"h", "after"}};
  const auto pairs = MatchModules(a, b);
  REQUIRE(pairs.size() == 4);
  CHECK(pairs[0].b == std::optional<size_t>(1));
  CHECK(pairs[1].b == std::optional<size_t>(0));
  CHECK(!pairs[2].b);
  CHECK(!pairs[3].a);
  CHECK(pairs[3].b == std::optional<size_t>(2));

  const auto by_name = MatchModules({{"f", "before"}}, {{"f", "after"}}, {true});
  REQUIRE(by_name.size() == 1);
  CHECK(by_name[0].b == std::optional<size_t>(0));
  CHECK(MatchModules({{"f", "before"}}, {{"f", "after"}}).size() == 2);
}

TEST_CASE("baseline file: round trip and errors a user can act on") {
  ModuleFigures m = Figures(2978360, 927367);
  m.findings.push_back({"rng-key-residual", "jit(f)/while", "while.1", 32768, "", "", ""});
  const std::string text = BaselineToJson({m}).dump();
  std::string error;
  const auto parsed = ParseBaseline(text, error);
  REQUIRE(parsed.has_value());
  REQUIRE(parsed->size() == 1);
  CHECK((*parsed)[0].peak_bytes == 2978360);
  CHECK((*parsed)[0].wire_by_kind.at("all-reduce") == 927367);
  CHECK((*parsed)[0].findings.at(0).op_name == "jit(f)/while");
  CHECK(BaselineToJson(*parsed).dump() == text);

  CHECK(!ParseBaseline("{", error));
  CHECK(error.rfind("not JSON", 0) == 0);
  CHECK(!ParseBaseline(R"({"schema_version": 1, "modules": []})", error));
  CHECK(error.find("--write-baseline") != std::string::npos);
  CHECK(!ParseBaseline(R"({"schema_version": 1, "kind": "spmdsim-baseline",
      "modules": [{"name": "f", "stage": "after_optimizations", "peak_bytes": -1}]})",
                       error));
  CHECK(error.rfind("modules[0].peak_bytes: expected a non-negative integer", 0) == 0);
  CHECK(!ParseBaseline(R"({"schema_version": 1, "kind": "spmdsim-baseline",
      "modules": [{"name": "f", "stage": "after_optimizations", "peak_bytes": 1,
                   "temp_bytes": 1, "argument_bytes": 1, "output_bytes": 1, "alias_bytes": 1,
                   "wire_bytes_per_device": 1, "rng_materialized_bytes": 1,
                   "findings": [{"kind": "x"}]}]})",
                       error));
  CHECK(error == "modules[0].findings[0].op_name: missing");
}

// Found by analyzer/command_inputs_fuzzer.cc: a deeply nested value was copied and written into
// the error message recursively, overflowing the stack.
TEST_CASE("baseline file: a number past a double's range is refused with a message") {
  std::string error;
  CHECK_FALSE(ParseBaseline(
      R"({"kind": "spmdsim-baseline", "schema_version": 1, "modules": [{"peak_bytes": 1e3081590284}]})",
      error));
  CHECK(error.rfind("not JSON: ", 0) == 0);
  CHECK(error.find("number overflow") != std::string::npos);
}

// Refused before it is parsed (ir::kMaxJsonNesting): a nested value costs memory per level.
TEST_CASE("baseline file: a value nested 200000 deep is refused with a short message") {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  std::string error;
  CHECK(!ParseBaseline(R"({"kind": "spmdsim-baseline", "schema_version": )" + deep + "}", error));
  CHECK(error == "nested more than 64 deep");
  CHECK(!ParseBaseline(R"({"schema_version": 1, "kind": "spmdsim-baseline",
      "modules": [{"name": "f", "stage": "after_optimizations", "peak_bytes": )" +
                           deep + "}]}",
                       error));
  CHECK(error == "nested more than 64 deep");
  // Nested within the limit, a value of the wrong type is still named.
  const std::string shallow = std::string(8, '[') + std::string(8, ']');
  CHECK(
      !ParseBaseline(R"({"kind": "spmdsim-baseline", "schema_version": )" + shallow + "}", error));
  CHECK(error == "schema_version an array is not supported (this spmdsim reads 1)");
  CHECK(!ParseBaseline(R"({"schema_version": 1, "kind": "spmdsim-baseline",
      "modules": [{"name": )" +
                           shallow + "}]}",
                       error));
  CHECK(error == "modules[0].name: expected a string, found an array");
}

}  // namespace
}  // namespace spmdsim::analyzer
