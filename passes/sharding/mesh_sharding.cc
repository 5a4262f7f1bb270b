#include "passes/sharding/mesh_sharding.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>

#include "ir/checked_math.h"
#include "ir/device_count.h"
#include "ir/device_list.h"

namespace spmdsim::passes {

namespace {

std::optional<int64_t> ParseInt(std::string_view text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string Unescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c != '\\') out += c;
  }
  return out;
}

int64_t Product(const std::vector<int64_t>& values) {
  int64_t product = 1;
  for (int64_t v : values) product = ir::SaturatingMul(product, v);
  return product;
}

// `"data"=4, "model"=2` (the inside of #sdy.mesh<[...]>) -> names and sizes.
std::optional<DeviceMesh> ParseSdyMeshAxes(std::string_view body) {
  DeviceMesh mesh;
  while (true) {
    const size_t open = body.find('"');
    if (open == body.npos) break;
    const size_t close = body.find('"', open + 1);
    if (close == body.npos) return std::nullopt;
    const size_t eq = body.find('=', close);
    if (eq == body.npos) return std::nullopt;
    size_t end = eq + 1;
    while (end < body.size() && body[end] >= '0' && body[end] <= '9') ++end;
    const std::optional<int64_t> size = ParseInt(body.substr(eq + 1, end - eq - 1));
    if (!size || *size <= 0) return std::nullopt;
    mesh.names.emplace_back(body.substr(open + 1, close - open - 1));
    mesh.sizes.push_back(*size);
    body.remove_prefix(end);
  }
  if (mesh.sizes.empty()) return std::nullopt;
  return mesh;
}

// Mesh axes (size > 1) as "atoms" in device order: the row-major iota over the mesh.
// Consumes atoms from `atoms[pos...]` whose sizes multiply to exactly `size`.
bool TakeAtoms(const std::vector<int>& atoms, const DeviceMesh& mesh, size_t& pos, int64_t size,
               std::vector<int>& out) {
  int64_t product = 1;
  while (product < size) {
    if (pos >= atoms.size()) return false;
    product = ir::SaturatingMul(product, mesh.sizes[static_cast<size_t>(atoms[pos])]);
    out.push_back(atoms[pos++]);
  }
  return product == size;
}

}  // namespace

// ---- DeviceMesh ---------------------------------------------------------------------------------

int64_t DeviceMesh::DeviceCount() const { return Product(sizes); }

int64_t DeviceMesh::GroupSize(const std::vector<int>& axes) const {
  int64_t size = 1;
  for (int axis : axes) {
    if (axis >= 0 && static_cast<size_t>(axis) < sizes.size()) {
      size = ir::SaturatingMul(size, sizes[static_cast<size_t>(axis)]);
    }
  }
  return size;
}

std::vector<std::vector<int64_t>> DeviceMesh::Groups(const std::vector<int>& axes) const {
  const int64_t total = DeviceCount();
  if (total > ir::kMaxDevices) return {};
  std::vector<bool> in_group(sizes.size(), false);
  for (int axis : axes) {
    if (axis >= 0 && static_cast<size_t>(axis) < sizes.size()) {
      in_group[static_cast<size_t>(axis)] = true;
    }
  }
  std::map<std::vector<int64_t>, std::vector<int64_t>> by_key;
  for (int64_t device = 0; device < total; ++device) {
    std::vector<int64_t> key;
    int64_t rest = device;
    for (size_t axis = sizes.size(); axis-- > 0;) {
      const int64_t coord = rest % sizes[axis];
      rest /= sizes[axis];
      if (!in_group[axis]) key.push_back(coord);
    }
    by_key[key].push_back(device);
  }
  std::vector<std::vector<int64_t>> groups;
  for (auto& [key, group] : by_key) groups.push_back(std::move(group));
  std::sort(groups.begin(), groups.end());
  return groups;
}

std::string DeviceMesh::AxesName(const std::vector<int>& axes) const {
  std::string out;
  for (int axis : axes) {
    if (!out.empty()) out += ",";
    out += axis >= 0 && static_cast<size_t>(axis) < names.size() ? names[static_cast<size_t>(axis)]
                                                                 : std::to_string(axis);
  }
  return out.empty() ? "-" : out;
}

int DeviceMesh::AxisIndex(std::string_view name) const {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<int>(i);
  }
  return -1;
}

