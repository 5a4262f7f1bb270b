// What the sharding walk is built from: attribute text, dependency sets, the meet of two
// shardings, which opcodes are elementwise or carry random bits.
#include <algorithm>
#include <charconv>
#include <span>
#include <unordered_map>

#include "passes/sharding/sharding_walker.h"

namespace spmdsim::passes::sharding_internal {

// "{0,2,1}" or "{}" -> ints; nullopt when the text is not such a list.
std::optional<std::vector<int64_t>> ParseIntList(std::string_view text) {
  std::vector<int64_t> values;
  size_t i = 0;
  while (i < text.size() && (text[i] == '{' || text[i] == ' ')) ++i;
  while (i < text.size() && text[i] != '}') {
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), value);
    if (ec != std::errc()) return std::nullopt;
    values.push_back(value);
    i = static_cast<size_t>(end - text.data());
    while (i < text.size() && (text[i] == ',' || text[i] == ' ')) ++i;
  }
  return values;
}

std::vector<int64_t> IntsAttr(const HloInstruction& instr, std::string_view name) {
  return ParseIntList(instr.FindAttribute(name)).value_or(std::vector<int64_t>{});
}

int64_t IntAttr(const HloInstruction& instr, std::string_view name, int64_t fallback) {
  const std::string_view text = instr.FindAttribute(name);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() ? value : fallback;
}

std::vector<SliceRange> ParseSlice(std::string_view text) {
  std::vector<SliceRange> ranges;
  size_t i = 0;
  while ((i = text.find('[', i)) != text.npos) {
    const size_t close = text.find(']', i);
    if (close == text.npos) break;
    std::string_view body = text.substr(i + 1, close - i - 1);
    int64_t parts[3] = {0, 0, 1};
    for (int64_t& part : parts) {
      const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), part);
      if (ec != std::errc()) break;
      body.remove_prefix(static_cast<size_t>(end - body.data()));
      if (!body.empty() && body.front() == ':') body.remove_prefix(1);
    }
    ranges.push_back({parts[0], parts[1], parts[2]});
    i = close + 1;
  }
  return ranges;
}

// The value of `key` inside frontend_attributes={k="...",...} (escaped quotes inside kept).
std::string_view FrontendAttribute(const HloInstruction& instr, std::string_view key) {
  const std::string_view text = instr.FindAttribute("frontend_attributes");
  const std::string needle = std::string(key) + "=\"";
  const size_t start = text.find(needle);
  if (start == text.npos) return {};
  const size_t begin = start + needle.size();
  for (size_t i = begin; i < text.size(); ++i) {
    if (text[i] == '"' && text[i - 1] != '\\') return text.substr(begin, i - begin);
  }
  return {};
}

void SetBit(Bits& bits, size_t index) {
  if (bits.size() <= index / 64) bits.resize(index / 64 + 1, 0);
  bits[index / 64] |= uint64_t{1} << (index % 64);
}

void OrInto(Bits& into, const Bits& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) into[i] |= from[i];
}

std::vector<int32_t> BitList(const Bits& bits, size_t limit) {
  std::vector<int32_t> out;
  for (size_t w = 0; w < bits.size(); ++w) {
    for (size_t b = 0; b < 64; ++b) {
      const size_t index = w * 64 + b;
      if (index < limit && (bits[w] >> b & 1) != 0) out.push_back(static_cast<int32_t>(index));
    }
  }
  return out;
}

// Everything a value depends on.
Bits DepsOf(const ValueState& v) {
  Bits bits = v.deps;
  for (const Bits& element : v.element_deps) OrInto(bits, element);
  return bits;
}

// What element `index` of a tuple value depends on (opt-barriers and call arguments bundle
// unrelated values; their elements keep their own dependencies).
Bits ElementDeps(const ValueState& v, size_t index) {
  if (index >= v.element_deps.size()) return DepsOf(v);
  Bits bits = v.deps;
  OrInto(bits, v.element_deps[index]);
  return bits;
}

