// Element types of HLO shapes, spelled as XLA prints them ("f32", "bf16", "f8e4m3fn", "s4", ...).
//
// Assumes XLA's xla_data.proto PrimitiveType list as of 2025; an unknown spelling is a parse error
// reported by the shape parser, not a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace spmdsim::ir {

enum class PrimitiveType : uint8_t {
  kPred,
  kS1,
  kS2,
  kS4,
  kS8,
  kS16,
  kS32,
  kS64,
  kU1,
  kU2,
  kU4,
  kU8,
  kU16,
  kU32,
  kU64,
  kF16,
  kBF16,
  kF32,
  kF64,
  kF4E2M1FN,
  kF8E3M4,
  kF8E4M3,
  kF8E4M3FN,
  kF8E4M3B11FNUZ,
  kF8E4M3FNUZ,
  kF8E5M2,
  kF8E5M2FNUZ,
  kF8E8M0FNU,
  kC64,
  kC128,
  kToken,
  kOpaque,
  kTuple,
};

// "f32" -> kF32. Returns nullopt for anything that is not an HLO element type name.
std::optional<PrimitiveType> PrimitiveTypeFromName(std::string_view name);

// kF32 -> "f32"; kTuple -> "tuple".
std::string_view PrimitiveTypeName(PrimitiveType type);

// Bits one element occupies when packed (4 for s4, 32 for f32, 0 for token/opaque/tuple).
int PrimitiveTypeBitWidth(PrimitiveType type);

// Bytes one element occupies in an unpacked buffer: sub-byte types take a whole byte unless the
// layout says otherwise (E(4)), which is how XLA sizes them.
int64_t PrimitiveTypeByteWidth(PrimitiveType type);

bool IsArrayType(PrimitiveType type);

// Signed or unsigned integers of any width (not pred).
bool IsIntegralType(PrimitiveType type);

}  // namespace spmdsim::ir