DeviceMesh ModuleMesh(const ir::HloModule& module) {
  const int64_t devices = ir::DeviceCount(module);
  for (const ir::Attribute& attr : module.attributes) {
    if (attr.name != "frontend_attributes") continue;
    const std::string text = Unescape(attr.value);
    const size_t start = text.find("#sdy.mesh<[");
    if (start == text.npos || text.find("#sdy.mesh<[", start + 1) != text.npos) break;
    const size_t end = text.find("]>", start);
    if (end == text.npos) break;
    std::optional<DeviceMesh> mesh =
        ParseSdyMeshAxes(std::string_view(text).substr(start + 11, end - start - 11));
    if (mesh && mesh->DeviceCount() == devices) return *mesh;
  }
  if (module.entry != nullptr) {
    for (const ir::HloInstruction* param : module.entry->parameters) {
      if (param == nullptr || !param->sharding()) continue;
      const ir::Sharding& s = *param->sharding();
      if (s.kind != ir::Sharding::Kind::kTiled || !s.uses_iota) continue;
      if (Product(s.iota.reshape_dims) != devices || s.iota.reshape_dims.size() < 2) continue;
      DeviceMesh mesh;
      for (size_t i = 0; i < s.iota.reshape_dims.size(); ++i) {
        mesh.names.push_back("axis" + std::to_string(i));
        mesh.sizes.push_back(s.iota.reshape_dims[i]);
      }
      return mesh;
    }
  }
  return DeviceMesh{{"axis0"}, {devices}};
}

// ---- ArraySharding ------------------------------------------------------------------------------

ArraySharding ArraySharding::Replicated(size_t rank) {
  ArraySharding s;
  s.dims.resize(rank);
  return s;
}

ArraySharding ArraySharding::Unknown() {
  ArraySharding s;
  s.kind = Kind::kUnknown;
  return s;
}

ArraySharding ArraySharding::Manual() {
  ArraySharding s;
  s.kind = Kind::kManual;
  return s;
}

bool ArraySharding::IsReplicated() const {
  if (kind != Kind::kTiled) return false;
  return std::all_of(dims.begin(), dims.end(), [](const auto& axes) { return axes.empty(); });
}

std::vector<int> ArraySharding::Axes() const {
  std::vector<int> out;
  for (const auto& axes : dims) out.insert(out.end(), axes.begin(), axes.end());
  return out;
}

int64_t ArraySharding::TilesAlong(size_t dim, const DeviceMesh& mesh) const {
  if (kind != Kind::kTiled || dim >= dims.size()) return 1;
  return mesh.GroupSize(dims[dim]);
}

int64_t ArraySharding::TileCount(const DeviceMesh& mesh) const {
  return kind == Kind::kTiled ? mesh.GroupSize(Axes()) : 1;
}

std::string ArraySharding::ToString(const DeviceMesh& mesh) const {
  if (kind == Kind::kManual) return "manual";
  if (kind == Kind::kUnknown) return "unknown";
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ", ";
    out += "{";
    for (size_t j = 0; j < dims[i].size(); ++j) {
      if (j > 0) out += ",";
      out += mesh.AxesName({dims[i][j]});
    }
    out += "}";
  }
  return out + "]";
}

ValueSharding ValueSharding::Replicated(const ir::Shape& shape) {
  if (!shape.IsTuple()) return {ArraySharding::Replicated(static_cast<size_t>(shape.rank())), {}};
  ValueSharding v;
  v.is_tuple = true;
  for (const ir::Shape& element : shape.tuple_shapes()) v.elements.push_back(Replicated(element));
  return v;
}

ValueSharding ValueSharding::All(const ir::Shape& shape, ArraySharding::Kind kind) {
  if (!shape.IsTuple()) {
    ArraySharding a = ArraySharding::Replicated(static_cast<size_t>(shape.rank()));
    a.kind = kind;
    if (kind != ArraySharding::Kind::kTiled) a.dims.clear();
    return {a, {}};
  }
  ValueSharding v;
  v.is_tuple = true;
  for (const ir::Shape& element : shape.tuple_shapes()) v.elements.push_back(All(element, kind));
  return v;
}

// ---- Conversions --------------------------------------------------------------------------------

