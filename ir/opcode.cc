#include "ir/opcode.h"

#include <array>

#include "ir/name_table.h"

namespace spmdsim::ir {
namespace {

constexpr std::array kNames = {
#define SPMDSIM_OPCODE_NAME(e, s) std::string_view(s),
    SPMDSIM_OPCODES(SPMDSIM_OPCODE_NAME)
#undef SPMDSIM_OPCODE_NAME
};

}  // namespace

Opcode OpcodeFromName(std::string_view name) {
  // Hashed, built once: one lookup per instruction (a binary search cost eight string compares).
  static const NameTable<size_t>* const table = [] {
    auto* t = new NameTable<size_t>();
    for (size_t i = 0; i < kNames.size(); ++i) t->Insert(kNames[i], i + 1);
    return t;
  }();
  const size_t found = table->Find(name);  // 0: absent
  return found == 0 ? Opcode::kUnknown : static_cast<Opcode>(found - 1);
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
