#include "ir/shape.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/checked_math.h"

namespace spmdsim::ir {

Shape Shape::Array(PrimitiveType type, std::vector<int64_t> dims) {
  Shape shape;
  shape.element_type_ = type;
  shape.dims_ = std::move(dims);
  return shape;
}

Shape Shape::Tuple(std::vector<Shape> elements) {
  Shape shape;
  shape.element_type_ = PrimitiveType::kTuple;
  shape.tuple_ = std::move(elements);
  return shape;
}

Shape Shape::Token() {
  Shape shape;
  shape.element_type_ = PrimitiveType::kToken;
  return shape;
}

const Shape* ShapeRef::EmptyShape() {
  static const Shape empty;
  return &empty;
}

const Layout& Shape::EmptyLayout() {
  static const Layout empty;
  return empty;
}

int64_t Shape::ElementCount() const {
  if (!IsArray()) return 0;
  int64_t count = 1;
  for (int64_t dim : dims_) count = SaturatingMul(count, dim < 0 ? 0 : dim);
  return count;
}

int64_t Shape::AllocatedElementCount() const {
  const Layout& l = layout();
  if (!IsArray() || l.tiles.empty() || l.minor_to_major.size() != dims_.size()) {
    return ElementCount();
  }
  // The first tile covers the minor-most dims of the physical (major-to-minor) shape, a missing
  // dim counting as 1 (a scalar's T(128) is 128 elements); each covered dim is padded up to a
  // multiple of its tile dim. Later tiles ("(2,1)") subdivide that tile without padding it.
  const std::vector<int64_t>& tile = l.tiles.front().dims;
  const size_t rank = dims_.size();
  int64_t count = 1;
  for (size_t i = 0; i < std::max(rank, tile.size()); ++i) {
    // i-th dim from the minor end: the tile's last dim and the physically minor-most dim first.
    int64_t dim = 1;
    if (i < rank) {
      const int64_t logical = l.minor_to_major[i];
      dim = logical >= 0 && static_cast<size_t>(logical) < rank
                ? dims_[static_cast<size_t>(logical)]
                : 1;
      if (dim < 0) dim = 0;
    }
    if (i < tile.size()) {
      const int64_t t = tile[tile.size() - 1 - i];
      if (t > 0) dim = SaturatingMul(CeilDiv(dim, t), t);
    }
    count = SaturatingMul(count, dim);
  }
  return count;
}

int64_t ArrayBytes(int64_t elements, PrimitiveType type, int64_t element_size_in_bits) {
  if (element_size_in_bits > 0 && element_size_in_bits < 8) {
    auto bits = CheckedMul(elements, element_size_in_bits);
    return bits ? CeilDiv(*bits, 8) : -1;
  }
  auto bytes = CheckedMul(elements, PrimitiveTypeByteWidth(type));
  return bytes ? *bytes : -1;
}

int64_t Shape::ByteSize() const {
  if (IsTuple()) return kPointerSize * static_cast<int64_t>(tuple_.size());
  if (!IsArray()) return 0;
  int64_t bytes = ArrayBytes(AllocatedElementCount(), element_type_, layout().element_size_in_bits);
  // Dynamic arrays carry one s32 of size metadata per dimension after the data (CPU/GPU).
  if (!dynamic_.empty()) bytes = SaturatingAdd(bytes, 4 * rank());
  return bytes;
}

int64_t Shape::LeafBytes() const {
  if (!IsTuple()) return ByteSize();
  int64_t total = 0;
  for (const Shape& element : tuple_) total = SaturatingAdd(total, element.LeafBytes());
  return total;
}

int64_t Shape::LeafDataBytes() const {
  if (IsArray()) return ArrayBytes(ElementCount(), element_type_, layout().element_size_in_bits);
  int64_t total = 0;
  for (const Shape& element : tuple_) total = SaturatingAdd(total, element.LeafDataBytes());
  return total;
}

const Shape* Shape::Subshape(const std::vector<int64_t>& index) const {
  const Shape* shape = this;
  for (int64_t i : index) {
    if (!shape->IsTuple() || i < 0 || i >= static_cast<int64_t>(shape->tuple_.size())) {
      return nullptr;
    }
    shape = &shape->tuple_[static_cast<size_t>(i)];
  }
  return shape;
}

namespace {

void AppendLayout(const Layout& layout, std::string& out) {
  out += '{';
  for (size_t i = 0; i < layout.minor_to_major.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(layout.minor_to_major[i]);
  }
  const bool has_fields = !layout.tiles.empty() || layout.element_size_in_bits != 0 ||
                          layout.memory_space != 0 || !layout.other_fields.empty();
  if (has_fields) {
    out += ':';
    for (size_t t = 0; t < layout.tiles.size(); ++t) {
      const Tile& tile = layout.tiles[t];
      out += t == 0 ? "T(" : "(";
      for (size_t i = 0; i < tile.dims.size(); ++i) {
        if (i) out += ',';
        if (tile.dims[i] == Tile::kCombinedDim) {
          out += '*';
        } else {
          out += std::to_string(tile.dims[i]);
        }
      }
      out += ')';
    }
    out += layout.other_fields;
    if (layout.element_size_in_bits != 0) out += fmt::format("E({})", layout.element_size_in_bits);
    if (layout.memory_space != 0) out += fmt::format("S({})", layout.memory_space);
  }
  out += '}';
}

void AppendShape(const Shape& shape, bool print_layout, std::string& out) {
  if (shape.IsTuple()) {
    out += '(';
    for (size_t i = 0; i < shape.tuple_shapes().size(); ++i) {
      if (i) out += ", ";
      AppendShape(shape.tuple_shapes()[i], print_layout, out);
    }
    out += ')';
    return;
  }
  out += PrimitiveTypeName(shape.element_type());
  out += '[';
  for (size_t i = 0; i < shape.dims().size(); ++i) {
    if (i) out += ',';
    if (shape.IsDynamicDim(i)) {
      if (shape.dims()[i] < 0) {
        out += '?';
        continue;
      }
      out += "<=";
    }
    out += std::to_string(shape.dims()[i]);
  }
  out += ']';
  if (print_layout && shape.HasLayout()) AppendLayout(shape.layout(), out);
}

}  // namespace

std::string Shape::ToString(bool print_layout) const {
  std::string out;
  AppendShape(*this, print_layout, out);
  return out;
}

bool Shape::operator==(const Shape& other) const {
  const auto dynamic_dims = [](const Shape& s) {
    std::vector<bool> d = s.dynamic_;
    while (!d.empty() && !d.back()) d.pop_back();
    return d;
  };
  return element_type_ == other.element_type_ && dims_ == other.dims_ &&
         dynamic_dims(*this) == dynamic_dims(other) && has_layout_ == other.has_layout_ &&
         (!has_layout_ || layout() == other.layout()) && tuple_ == other.tuple_;
}

}  // namespace spmdsim::ir
