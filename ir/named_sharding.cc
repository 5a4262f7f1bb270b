#include "ir/named_sharding.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "ir/checked_math.h"
#include "ir/device_list.h"

namespace spmdsim::ir {
namespace {

struct MeshAxis {
  std::string name;
  int64_t size = 1;
};

// axis_ref ::= axis_name [':' '(' pre ')' size]: the sub-axis of `size` devices inside `axis`,
// after the `pre` major ones (the axis seen as [pre, size, rest]).
struct AxisRef {
  size_t axis = 0;
  int64_t pre = 1;
  int64_t size = 0;  // the whole axis when not a sub-axis
  Token at;
};

class NamedShardingParser {
 public:
  explicit NamedShardingParser(TokenReader& reader) : reader_(reader) {}

  void Parse(Sharding& s) {
    const Token keyword = reader_.Next();
    if (keyword.text == "maximal_mesh") {
      // maximal_mesh ::= 'maximal_mesh' '[' 'device_id' '=' int ']'
      reader_.Expect(TokenKind::kLsquare);
      reader_.ExpectName("device_id");
      reader_.Expect(TokenKind::kEqual);
      const Token id = reader_.Peek();
      s.kind = Sharding::Kind::kMaximal;
      s.maximal_device = reader_.ExpectInt("a device id");
      if (s.maximal_device < 0) reader_.Fail(id, "expected a device id (0 or more)");
      reader_.Expect(TokenKind::kRsquare);
      ParseTrailingMetadata(s);
      return;
    }
    ParseMesh();
    if (!reader_.Accept(TokenKind::kComma)) {  // '{mesh[...]}' alone: replicated
      s.kind = Sharding::Kind::kReplicated;
      return;
    }
    if (reader_.PeekIsName("replicated") || reader_.PeekIsName("manual")) {
      s.kind =
          reader_.Next().text == "manual" ? Sharding::Kind::kManual : Sharding::Kind::kReplicated;
      ParseTrailingMetadata(s);
      return;
    }
    if (reader_.PeekIsName("unreduced")) {  // over every axis: 'unreduced' ['=' (max|min)]
      reader_.Next();
      if (reader_.Accept(TokenKind::kEqual)) reader_.Expect(TokenKind::kName, "max or min");
      if (reader_.PeekIs(TokenKind::kLbrace)) {
        unreduced_ = ParseAxisRefList();
        Build(s);
      } else {
        s.kind = Sharding::Kind::kUnreduced;
      }
      ParseTrailingMetadata(s);
      return;
    }
    if (reader_.PeekIsName("metadata")) {
      s.kind = Sharding::Kind::kReplicated;
      ParseTrailingMetadata(s, /*comma_consumed=*/true);
      return;
    }
    // '[' dim_sharding (',' dim_sharding)* ']'   dim_sharding ::= '{' [axis_ref (',' axis_ref)*]
    //                                                               [',' '?' | '?'] '}'
    reader_.Expect(TokenKind::kLsquare, "'[' starting the dimension shardings");
    if (!reader_.Accept(TokenKind::kRsquare)) {
      do {
        dims_.push_back(ParseAxisRefList(/*allow_open=*/true));
      } while (reader_.Accept(TokenKind::kComma));
      reader_.Expect(TokenKind::kRsquare, "']' closing the dimension shardings");
    }
    // (',' ('replicated' | 'unreduced' | 'manual') '=' ['max'|'min'] '{' axis_refs '}')*
    //   [',' 'metadata' '=' ...]
    while (reader_.Accept(TokenKind::kComma)) {
      const Token key = reader_.Expect(TokenKind::kName, "replicated=, unreduced=, manual=");
      if (key.text == "metadata") {
        ParseTrailingMetadata(s, /*comma_consumed=*/true);
        break;
      }
      reader_.Expect(TokenKind::kEqual);
      if (reader_.PeekIs(TokenKind::kName)) reader_.Next();  // unreduced=max / min
      std::vector<AxisRef> refs = ParseAxisRefList();
      if (key.text == "replicated") {
        // Explicitly replicated axes replicate as unused ones do.
      } else if (key.text == "unreduced") {
        unreduced_ = std::move(refs);
      } else if (key.text == "manual") {
        manual_ = std::move(refs);
      } else {
        reader_.Fail(key, "unknown named-sharding field '" + std::string(key.text) + "'");
      }
    }
    Build(s);
  }

