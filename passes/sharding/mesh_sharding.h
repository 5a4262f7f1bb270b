// Shardings in terms of a device mesh: for each array dimension, the mesh axes that split it.
// This is the form the SPMD partitioner reasons in (Shardy writes it directly:
// `#sdy.sharding<@mesh, [{"data"}, {}]>`); XLA's HLO sharding (`{devices=[4,1,2]<=[8]
// last_tile_dim_replicate}`) is converted to it by matching the tile assignment against the mesh.
//
//   DeviceMesh   ["data"=4, "model"=2]: devices are row-major iota over the axes, so device
//                (i, j) = 2i + j, and the 'data' groups are {0,2,4,6} and {1,3,5,7}.
//   ArraySharding [{data}, {}, {model}]: dim 0 split over 'data', dim 2 over 'model', dim 1
//                whole; an array with every list empty is replicated.
//
// Conversion handles the iota tile assignments XLA and Shardy write (`[t...]<=[r...]T(p...)`),
// explicit device lists equal to iota(N), `last_tile_dim_replicate` and `last_tile_dims`. A tile
// assignment that would need a mesh axis split into sub-axes, or a device order no mesh axes
// produce, converts to kUnknown: callers treat that as "cannot decide", never as replicated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/hlo.h"

namespace spmdsim::passes {

// Named mesh axes, major to minor.
struct DeviceMesh {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;

  int64_t DeviceCount() const;
  // Devices per group of devices that differ only along `axes`.
  int64_t GroupSize(const std::vector<int>& axes) const;
  // The groups themselves, each sorted; empty when the mesh is over kMaxDevices.
  std::vector<std::vector<int64_t>> Groups(const std::vector<int>& axes) const;
  // "data", "data,model"; "-" for no axis.
  std::string AxesName(const std::vector<int>& axes) const;
  // The index of a named axis, or -1.
  int AxisIndex(std::string_view name) const;
};

// The mesh a module's shardings refer to: Shardy's `xla.sdy.meshes` header attribute when it holds
// exactly one mesh; else the reshape dims of the first iota tile assignment of an entry parameter
// whose product is the device count (axes named "axis0", ...); else one axis of num_partitions.
DeviceMesh ModuleMesh(const ir::HloModule& module);

struct ArraySharding {
  enum class Kind : uint8_t {
    kTiled,    // `dims` says how (all empty: replicated)
    kManual,   // inside shard_map: per-device values the partitioner leaves alone
    kUnknown,  // could not be decided
  };
  Kind kind = Kind::kTiled;
  std::vector<std::vector<int>> dims;  // mesh axes per dimension, major to minor

  static ArraySharding Replicated(size_t rank);
  static ArraySharding Unknown();
  static ArraySharding Manual();
  bool IsTiled() const { return kind == Kind::kTiled; }
  bool IsReplicated() const;
  // Every axis used, in dimension order.
  std::vector<int> Axes() const;
  // Product of the sizes of the axes splitting `dim` (1 when whole).
  int64_t TilesAlong(size_t dim, const DeviceMesh& mesh) const;
  int64_t TileCount(const DeviceMesh& mesh) const;
  // Shardy's spelling: `[{data}, {}, {model}]`, `manual`, `unknown`.
  std::string ToString(const DeviceMesh& mesh) const;
  bool operator==(const ArraySharding&) const = default;
};

// A value: one ArraySharding, or one per element of a tuple.
struct ValueSharding {
  ArraySharding array;
  std::vector<ValueSharding> elements;
  bool is_tuple = false;

  // Replicated for every array leaf of `shape`.
  static ValueSharding Replicated(const ir::Shape& shape);
  // `kind` for every array leaf of `shape`.
  static ValueSharding All(const ir::Shape& shape, ArraySharding::Kind kind);
  bool operator==(const ValueSharding&) const = default;
};

// XLA's HLO sharding of an array of rank `rank`, in mesh terms.
ArraySharding FromHloSharding(const ir::Sharding& sharding, size_t rank, const DeviceMesh& mesh);
// Same for a whole value; a tuple sharding applies element by element.
ValueSharding FromHloSharding(const ir::Sharding& sharding, const ir::Shape& shape,
                              const DeviceMesh& mesh);

// Shardy's text for one or more values, as in frontend attributes (backslash-escaped quotes
// allowed): `#sdy.sharding<@mesh, [{}, {"model"}]>` or
// `#sdy.sharding_per_value<[<@mesh, [{"data"}, {}]>, <@mesh, [{}]>]>`. One ArraySharding per value;
// nullopt when the text is not in that form. Sub-axes (`"x":(1)2`) convert to kUnknown.
std::optional<std::vector<ArraySharding>> ParseSdyShardings(std::string_view text,
                                                            const DeviceMesh& mesh);

// The largest piece of `shape` one device holds: ceil(dim / tiles) per dimension.
ir::Shape ShardShape(const ir::Shape& shape, const ArraySharding& sharding, const DeviceMesh& mesh);

}  // namespace spmdsim::passes
