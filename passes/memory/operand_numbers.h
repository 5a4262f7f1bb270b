// At which operand numbers an instruction reads another, for questions asked per operand of a
// wide user (a tuple of 100k outputs, a combined all-reduce of thousands of operands): a narrow
// user's operands are scanned, a wide one's sorted once and searched.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/hlo.h"

namespace spmdsim::passes {

class OperandNumbers {
 public:
  // Calls fn(i) for each i where user.operands[i] is `operand`, in operand order.
  template <typename Fn>
  void ForEach(const ir::HloInstruction& user, const ir::HloInstruction* operand, Fn&& fn) {
    const auto& operands = user.operands;
    if (operands.size() <= kScanned) {
      for (size_t i = 0; i < operands.size(); ++i) {
        if (operands[i] == operand) fn(static_cast<int32_t>(i));
      }
      return;
    }
    const auto& sorted = SortedOperands(user);
    auto at = std::lower_bound(sorted.begin(), sorted.end(), std::make_pair(operand, INT32_MIN));
    for (; at != sorted.end() && at->first == operand; ++at) fn(at->second);
  }

  // The first number at which `operand` is an operand of `user`; -1 if it is none. (Not through
  // ForEach: an operand repeated thousands of times is found at its first.)
  int64_t First(const ir::HloInstruction& user, const ir::HloInstruction* operand) {
    const auto& operands = user.operands;
    if (operands.size() <= kScanned) {
      for (size_t i = 0; i < operands.size(); ++i) {
        if (operands[i] == operand) return static_cast<int64_t>(i);
      }
      return -1;
    }
    const auto& sorted = SortedOperands(user);
    const auto at =
        std::lower_bound(sorted.begin(), sorted.end(), std::make_pair(operand, INT32_MIN));
    return at != sorted.end() && at->first == operand ? at->second : -1;
  }

  // How many wide users have been indexed.
  size_t indexed() const { return sorted_.size(); }

 private:
  static constexpr size_t kScanned = 16;  // a bound on a scan's cost, not on the answer

  // (operand, number) of each operand of a wide user, sorted: by operand, then by number.
  const std::vector<std::pair<const ir::HloInstruction*, int32_t>>& SortedOperands(
      const ir::HloInstruction& user) {
    auto [it, inserted] = sorted_.try_emplace(&user);
    auto& sorted = it->second;
    if (inserted) {
      sorted.reserve(user.operands.size());
      for (size_t i = 0; i < user.operands.size(); ++i) {
        sorted.emplace_back(user.operands[i], static_cast<int32_t>(i));
      }
      std::sort(sorted.begin(), sorted.end());
    }
    return sorted;
  }

  std::unordered_map<const ir::HloInstruction*,
                     std::vector<std::pair<const ir::HloInstruction*, int32_t>>>
      sorted_;
};

}  // namespace spmdsim::passes
