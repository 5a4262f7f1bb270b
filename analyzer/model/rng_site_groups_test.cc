// Draw patterns: the seed dump's 48 dropout sites (one per block and direction) fold into a few
// rows named with their block ranges; numbers print as ranges.
#include "analyzer/model/rng_site_groups.h"

#include <catch2/catch.hpp>
#include <set>

#include "analyzer/model/rng_report.h"
#include "dump/module_loader.h"
#include "passes/module_analyses.h"

namespace spmdsim::analyzer {
namespace {

TEST_CASE("NumberRanges: consecutive numbers as ranges") {
  CHECK(NumberRanges({3}) == "3");
  CHECK(NumberRanges({11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) == "0-11");
  CHECK(NumberRanges({5, 0, 2, 2}) == "0,2,5");
  CHECK(NumberRanges({0, 1, 4, 5, 6, 9}) == "0-1,4-6,9");
  CHECK(NumberRanges({}).empty());
}

TEST_CASE("GroupRngSites: every bits site in one group, groups named by ranges") {
  const std::string path = std::string(SPMDSIM_TESTDATA_DIR) +
                           "/dumps/jax012_gpu8_seed_flax_dp_partitionable_kernel_remat/"
                           "module_0001.jit_train_step.sm_9.0a_gpu_after_optimizations.txt.gz";
  dump::LoadOutcome outcome = dump::LoadInputs(path);
  REQUIRE_FALSE(outcome.failure);
  const dump::ModuleInput& input = outcome.inputs.modules.at(0);
  passes::ModuleAnalyses analyses(*input.module);
  const passes::RngSiteResult rng = BuildRngReport(input, analyses, {});
  const std::vector<RngSiteGroup> groups = GroupRngSites(rng);
  REQUIRE(rng.totals.bits_sites > 8);
  CHECK(groups.size() < static_cast<size_t>(rng.totals.bits_sites) / 4);
  std::set<const passes::RngSite*> seen;
  for (const RngSiteGroup& g : groups) {
    REQUIRE_FALSE(g.sites.empty());
    for (const passes::RngSite* site : g.sites) {
      CHECK(site->purpose == passes::SitePurpose::kBits);
      CHECK(seen.insert(site).second);
      CHECK(site->kind == g.sites.front()->kind);
      CHECK(site->shape == g.sites.front()->shape);
    }
    // A group of sites whose op_names differ is named by none of them: the numbers that vary
    // are ranges.
    if (g.sites.size() > 1 && g.sites[0]->op_name != g.sites[1]->op_name) {
      CHECK(g.name != g.sites[0]->op_name);
      CHECK(g.name != g.sites[1]->op_name);
    }
  }
  CHECK(static_cast<int64_t>(seen.size()) == rng.totals.bits_sites);
}

}  // namespace
}  // namespace spmdsim::analyzer
