#include "ir/primitive_type.h"

#include <array>

#include "ir/name_table.h"

namespace spmdsim::ir {
namespace {

struct TypeInfo {
  PrimitiveType type;
  std::string_view name;
  int bits;
};

// Order follows the enum so that Info(type) is an index.
constexpr std::array kTypes = {
    TypeInfo{PrimitiveType::kPred, "pred", 8},
    TypeInfo{PrimitiveType::kS1, "s1", 1},
    TypeInfo{PrimitiveType::kS2, "s2", 2},
    TypeInfo{PrimitiveType::kS4, "s4", 4},
    TypeInfo{PrimitiveType::kS8, "s8", 8},
    TypeInfo{PrimitiveType::kS16, "s16", 16},
    TypeInfo{PrimitiveType::kS32, "s32", 32},
    TypeInfo{PrimitiveType::kS64, "s64", 64},
    TypeInfo{PrimitiveType::kU1, "u1", 1},
    TypeInfo{PrimitiveType::kU2, "u2", 2},
    TypeInfo{PrimitiveType::kU4, "u4", 4},
    TypeInfo{PrimitiveType::kU8, "u8", 8},
    TypeInfo{PrimitiveType::kU16, "u16", 16},
    TypeInfo{PrimitiveType::kU32, "u32", 32},
    TypeInfo{PrimitiveType::kU64, "u64", 64},
    TypeInfo{PrimitiveType::kF16, "f16", 16},
    TypeInfo{PrimitiveType::kBF16, "bf16", 16},
    TypeInfo{PrimitiveType::kF32, "f32", 32},
    TypeInfo{PrimitiveType::kF64, "f64", 64},
    TypeInfo{PrimitiveType::kF4E2M1FN, "f4e2m1fn", 4},
    TypeInfo{PrimitiveType::kF8E3M4, "f8e3m4", 8},
    TypeInfo{PrimitiveType::kF8E4M3, "f8e4m3", 8},
    TypeInfo{PrimitiveType::kF8E4M3FN, "f8e4m3fn", 8},
    TypeInfo{PrimitiveType::kF8E4M3B11FNUZ, "f8e4m3b11fnuz", 8},
    TypeInfo{PrimitiveType::kF8E4M3FNUZ, "f8e4m3fnuz", 8},
    TypeInfo{PrimitiveType::kF8E5M2, "f8e5m2", 8},
    TypeInfo{PrimitiveType::kF8E5M2FNUZ, "f8e5m2fnuz", 8},
    TypeInfo{PrimitiveType::kF8E8M0FNU, "f8e8m0fnu", 8},
    TypeInfo{PrimitiveType::kC64, "c64", 64},
    TypeInfo{PrimitiveType::kC128, "c128", 128},
    TypeInfo{PrimitiveType::kToken, "token", 0},
    TypeInfo{PrimitiveType::kOpaque, "opaque", 0},
    TypeInfo{PrimitiveType::kTuple, "tuple", 0},
};

const TypeInfo& Info(PrimitiveType type) { return kTypes[static_cast<size_t>(type)]; }

}  // namespace

namespace {

// A name of at most four characters and its length as one integer.
constexpr uint64_t Pack4(std::string_view s) {
  uint64_t v = uint64_t{s.size()} << 32;
  for (size_t i = 0; i < s.size() && i < 4; ++i) {
    v |= uint64_t{static_cast<unsigned char>(s[i])} << (8 * i);
  }
  return v;
}

}  // namespace

std::optional<PrimitiveType> PrimitiveTypeFromName(std::string_view name) {
  // Every type name of at most four characters (all the common ones) by a switch on the packed
  // name: the parser looks up one per shape.
  if (name.size() <= 4) {
    switch (Pack4(name)) {
      case Pack4("pred"):
        return PrimitiveType::kPred;
      case Pack4("s1"):
        return PrimitiveType::kS1;
      case Pack4("s2"):
        return PrimitiveType::kS2;
      case Pack4("s4"):
        return PrimitiveType::kS4;
      case Pack4("s8"):
        return PrimitiveType::kS8;
      case Pack4("s16"):
        return PrimitiveType::kS16;
      case Pack4("s32"):
        return PrimitiveType::kS32;
      case Pack4("s64"):
        return PrimitiveType::kS64;
      case Pack4("u1"):
        return PrimitiveType::kU1;
      case Pack4("u2"):
        return PrimitiveType::kU2;
      case Pack4("u4"):
        return PrimitiveType::kU4;
      case Pack4("u8"):
        return PrimitiveType::kU8;
      case Pack4("u16"):
        return PrimitiveType::kU16;
      case Pack4("u32"):
        return PrimitiveType::kU32;
      case Pack4("u64"):
        return PrimitiveType::kU64;
      case Pack4("f16"):
        return PrimitiveType::kF16;
      case Pack4("bf16"):
        return PrimitiveType::kBF16;
      case Pack4("f32"):
        return PrimitiveType::kF32;
      case Pack4("f64"):
        return PrimitiveType::kF64;
      case Pack4("c64"):
        return PrimitiveType::kC64;
      case Pack4("c128"):
        return PrimitiveType::kC128;
      default:
        return std::nullopt;
    }
  }
  // Hashed, built once: the parser looks up a type per shape, and a linear scan of
  // same-length names ("s32", "u32", "f16", ...) cost a tenth of the parse.
  static const NameTable<int>* const table = [] {
    auto* t = new NameTable<int>();
    for (const TypeInfo& info : kTypes) {
      if (info.type != PrimitiveType::kTuple) t->Insert(info.name, static_cast<int>(info.type) + 1);
    }
    return t;
  }();
  const int found = table->Find(name);  // 0: absent
  if (found == 0) return std::nullopt;
  return static_cast<PrimitiveType>(found - 1);
}

std::string_view PrimitiveTypeName(PrimitiveType type) { return Info(type).name; }

int PrimitiveTypeBitWidth(PrimitiveType type) {
  return type == PrimitiveType::kPred ? 8 : Info(type).bits;
}

int64_t PrimitiveTypeByteWidth(PrimitiveType type) {
  const int bits = Info(type).bits;
  return bits == 0 ? 0 : (bits + 7) / 8;
}

bool IsArrayType(PrimitiveType type) {
  return type != PrimitiveType::kToken && type != PrimitiveType::kOpaque &&
         type != PrimitiveType::kTuple;
}

bool IsIntegralType(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kS1:
    case PrimitiveType::kS2:
    case PrimitiveType::kS4:
    case PrimitiveType::kS8:
    case PrimitiveType::kS16:
    case PrimitiveType::kS32:
    case PrimitiveType::kS64:
    case PrimitiveType::kU1:
    case PrimitiveType::kU2:
    case PrimitiveType::kU4:
    case PrimitiveType::kU8:
    case PrimitiveType::kU16:
    case PrimitiveType::kU32:
    case PrimitiveType::kU64:
      return true;
    default:
      return false;
  }
}

}  // namespace spmdsim::ir
