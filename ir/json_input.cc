#include "ir/json_input.h"

#include "ir/limits.h"

namespace spmdsim::ir {

std::optional<nlohmann::json> ParseJsonInput(std::string_view text, std::string& error) {
  if (JsonNestingDepth(text) > kMaxJsonNesting) {
    error = "nested more than " + std::to_string(kMaxJsonNesting) + " deep";
    return std::nullopt;
  }
  try {
    return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/true,
                                 /*ignore_comments=*/true);
  } catch (const nlohmann::json::exception& e) {
    // parse_error (located by line and column), and out_of_range for a number past a double.
    std::string what = e.what();
    if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos) {
      what.erase(0, what.find("] ") + 2);
    }
    error = "not JSON: " + what;
    return std::nullopt;
  }
}

}  // namespace spmdsim::ir
