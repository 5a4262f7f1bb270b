// The finding registry: every kind has one name, one SARIF id, and parses back from its name.
#include "passes/finding_kinds.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

namespace spmdsim::passes {
namespace {

TEST_CASE("every finding kind has one name and one SARIF id, and its name parses back") {
  std::set<std::string_view> names;
  std::set<std::string_view> ids;
  for (const FindingKindInfo& info : FindingKinds()) {
    CHECK(names.insert(info.name).second);
    CHECK(ids.insert(info.sarif_id).second);
    CHECK(ParseFindingKind(info.name) == info.kind);
    CHECK(FindingName(info.kind) == info.name);
    CHECK(&InfoOf(info.kind) == &info);
    CHECK_FALSE(info.summary.empty());
  }
  CHECK(names.size() == 3);
  CHECK(FindingName(FindingKind::kRngKeyResidual) == "rng-key-residual");
  CHECK_FALSE(ParseFindingKind("rng-something-new"));
}

}  // namespace
}  // namespace spmdsim::passes