ArraySharding FromHloSharding(const ir::Sharding& sharding, size_t rank, const DeviceMesh& mesh) {
  using K = ir::Sharding::Kind;
  switch (sharding.kind) {
    case K::kReplicated:
      return ArraySharding::Replicated(rank);
    case K::kManual:
      return ArraySharding::Manual();
    case K::kMaximal:
    case K::kUnknown:
    case K::kUnreduced:
    case K::kTuple:
      return ArraySharding::Unknown();
    case K::kTiled:
      break;
  }
  for (ir::SubgroupType type : sharding.last_tile_dims) {
    if (type == ir::SubgroupType::kManual) return ArraySharding::Manual();
    if (type != ir::SubgroupType::kReplicated) return ArraySharding::Unknown();
  }
  const int64_t devices = mesh.DeviceCount();
  if (Product(sharding.tile_dims) != devices || sharding.DataRank() != static_cast<int64_t>(rank)) {
    return ArraySharding::Unknown();
  }
  // The device order as reshape dims + permutation of an iota.
  std::vector<int64_t> reshape = sharding.iota.reshape_dims;
  std::vector<int64_t> perm = sharding.iota.transpose_perm;
  if (!sharding.uses_iota) {
    for (size_t i = 0; i < sharding.device_list.size(); ++i) {
      if (sharding.device_list[i] != static_cast<int64_t>(i)) return ArraySharding::Unknown();
    }
    reshape = {devices};
    perm.clear();
  }
  if (Product(reshape) != devices) return ArraySharding::Unknown();
  if (perm.empty()) {
    perm.resize(reshape.size());
    std::iota(perm.begin(), perm.end(), 0);
  }
  if (perm.size() != reshape.size()) return ArraySharding::Unknown();

  std::vector<int> atoms;  // mesh axes of size > 1, in device (row-major) order
  for (size_t axis = 0; axis < mesh.sizes.size(); ++axis) {
    if (mesh.sizes[axis] > 1) atoms.push_back(static_cast<int>(axis));
  }
  // Each reshape dim is a run of mesh axes.
  std::vector<std::vector<int>> runs(reshape.size());
  size_t pos = 0;
  for (size_t i = 0; i < reshape.size(); ++i) {
    if (!TakeAtoms(atoms, mesh, pos, reshape[i], runs[i])) return ArraySharding::Unknown();
  }
  // Transposed, then regrouped into tile dims.
  std::vector<int> order;
  for (int64_t p : perm) {
    if (p < 0 || static_cast<size_t>(p) >= runs.size()) return ArraySharding::Unknown();
    order.insert(order.end(), runs[static_cast<size_t>(p)].begin(),
                 runs[static_cast<size_t>(p)].end());
  }
  ArraySharding result = ArraySharding::Replicated(rank);
  pos = 0;
  for (size_t i = 0; i < sharding.tile_dims.size(); ++i) {
    std::vector<int> taken;
    if (!TakeAtoms(order, mesh, pos, sharding.tile_dims[i], taken)) return ArraySharding::Unknown();
    if (i < rank) result.dims[i] = std::move(taken);
  }
  return result;
}

ValueSharding FromHloSharding(const ir::Sharding& sharding, const ir::Shape& shape,
                              const DeviceMesh& mesh) {
  if (!shape.IsTuple()) {
    return {FromHloSharding(sharding, static_cast<size_t>(shape.rank()), mesh), {}};
  }
  ValueSharding v;
  v.is_tuple = true;
  const auto& shapes = shape.tuple_shapes();
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (sharding.kind == ir::Sharding::Kind::kTuple) {
      v.elements.push_back(i < sharding.tuple.size()
                               ? FromHloSharding(sharding.tuple[i], shapes[i], mesh)
                               : ValueSharding::All(shapes[i], ArraySharding::Kind::kUnknown));
    } else {
      v.elements.push_back(FromHloSharding(sharding, shapes[i], mesh));
    }
  }
  return v;
}

std::optional<std::vector<ArraySharding>> ParseSdyShardings(std::string_view escaped,
                                                            const DeviceMesh& mesh) {
  const std::string text = Unescape(escaped);
  size_t pos = text.find("#sdy.sharding");
  if (pos == text.npos) return std::nullopt;
  std::vector<ArraySharding> values;
  // Each value: @mesh_name, [ {dims}... ]
  while ((pos = text.find('@', pos)) != text.npos) {
    const size_t open = text.find('[', pos);
    if (open == text.npos) return std::nullopt;
    ArraySharding value = ArraySharding::Replicated(0);
    size_t i = open + 1;
    for (; i < text.size() && text[i] != ']'; ++i) {
      if (text[i] != '{') continue;
      const size_t close = text.find('}', i);
      if (close == text.npos) return std::nullopt;
      std::vector<int> axes;
      std::string_view inside = std::string_view(text).substr(i + 1, close - i - 1);
      while (!inside.empty()) {
        const size_t q1 = inside.find('"');
        if (q1 == inside.npos) break;
        const size_t q2 = inside.find('"', q1 + 1);
        if (q2 == inside.npos) return std::nullopt;
        const int axis = mesh.AxisIndex(inside.substr(q1 + 1, q2 - q1 - 1));
        const bool sub_axis = q2 + 1 < inside.size() && inside[q2 + 1] == ':';
        if (axis < 0 || sub_axis) value.kind = ArraySharding::Kind::kUnknown;
        axes.push_back(axis);
        inside.remove_prefix(q2 + 1);
      }
      value.dims.push_back(std::move(axes));
      i = close;
    }
    if (i >= text.size()) return std::nullopt;
    if (value.kind == ArraySharding::Kind::kUnknown) value.dims.clear();
    values.push_back(std::move(value));
    pos = i;
  }
  return values;
}

ir::Shape ShardShape(const ir::Shape& shape, const ArraySharding& sharding,
                     const DeviceMesh& mesh) {
  if (!shape.IsArray() || !sharding.IsTiled()) return shape;
  ir::Shape result = shape;
  auto& dims = result.mutable_dims();
  for (size_t i = 0; i < dims.size(); ++i) {
    dims[i] = ir::CeilDiv(dims[i], sharding.TilesAlong(i, mesh));
  }
  return result;
}

}  // namespace spmdsim::passes
