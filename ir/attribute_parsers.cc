#include "ir/attribute_parsers.h"

#include <array>
#include <memory>

#include "ir/checked_math.h"
#include "ir/named_sharding.h"

namespace spmdsim::ir {
namespace {

void CheckDepth(TokenReader& reader, int depth) {
  if (depth > kMaxNestingDepth) {
    reader.Fail(reader.Peek(), "nesting too deep (expected at most " +
                                   std::to_string(kMaxNestingDepth) + " levels)");
  }
}

// The fields after ':' in a layout, e.g. "T(8,128)(2,1)E(4)S(1)".
void ParseLayoutFields(TokenReader& reader, std::string_view fields, size_t base, Layout& layout) {
  size_t i = 0;
  const auto fail = [&](std::string message) { throw ParseError{base + i, std::move(message)}; };
  // Reads "(...)" at i and returns its inside.
  const auto group = [&]() -> std::string_view {
    if (i >= fields.size() || fields[i] != '(') fail("expected '(' in layout");
    const size_t close = fields.find(')', i);
    if (close == std::string_view::npos) fail("unterminated '(' in layout");
    std::string_view inside = fields.substr(i + 1, close - i - 1);
    i = close + 1;
    return inside;
  };
  const auto ints = [&](std::string_view inside, bool allow_star) {
    std::vector<int64_t> values;
    size_t start = 0;
    while (start <= inside.size()) {
      size_t comma = inside.find(',', start);
      if (comma == std::string_view::npos) comma = inside.size();
      std::string_view item = inside.substr(start, comma - start);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      int64_t v = 0;
      if (allow_star && item == "*") {
        values.push_back(Tile::kCombinedDim);
      } else if (!ParseInt64(item, v)) {
        fail("expected an integer in layout, got '" + std::string(item) + "'");
      } else {
        values.push_back(v);
      }
      start = comma + 1;
    }
    return values;
  };
  (void)reader;
  while (i < fields.size()) {
    const size_t field_start = i;
    if (fields[i] == 'T' && i + 1 < fields.size() && fields[i + 1] == '(') {
      ++i;
      while (i < fields.size() && fields[i] == '(') layout.tiles.push_back({ints(group(), true)});
    } else if (fields[i] == 'E' && i + 1 < fields.size() && fields[i + 1] == '(') {
      ++i;
      auto v = ints(group(), false);
      if (v.size() != 1 || v[0] < 0 || v[0] > 64) fail("bad element size in layout");
      layout.element_size_in_bits = v[0];
    } else if (fields[i] == 'S' && i + 1 < fields.size() && fields[i + 1] == '(') {
      ++i;
      auto v = ints(group(), false);
      if (v.size() != 1) fail("bad memory space in layout");
      layout.memory_space = v[0];
    } else if (fields[i] == ' ') {
      ++i;
    } else {
      // Other fields: a name of letters or one of '#', '*', then a parenthesised group.
      while (i < fields.size() && fields[i] != '(') ++i;
      if (i == field_start && i < fields.size()) fail("unexpected character in layout");
      group();
      layout.other_fields.append(fields.substr(field_start, i - field_start));
    }
  }
}

Layout ParseLayout(TokenReader& reader) {
  Layout layout;
  reader.Expect(TokenKind::kLbrace);
  if (!reader.PeekIs(TokenKind::kRbrace) && !reader.PeekIs(TokenKind::kColon)) {
    do {
      layout.minor_to_major.push_back(reader.ExpectInt("a layout dimension"));
    } while (reader.Accept(TokenKind::kComma));
  }
  if (reader.Accept(TokenKind::kColon)) {
    Lexer& lexer = reader.lexer();
    const size_t base = lexer.offset();
    std::string_view fields = lexer.ScanRawValue();
    ParseLayoutFields(reader, fields, base, layout);
  }
  reader.Expect(TokenKind::kRbrace, "'}' closing the layout");
  return layout;
}

// Layouts repeat ("{1,0}" on most instructions), so parsed ones are kept per thread, keyed by
// their text, and shared between shapes: a layout seen before costs no parse and no allocation.
// A direct-mapped table: a collision only means parsing again.
struct LayoutCacheSlot {
  std::string text;
  std::shared_ptr<const Layout> layout;
};
constexpr size_t kLayoutCacheSlots = 256;

// layout ::= '{' [int (',' int)*] [':' fields] '}', with the reader's next token the '{'.
std::shared_ptr<const Layout> ParseSharedLayout(TokenReader& reader) {
  Lexer& lexer = reader.lexer();
  const size_t open = reader.Peek().offset;
  const std::string_view all = lexer.text();
  const size_t begin = open - lexer.base_offset();
  const size_t close = all.find('}', begin);
  std::string_view key;
  // Text with strings, comments, line breaks or nested braces takes the token path only.
  if (close != std::string_view::npos) key = all.substr(begin, close + 1 - begin);
  for (size_t i = 1; i < key.size(); ++i) {
    const char c = key[i];
    if (c == '"' || c == '\'' || c == '/' || c == '\n' || c == '{') {
      key = {};
      break;
    }
  }
  LayoutCacheSlot* slot = nullptr;
  if (!key.empty()) {
    thread_local std::array<LayoutCacheSlot, kLayoutCacheSlots> cache;
    uint32_t hash = 2166136261u;  // FNV-1a
    for (char c : key) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
    slot = &cache[hash % kLayoutCacheSlots];
    if (slot->layout != nullptr && slot->text == key) {
      lexer.SkipTo(open + key.size());
      return slot->layout;
    }
  }
  auto layout = std::make_shared<const Layout>(ParseLayout(reader));
  // Cached only when the tokens ended at the first '}', so the text alone decides the layout.
  if (slot != nullptr && lexer.offset() == open + key.size()) {
    slot->text.assign(key);
    slot->layout = layout;
  }
  return layout;
}

SubgroupType ParseSubgroupType(TokenReader& reader) {
  Token t = reader.Expect(TokenKind::kName, "a subgroup type");
  if (t.text == "replicated") return SubgroupType::kReplicated;
  if (t.text == "manual") return SubgroupType::kManual;
  if (t.text == "unreduced") return SubgroupType::kUnreduced;
  if (t.text == "maximal") return SubgroupType::kMaximal;
  reader.Fail(t, "unknown subgroup type '" + std::string(t.text) + "'");
}

void ParseShardingBody(TokenReader& reader, Sharding& s) {
  if (reader.PeekIsName("mesh") || reader.PeekIsName("maximal_mesh")) {
    ParseNamedShardingBody(reader, s);
    return;
  }
  bool has_kind = false;
  Token t;
  // A second kind would leave the first one's fields (tile dims, device) behind, unprinted.
  const auto set_kind = [&](Sharding::Kind kind) {
    if (has_kind)
      reader.Fail(t, "a sharding has one kind; '" + std::string(t.text) + "' is a second");
    s.kind = kind;
    has_kind = true;
  };
  while (!reader.PeekIs(TokenKind::kRbrace)) {
    t = reader.Next();
    if (t.kind != TokenKind::kName) reader.FailExpected("a sharding attribute", t);
    if (t.text == "replicated") {
      set_kind(Sharding::Kind::kReplicated);
    } else if (t.text == "manual") {
      set_kind(Sharding::Kind::kManual);
    } else if (t.text == "unknown") {
      set_kind(Sharding::Kind::kUnknown);
    } else if (t.text == "unreduced") {
      set_kind(Sharding::Kind::kUnreduced);
    } else if (t.text == "maximal") {
      set_kind(Sharding::Kind::kMaximal);
    } else if (t.text == "device") {
      reader.Expect(TokenKind::kEqual);
      const Token id = reader.Peek();
      s.maximal_device = reader.ExpectInt("a device id");
      if (s.maximal_device < 0) reader.Fail(id, "expected a device id (0 or more)");
    } else if (t.text == "devices") {
      set_kind(Sharding::Kind::kTiled);
      reader.Expect(TokenKind::kEqual);
      s.tile_dims = reader.ExpectIntList(TokenKind::kLsquare, TokenKind::kRsquare);
      int64_t count = 1;
      for (int64_t d : s.tile_dims) {
        auto product = CheckedMul(count, d);
        if (d <= 0 || !product || *product > kMaxDevices) reader.Fail(t, "bad tile assignment");
        count = *product;
      }
      if (reader.Accept(TokenKind::kLeq)) {
        s.uses_iota = true;
        s.iota.reshape_dims = reader.ExpectIntList(TokenKind::kLsquare, TokenKind::kRsquare);
        if (reader.PeekIsName("T")) {
          reader.Next();
          s.iota.transpose_perm = reader.ExpectIntList(TokenKind::kLparen, TokenKind::kRparen);
        }
        const auto devices = IotaSize(s.iota);
        if (!devices || *devices != count) {
          reader.Fail(t, "iota tile assignment does not match the tile dims");
        }
      } else {
        do {
          s.device_list.push_back(reader.ExpectInt("a device id"));
          if (static_cast<int64_t>(s.device_list.size()) > count) break;
        } while (reader.Accept(TokenKind::kComma));
        if (static_cast<int64_t>(s.device_list.size()) != count) {
          reader.Fail(t, "tile assignment lists " + std::to_string(s.device_list.size()) +
                             " devices, its dims need " + std::to_string(count));
        }
      }
    } else if (t.text == "last_tile_dim_replicate") {
      s.last_tile_dim_replicate = true;
    } else if (t.text == "last_tile_dims") {
      reader.Expect(TokenKind::kEqual);
      reader.Expect(TokenKind::kLbrace);
      do {
        s.last_tile_dims.push_back(ParseSubgroupType(reader));
      } while (reader.Accept(TokenKind::kComma));
      reader.Expect(TokenKind::kRbrace);
    } else if (t.text == "metadata") {
      reader.Expect(TokenKind::kEqual);
      Lexer& lexer = reader.lexer();
      std::string_view raw = lexer.ScanRawValue();
      if (raw.empty() || raw.front() != '{') reader.FailExpected("'{'", reader.Peek());
      s.metadata = "metadata=" + std::string(raw);
    } else if (t.text == "shard_as" || t.text == "shard_like") {
      const int64_t id = reader.ExpectInt("a shard group id");
      if (!s.other.empty()) s.other += ' ';
      s.other += std::string(t.text) + " " + std::to_string(id);
    } else {
      reader.Fail(t, "unknown sharding attribute '" + std::string(t.text) +
                         "' (expected replicated, manual, maximal, unknown, devices=[...], "
                         "last_tile_dim_replicate, last_tile_dims={...} or metadata={...})");
    }
  }
  if (!has_kind) reader.Fail(reader.Peek(), "sharding has no kind (replicated, devices=...)");
  if (s.kind == Sharding::Kind::kMaximal && s.maximal_device < 0) {
    reader.Fail(reader.Peek(), "maximal sharding needs device=N");
  }
  // Fields of another kind would be kept but never printed.
  if (s.kind != Sharding::Kind::kMaximal && s.maximal_device >= 0) {
    reader.Fail(reader.Peek(), "device=N belongs to a maximal sharding");
  }
  if (s.kind != Sharding::Kind::kTiled &&
      (s.last_tile_dim_replicate || !s.last_tile_dims.empty())) {
    reader.Fail(reader.Peek(), "subgroup dims belong to a tiled sharding (devices=[...])");
  }
  const int64_t subgroup_dims =
      s.last_tile_dim_replicate ? 1 : static_cast<int64_t>(s.last_tile_dims.size());
  if (s.kind == Sharding::Kind::kTiled &&
      subgroup_dims > static_cast<int64_t>(s.tile_dims.size())) {
    reader.Fail(reader.Peek(), "more subgroup dims than tile dims");
  }
}

// The array shape as XLA prints it, "f32[768,3072]{1,0}": a type, '[', unsigned dims of at most
// 18 digits, ']' and an optional layout, read from the characters rather than as tokens (shapes
// hold a third of a module's tokens). Anything else (blanks or comments inside, dynamic dims,
// token/opaque, a size that overflows) returns false having consumed nothing, and the token
// path, which reports the errors, parses it instead.
bool ParseCanonicalArrayShape(TokenReader& reader, Shape& shape) {
  const Token type_token = reader.Peek();
  if (type_token.kind != TokenKind::kName) return false;
  Lexer& lexer = reader.lexer();
  const std::string_view text = lexer.text();
  const size_t n = text.size();
  size_t p = type_token.offset - lexer.base_offset() + type_token.text.size();
  if (p >= n || text[p] != '[') return false;
  const auto type = PrimitiveTypeFromName(type_token.text);
  if (!type || *type == PrimitiveType::kToken || *type == PrimitiveType::kOpaque) {
    return false;
  }
  constexpr size_t kMaxRank = 8;
  constexpr size_t kMaxDigits = 18;  // below 10^18: no overflow
  std::array<int64_t, kMaxRank> dims;
  size_t rank = 0;
  int64_t elements = 1;
  ++p;
  if (p < n && text[p] != ']') {
    for (;;) {
      const size_t first = p;
      int64_t dim = 0;
      while (p < n && p - first < kMaxDigits && text[p] >= '0' && text[p] <= '9') {
        dim = dim * 10 + (text[p] - '0');
        ++p;
      }
      if (p == first || rank == kMaxRank) return false;
      const auto product = CheckedMul(elements, dim);
      if (!product) return false;
      elements = *product;
      dims[rank++] = dim;
      if (p >= n || text[p] != ',') break;
      ++p;
    }
  }
  if (p >= n || text[p] != ']') return false;
  ++p;
  // The layout decision of the token path: the next token is '{' and the first non-blank
  // character after it starts a layout (a dimension number, ':' or '}').
  size_t q = p;
  while (q < n && (text[q] == ' ' || text[q] == '\t' || text[q] == '\n' || text[q] == '\r')) ++q;
  if (q < n && text[q] == '/') return false;  // a comment: the token path skips it
  bool has_layout = false;
  if (q < n && text[q] == '{') {
    size_t r = q + 1;
    while (r < n && (text[r] == ' ' || text[r] == '\t' || text[r] == '\n' || text[r] == '\r')) ++r;
    has_layout = r < n && ((text[r] >= '0' && text[r] <= '9') || text[r] == ':' || text[r] == '}');
  }
  shape.set_element_type(*type);
  shape.mutable_dims().assign(dims.begin(), dims.begin() + rank);
  lexer.SkipTo(lexer.base_offset() + (has_layout ? q : p));
  if (has_layout) shape.set_layout(ParseSharedLayout(reader));
  if (ArrayBytes(elements, *type, shape.layout().element_size_in_bits) < 0) {
    reader.Fail(type_token, "shape is too large: its byte size overflows int64");
  }
  return true;
}

}  // namespace

Shape ParseShape(TokenReader& reader, int depth) {
  CheckDepth(reader, depth);
  if (Shape shape; ParseCanonicalArrayShape(reader, shape)) return shape;
  if (reader.Accept(TokenKind::kLparen)) {
    std::vector<Shape> elements;
    if (!reader.Accept(TokenKind::kRparen)) {
      do {
        elements.push_back(ParseShape(reader, depth + 1));
      } while (reader.Accept(TokenKind::kComma));
      reader.Expect(TokenKind::kRparen, "')' closing the tuple shape");
    }
    return Shape::Tuple(std::move(elements));
  }
  Token type_token = reader.Next();
  if (type_token.kind != TokenKind::kName) reader.FailExpected("a shape", type_token);
  auto type = PrimitiveTypeFromName(type_token.text);
  if (!type) {
    reader.Fail(type_token, "unknown element type '" + std::string(type_token.text) +
                                "' (expected an XLA element type such as pred, s32, u32, bf16, "
                                "f16, f32 or f64)");
  }
  Shape shape = Shape::Array(*type, {});
  reader.Expect(TokenKind::kLsquare, "'[' after the element type");
  if (!reader.Accept(TokenKind::kRsquare)) {
    auto& dims = shape.mutable_dims();
    auto& dynamic = shape.mutable_dynamic();
    // Gathered on the stack and stored once, so the vector is allocated at its final size.
    constexpr size_t kInlineRank = 8;
    std::array<int64_t, kInlineRank> inline_dims;
    size_t rank = 0;
    do {
      bool is_dynamic = false;
      int64_t dim = 0;
      if (reader.Accept(TokenKind::kQuestion)) {
        is_dynamic = true;
        dim = -1;
      } else {
        is_dynamic = reader.Accept(TokenKind::kLeq);
        const Token& dim_token = reader.Peek();
        dim = reader.ExpectInt("a dimension size");
        if (dim < 0) reader.Fail(dim_token, "negative dimension size");
      }
      if (is_dynamic) {
        dynamic.resize(rank + 1, false);
        dynamic.back() = true;
      }
      if (rank < kInlineRank) {
        inline_dims[rank] = dim;
      } else {
        if (rank == kInlineRank) dims.assign(inline_dims.begin(), inline_dims.end());
        dims.push_back(dim);
      }
      if (++rank > 1024) reader.Fail(type_token, "too many dimensions");
    } while (reader.Accept(TokenKind::kComma));
    if (rank <= kInlineRank) dims.assign(inline_dims.begin(), inline_dims.begin() + rank);
    if (!dynamic.empty()) dynamic.resize(rank, false);
    reader.Expect(TokenKind::kRsquare, "']' closing the dimensions");
  }
  if (reader.PeekIs(TokenKind::kLbrace)) {
    // A '{' after a shape is its layout unless it opens a computation body ("-> f32[8] {"):
    // a layout starts with a dimension number, ':' or '}'.
    const char c = reader.lexer().CharAfterPeek();
    if ((c >= '0' && c <= '9') || c == ':' || c == '}') shape.set_layout(ParseSharedLayout(reader));
  }
  // Reject sizes that overflow int64 once, here, so the rest of spmdsim can multiply freely.
  int64_t elements = 1;
  for (int64_t d : shape.dims()) {
    auto product = CheckedMul(elements, d < 0 ? 0 : d);
    if (!product) reader.Fail(type_token, "shape is too large: its element count overflows int64");
    elements = *product;
  }
  if (shape.IsArray() &&
      ArrayBytes(elements, shape.element_type(), shape.layout().element_size_in_bits) < 0) {
    reader.Fail(type_token, "shape is too large: its byte size overflows int64");
  }
  if (*type == PrimitiveType::kToken || *type == PrimitiveType::kOpaque) {
    if (!shape.dims().empty()) reader.Fail(type_token, "token and opaque shapes have no dims");
  }
  return shape;
}

Sharding ParseSharding(TokenReader& reader, int depth) {
  CheckDepth(reader, depth);
  reader.Expect(TokenKind::kLbrace, "'{' starting a sharding");
  Sharding s;
  if (reader.PeekIs(TokenKind::kLbrace) || reader.PeekIs(TokenKind::kRbrace)) {
    s.kind = Sharding::Kind::kTuple;
    if (!reader.Accept(TokenKind::kRbrace)) {
      do {
        s.tuple.push_back(ParseSharding(reader, depth + 1));
        if (s.tuple.size() > 1000000) reader.Fail(reader.Peek(), "tuple sharding too long");
      } while (reader.Accept(TokenKind::kComma));
      reader.Expect(TokenKind::kRbrace, "'}' closing the tuple sharding");
    }
    return s;
  }
  ParseShardingBody(reader, s);
  reader.Expect(TokenKind::kRbrace, "'}' closing the sharding");
  return s;
}

namespace {

// mesh_groups ::= 'mesh' '[' axis '=' int (',' axis '=' int)* ']'
//                 [',' 'device_ids' '=' '(' device_list ')'] '{' axis_ref (',' axis_ref)* '}'
// axis_ref    ::= axis [':' '(' int ')' int]        axis ::= string | name
void ParseMeshGroups(TokenReader& reader, ReplicaGroups& groups) {
  const Token start = reader.Next();  // 'mesh'
  groups.uses_mesh = true;
  MeshAxesGroups& mesh = groups.mesh;
  const auto axis_name = [&]() {
    Token t = reader.Next();
    if (t.kind != TokenKind::kString && t.kind != TokenKind::kName) {
      reader.FailExpected("a mesh axis name", t);
    }
    return std::string(t.text);
  };
  reader.Expect(TokenKind::kLsquare);
  int64_t total = 1;
  do {
    std::string name = axis_name();
    reader.Expect(TokenKind::kEqual);
    const Token size_token = reader.Peek();
    const int64_t size = reader.ExpectInt("a mesh axis size");
    auto product = CheckedMul(total, size);
    if (size <= 0 || !product || *product > kMaxDevices)
      reader.Fail(size_token, "bad mesh axis size");
    total = *product;
    mesh.axes.emplace_back(std::move(name), size);
  } while (reader.Accept(TokenKind::kComma));
  reader.Expect(TokenKind::kRsquare);
  if (reader.Accept(TokenKind::kComma)) {
    reader.ExpectName("device_ids");
    reader.Expect(TokenKind::kEqual);
    reader.Expect(TokenKind::kLparen);
    std::string_view inside;
    const size_t inside_start = reader.lexer().offset();
    if (!reader.lexer().SkipBalancedParen(inside)) reader.Fail(start, "unterminated device_ids");
    mesh.device_ids_text = std::string(inside);
    Lexer sub(inside, inside_start);
    TokenReader r(sub);
    if (r.PeekIs(TokenKind::kLsquare)) {
      IotaList iota;
      r.ExpectIntList(TokenKind::kLsquare, TokenKind::kRsquare);
      r.Expect(TokenKind::kLeq);
      iota.reshape_dims = r.ExpectIntList(TokenKind::kLsquare, TokenKind::kRsquare);
      if (r.PeekIsName("T")) {
        r.Next();
        iota.transpose_perm = r.ExpectIntList(TokenKind::kLparen, TokenKind::kRparen);
      }
      if (!r.PeekIs(TokenKind::kEof)) r.FailExpected("')' closing device_ids", r.Peek());
      const auto ids = IotaSize(iota);
      if (!ids || *ids != total) r.Fail(start, "mesh device_ids do not match the mesh size");
      mesh.device_iota = std::move(iota);  // expanded on use, not here: it may be 2^20 ids
    } else {
      for (Token t = r.Next(); t.kind != TokenKind::kEof; t = r.Next()) {
        if (t.kind == TokenKind::kInt) {
          int64_t id = 0;
          if (!ParseInt64(t.text, id) || id < 0) r.Fail(t, "bad device id");
          mesh.device_ids.push_back(id);
        } else if (t.kind != TokenKind::kComma && t.kind != TokenKind::kLbrace &&
                   t.kind != TokenKind::kRbrace) {
          r.FailExpected("a device id", t);
        }
      }
    }
    if (mesh.device_iota.reshape_dims.empty() &&
        static_cast<int64_t>(mesh.device_ids.size()) != total) {
      reader.Fail(start, "mesh device_ids do not match the mesh size");
    }
  }
  reader.Expect(TokenKind::kLbrace, "'{' listing the group axes");
  do {
    MeshAxisRef ref;
    const Token name_token = reader.Peek();
    ref.name = axis_name();
    int64_t axis_size = 0;
    for (const auto& [name, size] : mesh.axes) {
      if (name == ref.name) axis_size = size;
    }
    if (axis_size == 0) reader.Fail(name_token, "'" + ref.name + "' is not an axis of the mesh");
    if (reader.Accept(TokenKind::kColon)) {
      reader.Expect(TokenKind::kLparen);
      ref.pre_size = reader.ExpectInt("a sub-axis pre-size");
      reader.Expect(TokenKind::kRparen);
      ref.size = reader.ExpectInt("a sub-axis size");
      auto span = CheckedMul(ref.pre_size, ref.size);
      if (ref.pre_size <= 0 || ref.size <= 0 || !span || axis_size % *span != 0) {
        reader.Fail(name_token, "sub-axis does not divide its mesh axis");
      }
    }
    // The part of the axis a ref spans, as the stride range [inner, inner * size) of the axis'
    // coordinate; two refs to one axis must not overlap (a device would sit twice in a group).
    const auto part = [&](const MeshAxisRef& r) {
      return r.pre_size == 0
                 ? std::pair<int64_t, int64_t>{1, axis_size}
                 : std::pair<int64_t, int64_t>{axis_size / (r.pre_size * r.size), r.size};
    };
    const auto [inner, size] = part(ref);
    for (const MeshAxisRef& other : mesh.group_axes) {
      if (other.name != ref.name) continue;
      const auto [other_inner, other_size] = part(other);
      if (inner * size > other_inner && other_inner * other_size > inner) {
        reader.Fail(name_token, "'" + ref.name + "' overlaps an axis already in the group");
      }
    }
    mesh.group_axes.push_back(std::move(ref));
  } while (reader.Accept(TokenKind::kComma));
  reader.Expect(TokenKind::kRbrace);
}

}  // namespace

ReplicaGroups ParseReplicaGroups(TokenReader& reader) {
  ReplicaGroups groups;
  if (reader.PeekIsName("mesh")) {
    ParseMeshGroups(reader, groups);
    return groups;
  }
  if (reader.PeekIs(TokenKind::kLsquare)) {
    const Token start = reader.Peek();
    groups.uses_iota = true;
    std::vector<int64_t> shape = reader.ExpectIntList(TokenKind::kLsquare, TokenKind::kRsquare);
    if (shape.size() != 2) reader.Fail(start, "iota replica groups need [num_groups,group_size]");
    groups.iota_num_groups = shape[0];
    groups.iota_group_size = shape[1];
    reader.Expect(TokenKind::kLeq);
    groups.iota.reshape_dims = reader.ExpectIntList(TokenKind::kLsquare, TokenKind::kRsquare);
    if (reader.PeekIsName("T")) {
      reader.Next();
      groups.iota.transpose_perm = reader.ExpectIntList(TokenKind::kLparen, TokenKind::kRparen);
    }
    const auto ids = IotaSize(groups.iota);
    const auto total = CheckedMul(shape[0], shape[1]);
    if (!ids || !total || shape[0] < 0 || shape[1] < 0 || *ids != *total) {
      reader.Fail(start, "iota replica groups: the group shape does not match the device list");
    }
    return groups;
  }
  reader.Expect(TokenKind::kLbrace, "'{' or '[' starting replica groups");
  if (reader.Accept(TokenKind::kRbrace)) return groups;
  int64_t total = 0;
  do {
    groups.groups.push_back(reader.ExpectIntList());
    total += static_cast<int64_t>(groups.groups.back().size());
    if (total > kMaxDevices) reader.Fail(reader.Peek(), "too many replica group members");
  } while (reader.Accept(TokenKind::kComma));
  reader.Expect(TokenKind::kRbrace, "'}' closing replica groups");
  return groups;
}

SourceTargetPairs ParseSourceTargetPairs(TokenReader& reader) {
  SourceTargetPairs pairs;
  reader.Expect(TokenKind::kLbrace);
  if (reader.Accept(TokenKind::kRbrace)) return pairs;
  do {
    const Token start = reader.Peek();
    std::vector<int64_t> pair = reader.ExpectIntList();
    if (pair.size() != 2) reader.Fail(start, "a source-target pair has two ids");
    pairs.emplace_back(pair[0], pair[1]);
    if (static_cast<int64_t>(pairs.size()) > kMaxDevices) reader.Fail(start, "too many pairs");
  } while (reader.Accept(TokenKind::kComma));
  reader.Expect(TokenKind::kRbrace);
  return pairs;
}

Metadata ParseMetadata(TokenReader& reader, std::string_view raw) {
  Metadata m;
  m.raw = raw;
  reader.Expect(TokenKind::kLbrace, "'{' starting metadata");
  while (!reader.Accept(TokenKind::kRbrace)) {
    Token key = reader.Expect(TokenKind::kName, "a metadata field");
    reader.Expect(TokenKind::kEqual);
    if (reader.PeekIs(TokenKind::kLbrace)) {
      reader.lexer().ScanRawValue();  // structured fields (profile_type={...}) are kept in raw
    } else {
      Token value = reader.Next();
      if (value.kind == TokenKind::kString) {
        if (key.text == "op_name") m.op_name = value.text;
        if (key.text == "op_type") m.op_type = value.text;
        if (key.text == "source_file") m.source_file = value.text;
      } else if (value.kind == TokenKind::kInt) {
        if (key.text == "source_line" && !ParseInt64(value.text, m.source_line)) {
          reader.Fail(value, "source_line out of range");
        }
        if (key.text == "stack_frame_id" && !ParseInt64(value.text, m.stack_frame_id)) {
          reader.Fail(value, "stack_frame_id out of range");
        }
      } else if (value.kind != TokenKind::kName && value.kind != TokenKind::kNumber) {
        reader.FailExpected("a metadata value", value);
      }
    }
    reader.Accept(TokenKind::kComma);
  }
  return m;
}

std::vector<InputOutputAlias> ParseInputOutputAlias(TokenReader& reader) {
  std::vector<InputOutputAlias> aliases;
  reader.Expect(TokenKind::kLbrace);
  while (!reader.Accept(TokenKind::kRbrace)) {
    InputOutputAlias alias;
    alias.output_index = reader.ExpectIntList();
    reader.Expect(TokenKind::kColon);
    reader.Expect(TokenKind::kLparen);
    alias.parameter_number = reader.ExpectInt("a parameter number");
    reader.Expect(TokenKind::kComma);
    alias.parameter_index = reader.ExpectIntList();
    if (reader.Accept(TokenKind::kComma)) {
      alias.kind = reader.Expect(TokenKind::kName, "may-alias or must-alias").text;
    }
    reader.Expect(TokenKind::kRparen);
    aliases.push_back(std::move(alias));
    reader.Accept(TokenKind::kComma);
  }
  return aliases;
}

std::vector<Token> ParseComputationList(TokenReader& reader) {
  std::vector<Token> names;
  if (reader.Accept(TokenKind::kLbrace)) {
    if (reader.Accept(TokenKind::kRbrace)) return names;
    do {
      names.push_back(reader.ExpectIdentifier("a computation name"));
    } while (reader.Accept(TokenKind::kComma));
    reader.Expect(TokenKind::kRbrace);
    return names;
  }
  names.push_back(reader.ExpectIdentifier("a computation name"));
  return names;
}

namespace {

template <typename T, typename Fn>
std::optional<T> ParseWhole(std::string_view text, std::string* error, Fn fn) {
  Lexer lexer(text);
  TokenReader reader(lexer);
  try {
    T value = fn(reader);
    if (!reader.PeekIs(TokenKind::kEof)) reader.FailExpected("end of input", reader.Peek());
    return value;
  } catch (const ParseError& e) {
    if (error) *error = "col " + std::to_string(e.offset + 1) + ": " + e.message;
    return std::nullopt;
  }
}

}  // namespace

std::optional<Shape> ParseShape(std::string_view text, std::string* error) {
  return ParseWhole<Shape>(text, error, [](TokenReader& r) { return ParseShape(r, 0); });
}

std::optional<Sharding> ParseSharding(std::string_view text, std::string* error) {
  return ParseWhole<Sharding>(text, error, [](TokenReader& r) { return ParseSharding(r, 0); });
}

std::optional<ReplicaGroups> ParseReplicaGroups(std::string_view text, std::string* error) {
  return ParseWhole<ReplicaGroups>(text, error,
                                   [](TokenReader& r) { return ParseReplicaGroups(r); });
}

}  // namespace spmdsim::ir
