// Groups values that must share one buffer (XLA's HloAliasAnalysis): a while's init, body and
// condition parameters, body root and result; a conditional's branch roots and result; the
// operand and output of an in-place operation (dynamic-update-slice, scatter, in-place fusions);
// and an entry parameter donated to an output through `input_output_alias`.
//
//   %init = (s32[], f32[8]) tuple(%i, %x)
//   %w = (s32[], f32[8]) while(%init), body=%b     one buffer per element: {init{0}, b's param{0},
//                                                  b's root{0}, w{0}} and so on
//   %u = f32[8] dynamic-update-slice(%x, %v, %k)   %x and %u: one buffer
#pragma once

#include <cstdint>
#include <vector>

#include "passes/memory/buffer_dataflow_analysis.h"

namespace spmdsim::passes {

struct HloBuffer {
  int32_t id = 0;               // dense; buffers are ordered by their first value
  std::vector<int32_t> values;  // value ids, ascending
  bool live_out = false;        // some value appears at the entry root
};

struct AliasOptions {};

class AliasAnalysis {
 public:
  static AliasAnalysis Run(const DataflowAnalysis& dataflow, const AliasOptions& options = {});

  const std::vector<HloBuffer>& buffers() const { return buffers_; }
  const HloBuffer& BufferOf(int32_t value_id) const { return buffers_[buffer_of_[value_id]]; }
  int32_t BufferIdOf(int32_t value_id) const { return buffer_of_[value_id]; }

 private:
  std::vector<HloBuffer> buffers_;
  std::vector<int32_t> buffer_of_;  // by value id
};

}  // namespace spmdsim::passes
