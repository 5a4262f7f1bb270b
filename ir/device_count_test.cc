#include "ir/device_count.h"

#include <catch2/catch.hpp>
#include <string>

#include "ir/parser.h"

namespace spmdsim::ir {
namespace {

// One collective over f32[8] in a module whose header says `header`.
std::unique_ptr<HloModule> ModuleWith(const std::string& header, const std::string& collective) {
  const std::string text = "HloModule m" + header +
                           "\n\n%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
                           "  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n\n"
                           "ENTRY %e (p: f32[8]) -> f32[8] {\n  %p = f32[8]{0} parameter(0)\n"
                           "  ROOT %c = f32[8]{0} " +
                           collective + "\n}\n";
  ParseResult parsed = ParseHloText(std::make_shared<SourceBuffer>("t.hlo", text));
  INFO(text << (parsed.error ? parsed.error->ToString() : ""));
  REQUIRE(parsed.ok());
  REQUIRE(parsed.modules.size() == 1);
  return std::move(parsed.modules.front());
}

TEST_CASE("the device count is the header's, or what the collectives name when that is more") {
  const std::string explicit_groups =
      "all-reduce(%p), replica_groups={{0,1,2,3},{4,5,6,7}}, to_apply=%add";
  // The header says 8: the groups name no more.
  auto both = ModuleWith(", replica_count=8", explicit_groups);
  CHECK(DeviceCount(*both) == 8);
  CHECK_FALSE(DevicesFromCollectives(*both));
  // No device count in the header (as some PyTorch/XLA dumps are printed): ids 0..7 need 8.
  auto none = ModuleWith("", explicit_groups);
  CHECK(HeaderDeviceCount(*none) == 1);
  CHECK(none->devices_named_by_collectives == 8);
  CHECK(DeviceCount(*none) == 8);
  CHECK(DevicesFromCollectives(*none));
  // The header says more than the groups name: the header's.
  auto more = ModuleWith(", num_partitions=16",
                         "all-reduce(%p), channel_id=1, replica_groups={{0,1}}, "
                         "use_global_device_ids=true, to_apply=%add");
  CHECK(DeviceCount(*more) == 16);
  // The iota form stands for its ids; source-target pairs name theirs.
  CHECK(DeviceCount(*ModuleWith("", "all-reduce(%p), replica_groups=[2,2]<=[4], to_apply=%add")) ==
        4);
  CHECK(DeviceCount(*ModuleWith("", "collective-permute(%p), source_target_pairs={{0,5},{5,0}}")) ==
        6);
  // "All participants" names no id.
  CHECK(DeviceCount(*ModuleWith("", "all-reduce(%p), replica_groups={}, to_apply=%add")) == 1);
}

}  // namespace
}  // namespace spmdsim::ir
