#include "ir/replica_groups.h"

#include <fmt/format.h>

namespace spmdsim::ir {

std::vector<std::vector<int64_t>> ReplicaGroups::Expand() const {
  if (!uses_iota) return groups;
  auto ids = ExpandIota(iota);
  std::vector<std::vector<int64_t>> out;
  if (!ids || iota_group_size <= 0 ||
      static_cast<int64_t>(ids->size()) != iota_num_groups * iota_group_size) {
    return out;
  }
  for (int64_t g = 0; g < iota_num_groups; ++g) {
    out.emplace_back(ids->begin() + g * iota_group_size, ids->begin() + (g + 1) * iota_group_size);
  }
  return out;
}

int64_t ReplicaGroups::GroupSize() const {
  if (uses_iota) return iota_group_size;
  return groups.empty() ? 0 : static_cast<int64_t>(groups.front().size());
}

int64_t ReplicaGroups::NumGroups() const {
  if (uses_iota) return iota_num_groups;
  return static_cast<int64_t>(groups.size());
}

std::string ReplicaGroups::ToString() const {
  if (uses_iota) {
    std::string out = fmt::format("[{},{}]<=[{}]", iota_num_groups, iota_group_size,
                                  fmt::join(iota.reshape_dims, ","));
    if (!iota.transpose_perm.empty()) {
      out += fmt::format("T({})", fmt::join(iota.transpose_perm, ","));
    }
    return out;
  }
  std::string out = "{";
  for (size_t i = 0; i < groups.size(); ++i) {
    if (i) out += ",";
    out += fmt::format("{{{}}}", fmt::join(groups[i], ","));
  }
  return out + "}";
}

}  // namespace spmdsim::ir