 private:
  // mesh ::= 'mesh' '[' [axis '=' int (',' axis '=' int)*] ']' [',' 'device_ids' '=' devices]
  void ParseMesh() {
    reader_.Expect(TokenKind::kLsquare, "'[' after 'mesh'");
    int64_t total = 1;
    if (!reader_.Accept(TokenKind::kRsquare)) {
      do {
        const Token name = reader_.Next();
        if (name.kind != TokenKind::kString && name.kind != TokenKind::kName) {
          reader_.FailExpected("a mesh axis name", name);
        }
        reader_.Expect(TokenKind::kEqual);
        const Token size_token = reader_.Peek();
        const int64_t size = reader_.ExpectInt("a mesh axis size");
        const auto product = CheckedMul(total, size);
        if (size <= 0 || !product || *product > kMaxDevices) {
          reader_.Fail(size_token, "bad mesh axis size");
        }
        total = *product;
        for (const MeshAxis& axis : axes_) {
          if (axis.name == name.text) reader_.Fail(name, "mesh axis named twice");
        }
        axes_.push_back({std::string(name.text), size});
      } while (reader_.Accept(TokenKind::kComma));
      reader_.Expect(TokenKind::kRsquare, "']' closing the mesh");
    }
    device_count_ = total;
    // device_ids ::= '(' ( '[' dims ']' ['T' '(' perm ')'] | int (',' int)* ) ')'
    if (reader_.PeekIs(TokenKind::kComma) && reader_.lexer().CharAfterPeek() == 'd') {
      reader_.Next();
      const Token key = reader_.Peek();
      reader_.ExpectName("device_ids");
      explicit_device_ids_ = true;
      reader_.Expect(TokenKind::kEqual);
      reader_.Expect(TokenKind::kLparen);
      if (reader_.PeekIs(TokenKind::kLsquare)) {
        IotaList iota;
        iota.reshape_dims = reader_.ExpectIntList(TokenKind::kLsquare, TokenKind::kRsquare);
        if (reader_.PeekIsName("T")) {
          reader_.Next();
          iota.transpose_perm = reader_.ExpectIntList(TokenKind::kLparen, TokenKind::kRparen);
        }
        const auto size = IotaSize(iota);
        if (!size || *size != device_count_) reader_.Fail(key, "device_ids do not match the mesh");
        device_ids_ = *ExpandIota(iota);
        reader_.Expect(TokenKind::kRparen);
      } else {
        do {
          device_ids_.push_back(reader_.ExpectInt("a device id"));
          if (static_cast<int64_t>(device_ids_.size()) > device_count_) break;
        } while (reader_.Accept(TokenKind::kComma));
        reader_.Expect(TokenKind::kRparen);
        if (static_cast<int64_t>(device_ids_.size()) != device_count_) {
          reader_.Fail(key, "device_ids lists " + std::to_string(device_ids_.size()) +
                                " devices, the mesh has " + std::to_string(device_count_));
        }
      }
    } else {
      device_ids_.resize(static_cast<size_t>(device_count_));
      std::iota(device_ids_.begin(), device_ids_.end(), int64_t{0});
    }
  }

  // '{' [axis_ref (',' axis_ref)*] [[','] '?'] '}'
  std::vector<AxisRef> ParseAxisRefList(bool allow_open = false) {
    std::vector<AxisRef> refs;
    reader_.Expect(TokenKind::kLbrace, "'{'");
    while (!reader_.Accept(TokenKind::kRbrace)) {
      if (!refs.empty() || open_seen_) reader_.Accept(TokenKind::kComma);
      if (allow_open && reader_.Accept(TokenKind::kQuestion)) {
        reader_.Expect(TokenKind::kRbrace, "'}' after '?' (an open dimension ends its list)");
        return refs;
      }
      refs.push_back(ParseAxisRef());
      if (refs.size() > axes_.size() * 64) reader_.Fail(refs.back().at, "too many axis refs");
      if (!reader_.PeekIs(TokenKind::kComma) && !reader_.PeekIs(TokenKind::kRbrace)) {
        reader_.FailExpected("',' or '}'", reader_.Peek());
      }
    }
    return refs;
  }

