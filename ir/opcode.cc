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
