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
#include <span>
#include <vector>

#include "passes/memory/buffer_dataflow_analysis.h"

namespace spmdsim::passes {

struct HloBuffer {
  int32_t id = 0;  // dense; buffers are ordered by their first value
  // Value ids, ascending: a view into the analysis's flat array (no allocation per buffer).
  std::span<const int32_t> values;
  bool live_out = false;  // some value appears at the entry root
};

struct AliasOptions {};

class AliasAnalysis {
 public:
  AliasAnalysis() = default;
  AliasAnalysis(AliasAnalysis&&) = default;
  AliasAnalysis& operator=(AliasAnalysis&&) = default;
  // The buffers view the analysis's own array, which a copy would not own.
  AliasAnalysis(const AliasAnalysis&) = delete;
  AliasAnalysis& operator=(const AliasAnalysis&) = delete;

  static AliasAnalysis Run(const DataflowAnalysis& dataflow, const AliasOptions& options = {});

  const std::vector<HloBuffer>& buffers() const { return buffers_; }
  const HloBuffer& BufferOf(int32_t value_id) const { return buffers_[buffer_of_[value_id]]; }
  int32_t BufferIdOf(int32_t value_id) const { return buffer_of_[value_id]; }

 private:
  std::vector<HloBuffer> buffers_;
  std::vector<int32_t> buffer_of_;      // by value id
  std::vector<int32_t> buffer_values_;  // what the buffers' values view, buffer by buffer
};

}  // namespace spmdsim::passes