  AxisRef ParseAxisRef() {
    AxisRef ref;
    ref.at = reader_.Next();
    if (ref.at.kind != TokenKind::kString && ref.at.kind != TokenKind::kName &&
        ref.at.kind != TokenKind::kInt) {
      reader_.FailExpected("a mesh axis name", ref.at);
    }
    ref.axis = axes_.size();
    for (size_t i = 0; i < axes_.size(); ++i) {
      if (axes_[i].name == ref.at.text) ref.axis = i;
    }
    if (ref.axis == axes_.size()) {
      reader_.Fail(ref.at, "'" + std::string(ref.at.text) + "' is not an axis of the mesh");
    }
    const int64_t axis_size = axes_[ref.axis].size;
    ref.size = axis_size;
    if (reader_.Accept(TokenKind::kColon)) {
      reader_.Expect(TokenKind::kLparen);
      ref.pre = reader_.ExpectInt("a sub-axis pre-size");
      reader_.Expect(TokenKind::kRparen);
      ref.size = reader_.ExpectInt("a sub-axis size");
      const auto span = CheckedMul(ref.pre, ref.size);
      if (ref.pre < 1 || ref.size < 1 || !span || axis_size % *span != 0) {
        reader_.Fail(ref.at, "sub-axis (" + std::to_string(ref.pre) + ")" +
                                 std::to_string(ref.size) + " does not divide axis '" +
                                 axes_[ref.axis].name + "' of size " + std::to_string(axis_size));
      }
    }
    return ref;
  }

  void ParseTrailingMetadata(Sharding& s, bool comma_consumed = false) {
    if (!comma_consumed) {
      if (!reader_.Accept(TokenKind::kComma)) return;
      reader_.ExpectName("metadata");
    }
    reader_.Expect(TokenKind::kEqual);
    const std::string_view raw = reader_.lexer().ScanRawValue();
    if (raw.empty() || raw.front() != '{') reader_.FailExpected("'{'", reader_.Peek());
    s.metadata = "metadata=" + std::string(raw);
  }

