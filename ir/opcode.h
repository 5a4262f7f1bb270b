// HLO opcodes, spelled as XLA prints them. An opcode spmdsim does not know parses as kUnknown with
// its spelling kept on the instruction, and the parser warns.
#pragma once

#include <cstdint>
#include <string_view>

namespace spmdsim::ir {

#define SPMDSIM_OPCODES(V)                               \
  V(kAbs, "abs")                                         \
  V(kAdd, "add")                                         \
  V(kAddDependency, "add-dependency")                    \
  V(kAfterAll, "after-all")                              \
  V(kAllGather, "all-gather")                            \
  V(kAllGatherDone, "all-gather-done")                   \
  V(kAllGatherStart, "all-gather-start")                 \
  V(kAllReduce, "all-reduce")                            \
  V(kAllReduceDone, "all-reduce-done")                   \
  V(kAllReduceStart, "all-reduce-start")                 \
  V(kAllToAll, "all-to-all")                             \
  V(kAnd, "and")                                         \
  V(kAsyncDone, "async-done")                            \
  V(kAsyncStart, "async-start")                          \
  V(kAsyncUpdate, "async-update")                        \
  V(kAtan2, "atan2")                                     \
  V(kBatchNormGrad, "batch-norm-grad")                   \
  V(kBatchNormInference, "batch-norm-inference")         \
  V(kBatchNormTraining, "batch-norm-training")           \
  V(kBitcast, "bitcast")                                 \
  V(kBitcastConvert, "bitcast-convert")                  \
  V(kBroadcast, "broadcast")                             \
  V(kCall, "call")                                       \
  V(kCbrt, "cbrt")                                       \
  V(kCeil, "ceil")                                       \
  V(kCholesky, "cholesky")                               \
  V(kClamp, "clamp")                                     \
  V(kClz, "count-leading-zeros")                         \
  V(kCollectiveBroadcast, "collective-broadcast")        \
  V(kCollectivePermute, "collective-permute")            \
  V(kCollectivePermuteDone, "collective-permute-done")   \
  V(kCollectivePermuteStart, "collective-permute-start") \
  V(kCompare, "compare")                                 \
  V(kComplex, "complex")                                 \
  V(kConcatenate, "concatenate")                         \
  V(kConditional, "conditional")                         \
  V(kConstant, "constant")                               \
  V(kConvert, "convert")                                 \
  V(kConvolution, "convolution")                         \
  V(kCopy, "copy")                                       \
  V(kCopyDone, "copy-done")                              \
  V(kCopyStart, "copy-start")                            \
  V(kCos, "cosine")                                      \
  V(kCustomCall, "custom-call")                          \
  V(kDivide, "divide")                                   \
  V(kDomain, "domain")                                   \
  V(kDot, "dot")                                         \
  V(kDynamicReshape, "dynamic-reshape")                  \
  V(kDynamicSlice, "dynamic-slice")                      \
  V(kDynamicUpdateSlice, "dynamic-update-slice")         \
  V(kErf, "erf")                                         \
  V(kExp, "exponential")                                 \
  V(kExpm1, "exponential-minus-one")                     \
  V(kFft, "fft")                                         \
  V(kFloor, "floor")                                     \
  V(kFusion, "fusion")                                   \
  V(kGather, "gather")                                   \
  V(kGetDimensionSize, "get-dimension-size")             \
  V(kGetTupleElement, "get-tuple-element")               \
  V(kImag, "imag")                                       \
  V(kInfeed, "infeed")                                   \
  V(kIota, "iota")                                       \
  V(kIsFinite, "is-finite")                              \
  V(kLog, "log")                                         \
  V(kLog1p, "log-plus-one")                              \
  V(kLogistic, "logistic")                               \
  V(kMap, "map")                                         \
  V(kMaximum, "maximum")                                 \
  V(kMinimum, "minimum")                                 \
  V(kMultiply, "multiply")                               \
  V(kNegate, "negate")                                   \
  V(kNot, "not")                                         \
  V(kOptimizationBarrier, "opt-barrier")                 \
  V(kOr, "or")                                           \
  V(kOutfeed, "outfeed")                                 \
  V(kPad, "pad")                                         \
  V(kParameter, "parameter")                             \
  V(kPartitionId, "partition-id")                        \
  V(kPopulationCount, "popcnt")                          \
  V(kPower, "power")                                     \
  V(kRaggedAllToAll, "ragged-all-to-all")                \
  V(kRaggedDot, "ragged-dot")                            \
  V(kReal, "real")                                       \
  V(kRecv, "recv")                                       \
  V(kRecvDone, "recv-done")                              \
  V(kReduce, "reduce")                                   \
  V(kReducePrecision, "reduce-precision")                \
  V(kReduceScatter, "reduce-scatter")                    \
  V(kReduceWindow, "reduce-window")                      \
  V(kRemainder, "remainder")                             \
  V(kReplicaId, "replica-id")                            \
  V(kReshape, "reshape")                                 \
  V(kReverse, "reverse")                                 \
  V(kRng, "rng")                                         \
  V(kRngBitGenerator, "rng-bit-generator")               \
  V(kRngGetAndUpdateState, "rng-get-and-update-state")   \
  V(kRoundNearestAfz, "round-nearest-afz")               \
  V(kRoundNearestEven, "round-nearest-even")             \
  V(kRsqrt, "rsqrt")                                     \
  V(kScaledDot, "scaled-dot")                            \
  V(kScatter, "scatter")                                 \
  V(kSelect, "select")                                   \
  V(kSelectAndScatter, "select-and-scatter")             \
  V(kSend, "send")                                       \
  V(kSendDone, "send-done")                              \
  V(kSetDimensionSize, "set-dimension-size")             \
  V(kShiftLeft, "shift-left")                            \
  V(kShiftRightArithmetic, "shift-right-arithmetic")     \
  V(kShiftRightLogical, "shift-right-logical")           \
  V(kSign, "sign")                                       \
  V(kSin, "sine")                                        \
  V(kSlice, "slice")                                     \
  V(kSort, "sort")                                       \
  V(kSqrt, "sqrt")                                       \
  V(kStochasticConvert, "stochastic-convert")            \
  V(kSubtract, "subtract")                               \
  V(kTan, "tan")                                         \
  V(kTanh, "tanh")                                       \
  V(kTopK, "topk")                                       \
  V(kTranspose, "transpose")                             \
  V(kTriangularSolve, "triangular-solve")                \
  V(kTuple, "tuple")                                     \
  V(kWhile, "while")                                     \
  V(kXor, "xor")

enum class Opcode : uint8_t {
#define SPMDSIM_OPCODE_ENUM(e, s) e,
  SPMDSIM_OPCODES(SPMDSIM_OPCODE_ENUM)
#undef SPMDSIM_OPCODE_ENUM
      kUnknown,
};

// "get-tuple-element" -> kGetTupleElement; kUnknown for anything else.
Opcode OpcodeFromName(std::string_view name);
std::string_view OpcodeName(Opcode opcode);

// The collectives XLA has, each -start/-done pair and plain form as one base kind.
enum class CollectiveKind : uint8_t {
  kNone,  // not a collective
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kRaggedAllToAll,
  kCollectivePermute,
  kCollectiveBroadcast,
  kSend,
  kRecv,
};

// The collective an opcode performs ("all-reduce-start" -> kAllReduce); kNone otherwise.
CollectiveKind CollectiveKindOf(Opcode opcode);
// The base opcode's name ("all-reduce"); empty for kNone.
std::string_view CollectiveKindName(CollectiveKind kind);
bool IsAsyncDone(Opcode opcode);
// XLA's elementwise opcodes (HloInstruction::IsElementwise): unary and binary arithmetic,
// compare, select, clamp, map, convert, copy... bitcast-convert is elementwise only between
// types of one bit width (otherwise it adds or drops a minor dimension): callers that see the
// types check that.
bool IsElementwiseOpcode(Opcode opcode);

}  // namespace spmdsim::ir
