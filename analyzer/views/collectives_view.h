// The `collectives` view: one CollectiveResult rendered as text or JSON (the `collectives`
// section of a module object).
//
// Sample text output (mesh4x2_partitionable_remat, --topology h100-8x-nvswitch):
//   module jit_train_step  (testdata/dumps/mesh4x2_partitionable_remat/...)
//     collectives: 9 ops, 9 runs per step, 8 devices, topology h100-8x-nvswitch
//     topology: h100-8x-nvswitch, one node of up to 8 devices (given by --topology)
//     per step and device: 1.92 MiB on the wire (intra-node 1.92 MiB, inter-node 0 B), ~x us
//     kind                  ops   runs   wire/device   est. time
//     all-reduce              9      9      1.92 MiB     x us
//     instruction     kind         n  axes                 B    wire/dev  runs   time  source
//     all-reduce.48   all-reduce   4  axis 0 of mesh [4,2] ...
//
// For a module not partitioned yet (before_optimizations), the prediction of
// passes/collectives/collective_prediction.h follows, side by side with XLA's after_optimizations
// module of the same program when it was found (mesh4x2_replicated_remat, --max-ops 2):
//   predicted for the partitioned module (mesh ["data"=4, "model"=2]): 93 collectives, 57 ops
//   after combining, 2.29 MiB on the wire per device and step
//   compared with testdata/dumps/mesh4x2_replicated_remat/...cpu_after_optimizations.txt.gz
//     kind                 predicted:  runs   wire/device  actual:  runs   wire/device   error
//     all-gather               16 ops    16    768.00 KiB   16 ops    16    768.00 KiB   +0.0%
//     all-reduce                9 ops     9    934.76 KiB    9 ops     9    934.76 KiB   +0.0%
//     collective-permute       32 ops    32    640.00 KiB   32 ops    32    640.00 KiB   +0.0%
//     total                                      2.29 MiB                     2.29 MiB   +0.0%
//     predicted op      n axes           B    wire/dev runs  reason                    source
//     all-reduce x31    4 data  324.50 KiB  486.76 KiB    1  data-parallel gradient +  ...
//     all-reduce x3     2 model  96.00 KiB   96.00 KiB    1  tensor-parallel matmul    ...
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "analyzer/model/topology_choice.h"
#include "dump/module_loader.h"
#include "passes/collectives/collective_analysis.h"
#include "passes/collectives/collective_prediction.h"

namespace spmdsim::analyzer {

// With a topology choice, `topology_choice` follows `topology`: name, chosen ("user" or
// "default-by-device-count"), devices, devices_per_node, nodes, platform, reason.
nlohmann::ordered_json CollectivesToJson(const passes::CollectiveResult& result,
                                         const TopologyChoice* topology = nullptr);

struct CollectivesTextOptions {
  size_t max_ops = 30;  // rows of the per-op table, largest traffic first; 0 = all
  const TopologyChoice* topology = nullptr;  // adds the "topology: ..." line
};
void PrintCollectivesText(const dump::ModuleInput& input, const passes::CollectiveResult& result,
                          std::ostream& out, const CollectivesTextOptions& options = {});

// A prediction for an unpartitioned module and, when XLA's partitioned module of the same program
// was found, the comparison with it.
struct PredictionReport {
  const passes::CollectivePrediction* prediction = nullptr;
  const passes::PredictionComparison* comparison = nullptr;  // nullptr: nothing to compare with
  std::string actual_path;                                   // the after_optimizations file
};

// Adds `predicted`, `predicted_combined`, `predicted_by_kind`,
// `predicted_total_wire_bytes_per_device`, `prediction_mesh`, `prediction_notes` and
// `comparison` (null without one) to a `collectives` object.
void AddPredictionJson(const PredictionReport& report, nlohmann::ordered_json& collectives);

void PrintPredictionText(const PredictionReport& report, std::ostream& out,
                         const CollectivesTextOptions& options = {});

}  // namespace spmdsim::analyzer