  // The tile assignment: every axis is split at the boundaries its sub-axes name, the mesh's
  // device array is seen with those factors as dims, and transposed to (dimension factors in
  // order, manual factors, unreduced factors, the unused factors in mesh order).
  void Build(Sharding& s) {
    // Split points of each axis, as strides from the major end: pre and pre*size.
    std::vector<std::set<int64_t>> cuts(axes_.size());
    const auto all_refs = [&](auto&& fn) {
      for (const auto& dim : dims_)
        for (const AxisRef& r : dim) fn(r);
      for (const AxisRef& r : manual_) fn(r);
      for (const AxisRef& r : unreduced_) fn(r);
    };
    all_refs([&](const AxisRef& r) {
      cuts[r.axis].insert(r.pre);
      cuts[r.axis].insert(r.pre * r.size);
    });
    // Factors: (axis, from, to) in pre-size units, major to minor; the device array's dims.
    struct Factor {
      size_t axis;
      int64_t from, to;  // the factor covers pre-sizes [from, to): size to / from
      bool used = false;
    };
    std::vector<Factor> factors;
    for (size_t a = 0; a < axes_.size(); ++a) {
      cuts[a].insert(1);
      cuts[a].insert(axes_[a].size);
      int64_t from = 1;
      for (int64_t cut : cuts[a]) {
        if (cut == 1) continue;
        if (cut % from != 0)
          reader_.Fail(reader_.Peek(), "sub-axes of '" + axes_[a].name + "' do not nest");
        factors.push_back({a, from, cut});
        from = cut;
      }
    }
    const auto factors_of = [&](const AxisRef& r) {
      std::vector<size_t> out;
      for (size_t f = 0; f < factors.size(); ++f) {
        if (factors[f].axis == r.axis && factors[f].from >= r.pre &&
            factors[f].to <= r.pre * r.size) {
          if (factors[f].used) reader_.Fail(r.at, "mesh axis used twice in one sharding");
          factors[f].used = true;
          out.push_back(f);
        }
      }
      return out;
    };
    std::vector<size_t> order;
    s.tile_dims.clear();
    const auto add_group = [&](const std::vector<AxisRef>& refs) {
      int64_t count = 1;
      for (const AxisRef& r : refs) {
        for (size_t f : factors_of(r)) {
          order.push_back(f);
          count *= factors[f].to / factors[f].from;
        }
      }
      s.tile_dims.push_back(count);
    };
    for (const auto& dim : dims_) add_group(dim);
    if (!manual_.empty()) {
      add_group(manual_);
      s.last_tile_dims.push_back(SubgroupType::kManual);
    }
    if (!unreduced_.empty()) {
      add_group(unreduced_);
      s.last_tile_dims.push_back(SubgroupType::kUnreduced);
    }
    int64_t replicated = 1;
    for (size_t f = 0; f < factors.size(); ++f) {
      if (!factors[f].used) {
        order.push_back(f);
        replicated *= factors[f].to / factors[f].from;
      }
    }
    if (replicated > 1) {
      s.tile_dims.push_back(replicated);
      if (s.last_tile_dims.empty()) {
        s.last_tile_dim_replicate = true;
      } else {
        s.last_tile_dims.push_back(SubgroupType::kReplicated);
      }
    }
    int64_t split = 1;
    for (const auto& dim : dims_) {
      for (const AxisRef& r : dim) split *= r.size;
    }
    if (split == 1 && s.last_tile_dims.empty()) {  // nothing split: every device holds it all
      s.kind = Sharding::Kind::kReplicated;
      s.tile_dims.clear();
      s.last_tile_dim_replicate = false;
      return;
    }
    s.kind = Sharding::Kind::kTiled;
    // Device array dims in factor order: within an axis a factor [from, to) has size to/from,
    // the axis being [major ... minor] with pre-size growing towards the minor end.
    std::vector<int64_t> array_dims;
    for (const Factor& f : factors) array_dims.push_back(f.to / f.from);
    if (!explicit_device_ids_) {
      // The mesh's devices are iota: the tile assignment is iota reshaped to the factors and
      // transposed to `order`, which the iota form says without listing devices (a sharding
      // over a pod of thousands of chips on every instruction stays small).
      if (array_dims.size() > kMaxIotaRank) reader_.Fail(reader_.Peek(), "too many mesh factors");
      s.uses_iota = true;
      s.iota.reshape_dims = array_dims;
      s.iota.transpose_perm.assign(order.begin(), order.end());
      return;
    }
    // Row-major strides of the device array.
    std::vector<int64_t> strides(factors.size(), 1);
    for (size_t i = factors.size(); i-- > 1;) strides[i - 1] = strides[i] * array_dims[i];
    s.device_list.assign(static_cast<size_t>(device_count_), 0);
    std::vector<int64_t> index(order.size(), 0);
    for (int64_t n = 0; n < device_count_; ++n) {
      int64_t source = 0;
      for (size_t k = 0; k < order.size(); ++k) source += index[k] * strides[order[k]];
      s.device_list[static_cast<size_t>(n)] = device_ids_[static_cast<size_t>(source)];
      for (size_t k = order.size(); k-- > 0;) {  // odometer over the transposed dims
        if (++index[k] < array_dims[order[k]]) break;
        index[k] = 0;
      }
    }
  }

  TokenReader& reader_;
  std::vector<MeshAxis> axes_;
  int64_t device_count_ = 1;
  std::vector<int64_t> device_ids_;
  std::vector<std::vector<AxisRef>> dims_;
  std::vector<AxisRef> manual_;
  std::vector<AxisRef> unreduced_;
  bool open_seen_ = false;
  bool explicit_device_ids_ = false;
};

}  // namespace

void ParseNamedShardingBody(TokenReader& reader, Sharding& s) {
  Lexer& lexer = reader.lexer();
  const size_t start = reader.Peek().offset;
  NamedShardingParser(reader).Parse(s);
  const size_t end = reader.Peek().offset;  // the closing '}'
  std::string_view text = lexer.text().substr(start - lexer.base_offset(), end - start);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.remove_suffix(1);
  s.named = std::string(text);
}

}  // namespace spmdsim::ir