bool AnyLeaf(const ValueSharding& v, ArraySharding::Kind kind) {
  if (!v.is_tuple) return v.array.kind == kind;
  return std::any_of(v.elements.begin(), v.elements.end(),
                     [kind](const ValueSharding& e) { return AnyLeaf(e, kind); });
}

bool AllReplicated(const ValueSharding& v) {
  if (!v.is_tuple) return v.array.IsReplicated();
  return std::all_of(v.elements.begin(), v.elements.end(), AllReplicated);
}

// The common part of two shardings: per dimension, the axes both lead with.
ArraySharding Meet(const ArraySharding& a, const ArraySharding& b) {
  if (a == b) return a;
  if (!a.IsTiled() || !b.IsTiled() || a.dims.size() != b.dims.size()) {
    return a.kind == ArraySharding::Kind::kManual && b.kind == ArraySharding::Kind::kManual
               ? a
               : ArraySharding::Unknown();
  }
  ArraySharding out = a;
  for (size_t d = 0; d < a.dims.size(); ++d) {
    size_t k = 0;
    while (k < a.dims[d].size() && k < b.dims[d].size() && a.dims[d][k] == b.dims[d][k]) ++k;
    out.dims[d].resize(k);
  }
  return out;
}

ValueSharding Meet(const ValueSharding& a, const ValueSharding& b) {
  if (!a.is_tuple && !b.is_tuple) return {Meet(a.array, b.array), {}};
  if (a.is_tuple != b.is_tuple || a.elements.size() != b.elements.size()) {
    return a == b ? a : ValueSharding{ArraySharding::Unknown(), {}};  // shapes differ: invalid HLO
  }
  ValueSharding out = a;
  for (size_t i = 0; i < a.elements.size(); ++i) {
    out.elements[i] = Meet(a.elements[i], b.elements[i]);
  }
  return out;
}

// The array leaves of a value with their shapes, in order.
void Leaves(const ValueSharding& v, const ir::Shape& shape,
            std::vector<std::pair<const ArraySharding*, const ir::Shape*>>& out) {
  if (!v.is_tuple || !shape.IsTuple()) {
    if (shape.IsArray()) out.emplace_back(&v.array, &shape);
    return;
  }
  for (size_t i = 0; i < v.elements.size() && i < shape.tuple_shapes().size(); ++i) {
    Leaves(v.elements[i], shape.tuple_shapes()[i], out);
  }
}

void MergeRng(std::vector<int32_t>& into, const std::vector<int32_t>& from) {
  for (int32_t g : from) {
    if (std::find(into.begin(), into.end(), g) == into.end()) into.push_back(g);
  }
}

// Ops the threefry bits flow through unchanged in order (so a flat counter index still names
// the same element): elementwise ops, reshapes, the halves' slices and concatenation, and the
// plumbing of calls, loops and tuples.
bool CarriesRng(Opcode op) {
  switch (op) {
    case Opcode::kReshape:
    case Opcode::kBitcast:
    case Opcode::kSlice:
    case Opcode::kConcatenate:
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kCall:
    case Opcode::kWhile:
    case Opcode::kOptimizationBarrier:
    case Opcode::kCustomCall:
    case Opcode::kParameter:
      return true;
    default:
      return ir::IsElementwiseOpcode(op);
  }
}

// iota(n), 1-D, whose users slice it into the halves [0:n/2] and [n/2:n]: the counter of JAX's
// non-partitionable threefry (REFERENCE §2).
bool IsThreefryCounter(const HloInstruction& iota) {
  if (iota.shape.rank() != 1) return false;
  const int64_t n = iota.shape.dims()[0];
  if (n < 2 || n % 2 != 0) return false;
  bool low = false;
  bool high = false;
  for (const HloInstruction* user : iota.users) {
    if (user->opcode != Opcode::kSlice) continue;
    const std::vector<SliceRange> r = ParseSlice(user->FindAttribute("slice"));
    if (r.size() != 1 || r[0].stride != 1) continue;
    low = low || (r[0].start == 0 && r[0].limit == n / 2);
    high = high || (r[0].start == n / 2 && r[0].limit == n);
  }
  return low && high;
}

}  // namespace spmdsim::passes::sharding_internal
