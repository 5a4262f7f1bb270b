// The entry's input_output_alias, indexed once by output and by parameter: a step that donates
// its parameters and optimizer state lists tens of thousands of pairs, and the alias analysis,
// the live ranges and the buffer assignment each ask about every such value. The dataflow
// builds it once per module (DataflowAnalysis::InputOutputAliases).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "ir/hlo.h"

namespace spmdsim::passes {

class InputOutputAliasIndex {
 public:
  InputOutputAliasIndex() = default;
  explicit InputOutputAliasIndex(const ir::HloModule& module) {
    for (const ir::InputOutputAlias& alias : module.input_output_alias) {
      by_output_[alias.output_index].push_back(&alias);
      parameters_.emplace(alias.parameter_number, alias.parameter_index);
    }
  }

  // The pairs whose output index is `output_index`, in the module's order.
  std::span<const ir::InputOutputAlias* const> ForOutput(
      const std::vector<int64_t>& output_index) const {
    const auto it = by_output_.find(output_index);
    if (it == by_output_.end()) return {};
    return it->second;
  }

  // Some pair gives parameter `number` at `index` to an output.
  bool ParameterAliased(int64_t number, const std::vector<int64_t>& index) const {
    return parameters_.count({number, index}) != 0;
  }

  bool empty() const { return parameters_.empty(); }

 private:
  std::map<std::vector<int64_t>, std::vector<const ir::InputOutputAlias*>> by_output_;
  std::set<std::pair<int64_t, std::vector<int64_t>>> parameters_;
};

}  // namespace spmdsim::passes
