// The `diff` view: one ModuleDiff (analyzer/model/module_diff.h) rendered as text or JSON.
//
// Sample text output (`spmdsim diff testdata/dumps/dp8_partitionable_remat
// testdata/dumps/dp8_replicated_remat --top 2`, the after_optimizations module; columns narrowed,
// long lines cut with "..."):
//   module jit_train_step (after_optimizations)
//     A  testdata/dumps/dp8_partitionable_remat/module_0000...after_optimizations.txt.gz
//     B  testdata/dumps/dp8_replicated_remat/module_0000...after_optimizations.txt.gz
//     B vs A: peak memory +384.06 KiB (+13.20%), collectives +1.19 MiB (+134.27%) per device per
//     step, rng buffers +1.59 MiB (+318.11%)
//     memory per device          A           B  change
//       peak              2.84 MiB    3.22 MiB  +384.06 KiB (+13.20%)
//       temp              1.32 MiB    1.70 MiB  +384.06 KiB (+28.33%)
//       ...
//     live at peak (169 -> 166 buffers, by op_name and shape): 5 groups appeared (+512.00 KiB), 4
//     disappeared (-128.00 KiB), 0 changed size (0 B), 158 unchanged
//         appeared     +128.00 KiB  u32[32768] x0->1  ...rematted_computation/att_dropout/...
//         ...
//         appeared     ... and 3 more groups
//         disappeared   -32.00 KiB  u32[2,32,64] x2->0  ...block_0/.../att_dropout/.../while
//         ...
//     collectives per device per step             A                            B  change
//       all-gather             0 ops, 0 runs, 0 B  16 ops, 16 runs, 896.00 KiB  +896.00 KiB (new)
//       all-reduce        1 op, 1 run, 905.63 KiB      1 op, 1 run, 905.63 KiB  0 B (+0.00%)
//       collective-permute     0 ops, 0 runs, 0 B  32 ops, 32 runs, 320.00 KiB  +320.00 KiB (new)
//       total                          905.63 KiB                     2.07 MiB  +1.19 MiB (...)
//     rng sites (mode kind)                       A                            B  change
//       partitionable threefry-rolled  8 sites, 512.42 KiB        0 sites, 0 B  -512.42 KiB (...)
//       replicated threefry-rolled           0 sites, 0 B   8 sites, 2.09 MiB  +2.09 MiB (new)
//       ...
//     findings: 8 added, 0 removed
//       + rng-replicated-collectives at /work/main/tools/gen_dumps.py:169  ...block_0/.../while
//       ...
//
// JSON: {"schema_version", "modules": [{name, "a": {file, stage}, "b": {file, stage}, "diff":
// {memory, live_at_peak, collectives, rng}}]} (docs/JSON_SCHEMA.md, section diff).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "analyzer/model/module_diff.h"
#include "dump/module_loader.h"

namespace spmdsim::analyzer {

nlohmann::ordered_json DiffToJson(const ModuleDiff& diff);

// `a` or `b` may be nullptr: a module only one side has (printed as such, with no diff).
void PrintDiffText(const dump::ModuleInput* a, const dump::ModuleInput* b, const ModuleDiff* diff,
                   std::ostream& out);

}  // namespace spmdsim::analyzer
