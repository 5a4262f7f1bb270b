// HLO shapes: arrays with dims, bounded-dynamic dims and layouts; tuples; token; opaque.
//
//   f32[128,1024]{1,0}     array, row-major layout
//   bf16[<=10,4]{1,0}       first dim dynamic with bound 10
//   s4[64]{0:E(4)}          4-bit elements, packed
//   f32[8,128]{1,0:T(8,128)S(1)}   tiled layout in memory space 1
//   (f32[2], u32[])         tuple
//   token[]
//
// Sizes are computed once by the parser with checked arithmetic; a shape whose byte size does not
// fit in int64 is rejected there, so the accessors below never overflow.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/primitive_type.h"

namespace spmdsim::ir {

// One tile of a tiled layout, e.g. T(8,128). kCombinedDim stands for '*'.
struct Tile {
  static constexpr int64_t kCombinedDim = INT64_MIN;
  std::vector<int64_t> dims;
  bool operator==(const Tile&) const = default;
};

struct Layout {
  std::vector<int64_t> minor_to_major;
  std::vector<Tile> tiles;
  int64_t element_size_in_bits = 0;  // E(n); 0 = the type's natural width
  int64_t memory_space = 0;          // S(n); 0 = device memory
  // Layout fields spmdsim does not interpret (D(...), L(...), #(...), SC(...), P(...), M(...)),
  // kept verbatim so the printer writes them back.
  std::string other_fields;
  bool operator==(const Layout&) const = default;
};

class Shape {
 public:
  Shape() = default;
  static Shape Array(PrimitiveType type, std::vector<int64_t> dims);
  static Shape Tuple(std::vector<Shape> elements);
  static Shape Token();

  PrimitiveType element_type() const { return element_type_; }
  bool IsTuple() const { return element_type_ == PrimitiveType::kTuple; }
  bool IsArray() const { return IsArrayType(element_type_); }
  bool IsToken() const { return element_type_ == PrimitiveType::kToken; }

  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  bool IsDynamicDim(size_t i) const { return i < dynamic_.size() && dynamic_[i]; }
  bool HasLayout() const { return has_layout_; }
  // The layout; an empty one when HasLayout() is false.
  const Layout& layout() const { return layout_ ? *layout_ : EmptyLayout(); }
  const std::vector<Shape>& tuple_shapes() const { return tuple_; }

  // Elements of an array (bounds for dynamic dims); 0 for tuple/token.
  int64_t ElementCount() const;
  // Elements the buffer holds: ElementCount() padded to whole tiles of a tiled layout
  // ({1,0:T(8,128)}: each covered dim rounded up to its tile dim), as XLA:TPU allocates them.
  int64_t AllocatedElementCount() const;
  // Bytes of this buffer alone, as XLA's buffer assignment sizes it: array data (padded to whole
  // tiles, packed per the layout's E(n)), or for a tuple its table of 8-byte pointers.
  int64_t ByteSize() const;
  // Sum of ByteSize() over all array leaves (a tuple's contents, not its pointer table).
  int64_t LeafBytes() const;
  // The data itself, over all array leaves: no tile padding (what a collective moves).
  int64_t LeafDataBytes() const;

  // The subshape at a tuple index path, or nullptr when the path does not exist.
  const Shape* Subshape(const std::vector<int64_t>& index) const;

  // "f32[128,1024]{1,0}". With print_layout=false the "{...}" part is left out.
  std::string ToString(bool print_layout = true) const;

  bool operator==(const Shape& other) const;

  // Mutators used by the parser.
  void set_element_type(PrimitiveType type) { element_type_ = type; }
  std::vector<int64_t>& mutable_dims() { return dims_; }
  std::vector<bool>& mutable_dynamic() { return dynamic_; }
  std::vector<Shape>& mutable_tuple_shapes() { return tuple_; }
  void set_layout(Layout layout) { set_layout(std::make_shared<const Layout>(std::move(layout))); }
  // Shares one immutable layout between shapes (the parser gives every "{1,0}" the same one).
  void set_layout(std::shared_ptr<const Layout> layout) {
    layout_ = std::move(layout);
    has_layout_ = layout_ != nullptr;
  }

 private:
  static const Layout& EmptyLayout();

  PrimitiveType element_type_ = PrimitiveType::kTuple;
  bool has_layout_ = false;
  std::vector<int64_t> dims_;
  std::vector<bool> dynamic_;  // empty when no dim is dynamic
  // Layouts are few and shared: a pointer keeps Shape (one per instruction) small.
  std::shared_ptr<const Layout> layout_;
  std::vector<Shape> tuple_;
};

// A handle to an immutable Shape owned elsewhere: an instruction's shape points into its module's
// pool of distinct shapes (HloModule::InternShape), since most instructions share a handful of
// shapes and a Shape with its vectors costs well over 100 bytes. Reads like a `const Shape&`: the
// const accessors are forwarded, and it converts to `const Shape&` for functions taking one.
class ShapeRef {
 public:
  ShapeRef() = default;  // the empty tuple shape "()", as Shape() is
  explicit ShapeRef(const Shape* shape) : shape_(shape) {}

  const Shape& get() const { return *shape_; }
  operator const Shape&() const { return *shape_; }  // NOLINT: implicit by design

  PrimitiveType element_type() const { return shape_->element_type(); }
  bool IsTuple() const { return shape_->IsTuple(); }
  bool IsArray() const { return shape_->IsArray(); }
  bool IsToken() const { return shape_->IsToken(); }
  const std::vector<int64_t>& dims() const { return shape_->dims(); }
  int64_t rank() const { return shape_->rank(); }
  bool IsDynamicDim(size_t i) const { return shape_->IsDynamicDim(i); }
  bool HasLayout() const { return shape_->HasLayout(); }
  const Layout& layout() const { return shape_->layout(); }
  const std::vector<Shape>& tuple_shapes() const { return shape_->tuple_shapes(); }
  int64_t ElementCount() const { return shape_->ElementCount(); }
  int64_t ByteSize() const { return shape_->ByteSize(); }
  int64_t LeafBytes() const { return shape_->LeafBytes(); }
  int64_t LeafDataBytes() const { return shape_->LeafDataBytes(); }
  const Shape* Subshape(const std::vector<int64_t>& index) const { return shape_->Subshape(index); }
  std::string ToString(bool print_layout = true) const { return shape_->ToString(print_layout); }

  bool operator==(const Shape& other) const { return *shape_ == other; }
  bool operator==(ShapeRef other) const {
    return shape_ == other.shape_ || *shape_ == *other.shape_;
  }

 private:
  static const Shape* EmptyShape();
  const Shape* shape_ = EmptyShape();
};

// Bytes of an array shape with the given element count and type and optional packing
// (E(n) from the layout). Returns -1 on overflow.
int64_t ArrayBytes(int64_t elements, PrimitiveType type, int64_t element_size_in_bits);

// Bytes of a tuple's pointer table as XLA sizes it on CPU and GPU.
inline constexpr int64_t kPointerSize = 8;

}  // namespace spmdsim::ir
