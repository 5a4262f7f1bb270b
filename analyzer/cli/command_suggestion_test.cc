#include "analyzer/cli/command_suggestion.h"

#include <catch2/catch.hpp>

namespace spmdsim::analyzer {
namespace {

const std::vector<std::string> kCommands = {"stats", "collectives", "rng",  "analyze",
                                            "oom",   "check",       "diff", "report"};

TEST_CASE("edit distance counts insertions, deletions, substitutions and adjacent swaps") {
  CHECK(EditDistance("", "") == 0);
  CHECK(EditDistance("abc", "") == 3);
  CHECK(EditDistance("analyse", "analyze") == 1);
  CHECK(EditDistance("chekc", "check") == 1);  // a swap
  CHECK(EditDistance("kitten", "sitting") == 3);
}

TEST_CASE("a misspelt command is offered the nearest one") {
  CHECK(NearestCommand("analyse", kCommands) == "analyze");
  CHECK(NearestCommand("Analyze", kCommands) == "analyze");
  CHECK(NearestCommand("colectives", kCommands) == "collectives");
  CHECK(NearestCommand("coll", kCommands) == "collectives");  // a prefix of one command
  CHECK(NearestCommand("chekc", kCommands) == "check");
  CHECK(NearestCommand("stat", kCommands) == "stats");
  CHECK(NearestCommand("dif", kCommands) == "diff");
  CHECK_FALSE(NearestCommand("frobnicate", kCommands).has_value());
  CHECK_FALSE(NearestCommand("x", kCommands).has_value());
}

TEST_CASE("the message names the command, or the command that reads a path") {
  CHECK(UnknownCommandMessage("analyse", kCommands, false) ==
        "spmdsim: error: unknown command 'analyse'; did you mean 'analyze'?");
  CHECK(UnknownCommandMessage("dump_dir", kCommands, true)->find("spmdsim analyze dump_dir") !=
        std::string::npos);
  CHECK(UnknownCommandMessage("frobnicate", kCommands, false)->find("commands: stats") !=
        std::string::npos);
  CHECK_FALSE(UnknownCommandMessage("--help", kCommands, false).has_value());
}

}  // namespace
}  // namespace spmdsim::analyzer
