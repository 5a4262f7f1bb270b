// Sizes for people: how changes are printed (HumanBytesDelta). What --max-peak / --max-wire
// accept is dump/size_text_test.cc.
#include "analyzer/emit/human_units.h"

#include <catch2/catch.hpp>

namespace spmdsim::analyzer {
namespace {

TEST_CASE("HumanBytesDelta: always signed") {
  CHECK(HumanBytesDelta(1024) == "+1.00 KiB");
  CHECK(HumanBytesDelta(-512) == "-512 B");
  CHECK(HumanBytesDelta(0) == "0 B");
  CHECK(HumanBytesDelta(-393280) == "-384.06 KiB");
}

}  // namespace
}  // namespace spmdsim::analyzer
