#include "ir/sharding.h"

#include <fmt/format.h>

#include "ir/checked_math.h"

namespace spmdsim::ir {

int64_t Sharding::DataRank() const {
  if (kind != Kind::kTiled) return 0;
  int64_t subgroups = static_cast<int64_t>(last_tile_dims.size());
  if (last_tile_dim_replicate) subgroups = 1;
  return static_cast<int64_t>(tile_dims.size()) - subgroups;
}

int64_t Sharding::TileCount() const {
  if (kind != Kind::kTiled) return 1;
  int64_t count = 1;
  for (int64_t i = 0; i < DataRank(); ++i) {
    count = SaturatingMul(count, tile_dims[static_cast<size_t>(i)]);
  }
  return count;
}

int64_t Sharding::TilesAlong(size_t dim) const {
  if (kind != Kind::kTiled || static_cast<int64_t>(dim) >= DataRank()) return 1;
  return tile_dims[dim];
}

std::vector<int64_t> Sharding::Devices() const {
  if (kind != Kind::kTiled) return {};
  if (!uses_iota) return device_list;
  auto devices = ExpandIota(iota);
  return devices ? *devices : std::vector<int64_t>{};
}

Shape Sharding::ShardShape(const Shape& shape) const {
  if (shape.IsTuple()) {
    std::vector<Shape> elements;
    const auto& tuple_shapes = shape.tuple_shapes();
    for (size_t i = 0; i < tuple_shapes.size(); ++i) {
      if (kind == Kind::kTuple) {
        elements.push_back(i < tuple.size() ? tuple[i].ShardShape(tuple_shapes[i])
                                            : tuple_shapes[i]);
      } else {
        elements.push_back(ShardShape(tuple_shapes[i]));
      }
    }
    Shape result = Shape::Tuple(std::move(elements));
    return result;
  }
  if (kind != Kind::kTiled || !shape.IsArray()) return shape;
  Shape result = shape;
  auto& dims = result.mutable_dims();
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = CeilDiv(dims[i], TilesAlong(i));
  return result;
}

namespace {

std::string_view SubgroupName(SubgroupType type) {
  switch (type) {
    case SubgroupType::kReplicated:
      return "replicated";
    case SubgroupType::kManual:
      return "manual";
    case SubgroupType::kUnreduced:
      return "unreduced";
    case SubgroupType::kMaximal:
      return "maximal";
  }
  return "replicated";
}

std::string Join(const std::vector<int64_t>& values) {
  return fmt::format("{}", fmt::join(values, ","));
}

std::string Body(const Sharding& s) {
  std::string out;
  switch (s.kind) {
    case Sharding::Kind::kReplicated:
      out = "replicated";
      break;
    case Sharding::Kind::kManual:
      out = "manual";
      break;
    case Sharding::Kind::kUnknown:
      out = "unknown";
      break;
    case Sharding::Kind::kUnreduced:
      out = "unreduced";
      break;
    case Sharding::Kind::kMaximal:
      out = fmt::format("maximal device={}", s.maximal_device);
      break;
    case Sharding::Kind::kTuple:
      break;
    case Sharding::Kind::kTiled:
      out = fmt::format("devices=[{}]", Join(s.tile_dims));
      if (s.uses_iota) {
        out += fmt::format("<=[{}]", Join(s.iota.reshape_dims));
        if (!s.iota.transpose_perm.empty())
          out += fmt::format("T({})", Join(s.iota.transpose_perm));
      } else {
        out += Join(s.device_list);
      }
      if (s.last_tile_dim_replicate) out += " last_tile_dim_replicate";
      if (!s.last_tile_dims.empty()) {
        out += " last_tile_dims={";
        for (size_t i = 0; i < s.last_tile_dims.size(); ++i) {
          if (i) out += ", ";
          out += SubgroupName(s.last_tile_dims[i]);
        }
        out += "}";
      }
      break;
  }
  if (!s.other.empty()) out += " " + s.other;
  if (!s.metadata.empty()) out += " " + s.metadata;
  return out;
}

}  // namespace

std::string Sharding::ToString() const {
  if (!named.empty()) return "{" + named + "}";
  if (kind != Kind::kTuple) return "{" + Body(*this) + "}";
  std::string out = "{";
  for (size_t i = 0; i < tuple.size(); ++i) {
    if (i) out += ", ";
    out += tuple[i].ToString();
  }
  return out + "}";
}

}  // namespace spmdsim::ir
