// The `rng bits` view: what jax.random returns for one request, as text or JSON, from one struct.
//
// Sample JSON output (`spmdsim rng bits --seed 0 --shape 3 --bits 32 --mode partitionable
// --format json`):
//   {"schema_version":1,"command":"bits","mode":"partitionable","key":[0,0],"shape":[3],
//    "bit_width":32,"values":[4070199207,4202968722,1427181096]}
// split and fold-in print "keys": [[k0,k1], ...] instead of "values". Text output is one value per
// line, or one key per line as "k0 k1". Values are written as they are produced, so a large
// shape needs no JSON tree in memory; u64 values are exact.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "passes/rng/threefry.h"

namespace spmdsim::analyzer {

struct RngReport {
  std::string command;  // "bits" | "split" | "fold_in"
  passes::RngMode mode = passes::RngMode::kPartitionable;
  passes::Pair32 key{0, 0};
  // bits
  std::vector<int64_t> shape;
  int bit_width = 32;
  std::vector<uint64_t> values;
  // split / fold_in
  int64_t num = 0;    // split count
  uint32_t data = 0;  // fold_in data
  std::vector<passes::Pair32> keys;
};

void PrintRngText(const RngReport& report, std::ostream& out);
void PrintRngJson(const RngReport& report, std::ostream& out);

}  // namespace spmdsim::analyzer
