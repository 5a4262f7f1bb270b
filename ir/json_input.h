// JSON documents read from files a user or XLA wrote (memory_analysis.json, `--topology FILE`,
// `check --baseline FILE`): one bounded parse for all of them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace spmdsim::ir {

// Parses `text`, nested at most kMaxJsonNesting deep (ir/limits.h: refused before parsing, since
// each level costs a value) and no larger than the reader let it be (kMaxInputBytes); comments
// are allowed (topologies are written by hand). On failure, nullopt and `error` says what and
// where: "nested more than 64 deep", "not JSON: parse error at line 2, column 15: syntax error
// while parsing value - unexpected '}'; expected '[', '{', or a literal".
std::optional<nlohmann::json> ParseJsonInput(std::string_view text, std::string& error);

}  // namespace spmdsim::ir
