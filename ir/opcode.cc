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

CollectiveKind CollectiveKindOf(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart:
    case Opcode::kAllReduceDone:
      return CollectiveKind::kAllReduce;
    case Opcode::kAllGather:
    case Opcode::kAllGatherStart:
    case Opcode::kAllGatherDone:
      return CollectiveKind::kAllGather;
    case Opcode::kReduceScatter:
      return CollectiveKind::kReduceScatter;
    case Opcode::kAllToAll:
      return CollectiveKind::kAllToAll;
    case Opcode::kRaggedAllToAll:
      return CollectiveKind::kRaggedAllToAll;
    case Opcode::kCollectivePermute:
    case Opcode::kCollectivePermuteStart:
    case Opcode::kCollectivePermuteDone:
      return CollectiveKind::kCollectivePermute;
    case Opcode::kCollectiveBroadcast:
      return CollectiveKind::kCollectiveBroadcast;
    case Opcode::kSend:
    case Opcode::kSendDone:
      return CollectiveKind::kSend;
    case Opcode::kRecv:
    case Opcode::kRecvDone:
      return CollectiveKind::kRecv;
    default:
      return CollectiveKind::kNone;
  }
}

std::string_view CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kNone:
      return {};
    case CollectiveKind::kAllReduce:
      return OpcodeName(Opcode::kAllReduce);
    case CollectiveKind::kAllGather:
      return OpcodeName(Opcode::kAllGather);
    case CollectiveKind::kReduceScatter:
      return OpcodeName(Opcode::kReduceScatter);
    case CollectiveKind::kAllToAll:
      return OpcodeName(Opcode::kAllToAll);
    case CollectiveKind::kRaggedAllToAll:
      return OpcodeName(Opcode::kRaggedAllToAll);
    case CollectiveKind::kCollectivePermute:
      return OpcodeName(Opcode::kCollectivePermute);
    case CollectiveKind::kCollectiveBroadcast:
      return OpcodeName(Opcode::kCollectiveBroadcast);
    case CollectiveKind::kSend:
      return OpcodeName(Opcode::kSend);
    case CollectiveKind::kRecv:
      return OpcodeName(Opcode::kRecv);
  }
  return {};
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

bool IsElementwiseOpcode(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAbs:
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
    case Opcode::kCeil:
    case Opcode::kClz:
    case Opcode::kConvert:
    case Opcode::kBitcastConvert:
    case Opcode::kCopy:
    case Opcode::kCos:
    case Opcode::kErf:
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kFloor:
    case Opcode::kImag:
    case Opcode::kIsFinite:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kLogistic:
    case Opcode::kNot:
    case Opcode::kNegate:
    case Opcode::kPopulationCount:
    case Opcode::kReal:
    case Opcode::kReducePrecision:
    case Opcode::kRsqrt:
    case Opcode::kCbrt:
    case Opcode::kSign:
    case Opcode::kSin:
    case Opcode::kSqrt:
    case Opcode::kTan:
    case Opcode::kTanh:
    case Opcode::kAdd:
    case Opcode::kAtan2:
    case Opcode::kCompare:
    case Opcode::kComplex:
    case Opcode::kDivide:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kMultiply:
    case Opcode::kPower:
    case Opcode::kRemainder:
    case Opcode::kSubtract:
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical:
    case Opcode::kStochasticConvert:
    case Opcode::kClamp:
    case Opcode::kSelect:
    case Opcode::kMap:
      return true;
    default:
      return false;
  }
}

}  // namespace spmdsim::ir
