// HloSharding as XLA prints it, parsed into a structure that can say which part of an array each
// device holds.
//
//   {replicated}   {manual}   {maximal device=3}   {unknown shard_as 1}
//   {devices=[2,1,4]0,1,2,3,4,5,6,7 last_tile_dim_replicate}
//   {devices=[2,4]<=[4,2]T(1,0)}                 (iota tile assignment)
//   {devices=[2,2,2]<=[8] last_tile_dims={manual, replicated}}
//   {{replicated}, {devices=[8]<=[8]}}           (tuple)
//   {replicated metadata={op_name="..."}}
//   {mesh['data'=8], [{'data'}, {}]}           (named mesh: ir/named_sharding.h)
//
// Tile assignment dims beyond the array's rank are subgroup dims (replicated, manual, ...): they
// multiply the devices but not the tiles.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/device_list.h"
#include "ir/shape.h"

namespace spmdsim::ir {

enum class SubgroupType : uint8_t { kReplicated, kManual, kUnreduced, kMaximal };

struct Sharding {
  enum class Kind : uint8_t {
    kReplicated,
    kManual,
    kMaximal,
    kTiled,
    kTuple,
    kUnknown,
    kUnreduced
  };
  Kind kind = Kind::kReplicated;

  // kTiled: the tile assignment.
  std::vector<int64_t> tile_dims;
  std::vector<int64_t> device_list;  // explicit ids, or empty when iota is used
  bool uses_iota = false;
  IotaList iota;
  bool last_tile_dim_replicate = false;
  std::vector<SubgroupType> last_tile_dims;

  int64_t maximal_device = -1;  // kMaximal
  std::vector<Sharding> tuple;  // kTuple
  std::string metadata;         // "metadata={...}" kept verbatim (op_name of the annotation)
  std::string other;            // shard_as / shard_like and anything else, verbatim
  std::string named;            // a named-mesh sharding as written ("mesh[...], [...]"); the
                                // fields above hold its tile assignment (ir/named_sharding.h)

  bool IsTuple() const { return kind == Kind::kTuple; }
  // Dims of the tile assignment that split the data (without subgroup dims).
  int64_t DataRank() const;
  // Number of tiles the data is split into (1 unless tiled).
  int64_t TileCount() const;
  // The devices of the tile assignment in row-major order (expanding the iota form); empty unless
  // tiled. Bounded by kMaxDevices.
  std::vector<int64_t> Devices() const;
  // Number of distinct tiles along data dim `dim` (1 for dims not split).
  int64_t TilesAlong(size_t dim) const;

  // The largest per-device piece of `shape` (ceil(dim / tiles) per dim). Full shape when
  // replicated, manual or maximal (maximal: on its one device). Tuple shapes with tuple shardings
  // are handled element by element.
  Shape ShardShape(const Shape& shape) const;

  std::string ToString() const;
  bool operator==(const Sharding&) const = default;
};

}  // namespace spmdsim::ir
