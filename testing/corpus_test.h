// Tests that run over every cell of the corpus matrix (testdata/manifest.json), with the cells
// where an analysis is known not to match XLA yet listed in testdata/known_gaps.json:
//
//   SPMDSIM_CORPUS_TEST("live ranges equal XLA's HloLiveRange on every dump", program) {
//     ... checks on one cell; `program` is its manifest entry ...
//   }
//
// is one Catch2 test over the cells that must match (a DYNAMIC_SECTION each), plus one test per
// known gap of that test, "<name> - known gap in <cell>", tagged [!shouldfail]: it passes while the
// cell still fails, and fails once the analysis matches there, so a fixed gap cannot stay
// listed. A new cell is checked by every corpus test without new code.
//
// known_gaps.json: {"<test name>": {"<cell>": "what is wrong there, as measured"}}.
#pragma once

#include <catch2/catch.hpp>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace spmdsim::testing {

using CellCheck = void (*)(const nlohmann::json& program);

inline const nlohmann::json& CorpusJson(const char* file) {
  static std::deque<std::pair<std::string, nlohmann::json>> cache;
  for (const auto& [name, json] : cache) {
    if (name == file) return json;
  }
  std::ifstream in(std::string(SPMDSIM_TESTDATA_DIR) + "/" + file);
  cache.emplace_back(file, in.good() ? nlohmann::json::parse(in) : nlohmann::json::object());
  return cache.back().second;
}

// SPMDSIM_KNOWN_GAPS=none runs every cell as one that must match (tools/update_known_gaps.py).
inline const nlohmann::json& KnownGaps(const std::string& test) {
  static const nlohmann::json kNone = nlohmann::json::object();
  if (const char* env = std::getenv("SPMDSIM_KNOWN_GAPS"); env && std::string(env) == "none") {
    return kNone;
  }
  const nlohmann::json& gaps = CorpusJson("known_gaps.json");
  return gaps.contains(test) ? gaps.at(test) : kNone;
}

// Runs `check` on every cell that is not a known gap of `test`, each in its own section.
inline void RunCorpusCells(const char* test, CellCheck check) {
  const nlohmann::json& gaps = KnownGaps(test);
  int cells = 0;
  for (const auto& program : CorpusJson("manifest.json").at("programs")) {
    const std::string name = program.at("name");
    if (gaps.contains(name)) continue;
    ++cells;
    DYNAMIC_SECTION(name) { check(program); }
  }
  CHECK(cells >= 1);
}

class KnownGapInvoker : public Catch::ITestInvoker {
 public:
  KnownGapInvoker(CellCheck check, nlohmann::json program, std::string note)
      : check_(check), program_(std::move(program)), note_(std::move(note)) {}
  void invoke() const override {
    INFO("known gap (testdata/known_gaps.json): " << note_);
    check_(program_);
  }

 private:
  CellCheck check_;
  nlohmann::json program_;
  std::string note_;
};

// Registers "<test> - known gap in <cell>" for each gap of `test`; called at static init.
inline bool RegisterKnownGaps(const char* test, CellCheck check, const char* file, int line) {
  static std::deque<std::string> names;  // Catch2 keeps the views
  const nlohmann::json& gaps = KnownGaps(test);
  for (const auto& program : CorpusJson("manifest.json").at("programs")) {
    const std::string cell = program.at("name");
    if (!gaps.contains(cell)) continue;
    names.push_back(std::string(test) + " - known gap in " + cell);
    Catch::AutoReg(new KnownGapInvoker(check, program, gaps.at(cell).get<std::string>()),
                   Catch::SourceLineInfo(file, static_cast<std::size_t>(line)), "",
                   Catch::NameAndTags{names.back().c_str(), "[!shouldfail][known-gap]"});
  }
  return true;
}

}  // namespace spmdsim::testing

#define SPMDSIM_CORPUS_TEST_IMPL(name, program, fn, reg)                    \
  static void fn(const nlohmann::json& program);                            \
  TEST_CASE(name) { ::spmdsim::testing::RunCorpusCells(name, &fn); }        \
  [[maybe_unused]] static const bool reg =                                  \
      ::spmdsim::testing::RegisterKnownGaps(name, &fn, __FILE__, __LINE__); \
  static void fn(const nlohmann::json& program)
#define SPMDSIM_CORPUS_TEST(name, program)                                        \
  SPMDSIM_CORPUS_TEST_IMPL(name, program, INTERNAL_CATCH_UNIQUE_NAME(CorpusCell), \
                           INTERNAL_CATCH_UNIQUE_NAME(CorpusGaps))
