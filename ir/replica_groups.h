// replica_groups and source_target_pairs attributes of collectives.
//
//   replica_groups={{0,1,2,3},{4,5,6,7}}      explicit list
//   replica_groups={}                         one group of every participant
//   replica_groups=[2,4]<=[8]                 iota: 2 groups of 4, devices iota(8)
//   replica_groups=[4,2]<=[2,4]T(1,0)         iota with a transpose
//   replica_groups=mesh['x'=4,'y'=2] {'x'}    mesh axes: devices that differ only along x
//   replica_groups=mesh['x'=8] {'x':(2)2}      a sub-axis: x reshaped [2,2,2], the middle part
//   replica_groups=mesh['x'=2,'y'=2], device_ids=(0,2,1,3) {'y'}
//   source_target_pairs={{0,1},{1,2}}
//
// Whether the ids are replica ids, partition ids or global device ids depends on channel_id and
// use_global_device_ids; the collectives pass resolves that, not the parser.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/device_list.h"

namespace spmdsim::ir {

// A mesh axis, or a part of one (Shardy's sub-axis "(pre_size)size").
struct MeshAxisRef {
  std::string name;
  int64_t pre_size = 0;  // 0 = the whole axis
  int64_t size = 0;
  bool operator==(const MeshAxisRef&) const = default;
};

struct MeshAxesGroups {
  std::vector<std::pair<std::string, int64_t>> axes;  // mesh axes, major to minor
  std::vector<int64_t> device_ids;                    // explicit ids; empty = iota
  IotaList device_iota;                               // device_ids=([8]<=[4,2]T(1,0)) form
  std::string device_ids_text;                        // as written inside device_ids=(...)
  std::vector<MeshAxisRef> group_axes;                // the axes a group spans
  bool operator==(const MeshAxesGroups&) const = default;
};

struct ReplicaGroups {
  bool uses_mesh = false;
  MeshAxesGroups mesh;  // when uses_mesh
  bool uses_iota = false;
  IotaList iota;                             // when uses_iota
  int64_t iota_num_groups = 0;               // when uses_iota
  int64_t iota_group_size = 0;               // when uses_iota
  std::vector<std::vector<int64_t>> groups;  // explicit list (empty = all participants)

  // The groups as id lists, expanding the iota form. Empty when "all participants".
  std::vector<std::vector<int64_t>> Expand() const;
  // Size of each group (the first one's; XLA requires equal sizes). 0 = all participants.
  int64_t GroupSize() const;
  int64_t NumGroups() const;

  std::string ToString() const;
  bool operator==(const ReplicaGroups&) const = default;
};

using SourceTargetPairs = std::vector<std::pair<int64_t, int64_t>>;

}  // namespace spmdsim::ir
