// The `collectives` view: one CollectiveResult rendered as text or JSON (the `collectives`
// section of a module object).
//
// Sample text output (mesh4x2_partitionable_remat, --topology h100-8x-nvswitch):
//   module jit_train_step  (testdata/dumps/mesh4x2_partitionable_remat/...)
//     collectives: 9 ops, 9 runs per step, 8 devices, topology h100-8x-nvswitch
//     per step and device: 1.92 MiB on the wire (intra-node 1.92 MiB, inter-node 0 B), ~x us
//     kind                  ops   runs   wire/device   est. time
//     all-reduce              9      9      1.92 MiB     x us
//     instruction     kind         n  axes                 B    wire/dev  runs   time  source
//     all-reduce.48   all-reduce   4  axis 0 of mesh [4,2] ...
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "analyzer/input_loader.h"
#include "passes/collective_analysis.h"

namespace spmdsim::analyzer {

nlohmann::ordered_json CollectivesToJson(const passes::CollectiveResult& result);

struct CollectivesTextOptions {
  size_t max_ops = 30;  // rows of the per-op table, largest traffic first; 0 = all
};
void PrintCollectivesText(const ModuleInput& input, const passes::CollectiveResult& result,
                          std::ostream& out, const CollectivesTextOptions& options = {});

}  // namespace spmdsim::analyzer
