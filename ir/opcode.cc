#include "ir/opcode.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

namespace spmdsim::ir {
namespace {

constexpr std::array kNames = {
#define SPMDSIM_OPCODE_NAME(e, s) std::string_view(s),
    SPMDSIM_OPCODES(SPMDSIM_OPCODE_NAME)
#undef SPMDSIM_OPCODE_NAME
};

// Sorted (name, opcode) pairs for binary search.
const std::vector<std::pair<std::string_view, Opcode>>& SortedNames() {
  static const auto* sorted = [] {
    auto* v = new std::vector<std::pair<std::string_view, Opcode>>();
    for (size_t i = 0; i < kNames.size(); ++i) v->emplace_back(kNames[i], static_cast<Opcode>(i));
    std::sort(v->begin(), v->end());
    return v;
  }();
  return *sorted;
}

}  // namespace

Opcode OpcodeFromName(std::string_view name) {
  const auto& sorted = SortedNames();
  auto it = std::lower_bound(sorted.begin(), sorted.end(), name,
                             [](const auto& entry, std::string_view n) { return entry.first < n; });
  if (it != sorted.end() && it->first == name) return it->second;
  return Opcode::kUnknown;
}

std::string_view OpcodeName(Opcode opcode) {
  const auto index = static_cast<size_t>(opcode);
  return index < kNames.size() ? kNames[index] : "unknown";
}

std::string_view CollectiveKind(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart:
    case Opcode::kAllReduceDone:
      return "all-reduce";
    case Opcode::kAllGather:
    case Opcode::kAllGatherStart:
    case Opcode::kAllGatherDone:
      return "all-gather";
    case Opcode::kReduceScatter:
      return "reduce-scatter";
    case Opcode::kAllToAll:
      return "all-to-all";
    case Opcode::kRaggedAllToAll:
      return "ragged-all-to-all";
    case Opcode::kCollectivePermute:
    case Opcode::kCollectivePermuteStart:
    case Opcode::kCollectivePermuteDone:
      return "collective-permute";
    case Opcode::kCollectiveBroadcast:
      return "collective-broadcast";
    case Opcode::kSend:
    case Opcode::kSendDone:
      return "send";
    case Opcode::kRecv:
    case Opcode::kRecvDone:
      return "recv";
    default:
      return {};
  }
}

bool IsAsyncDone(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAllReduceDone:
    case Opcode::kAllGatherDone:
    case Opcode::kCollectivePermuteDone:
    case Opcode::kSendDone:
    case Opcode::kRecvDone:
    case Opcode::kAsyncDone:
    case Opcode::kCopyDone:
      return true;
    default:
      return false;
  }
}

}  // namespace spmdsim::ir
