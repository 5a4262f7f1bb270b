#include "ir/device_count.h"

#include "ir/limits.h"

namespace spmdsim::ir {
namespace {

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (const int64_t d : dims) n = SaturatingMul(n, std::max<int64_t>(d, 1));
  return n;
}

int64_t NamedBy(const ReplicaGroups& groups) {
  if (groups.uses_iota) return IotaSize(groups.iota).value_or(0);
  if (groups.uses_mesh) {
    int64_t n = 1;
    for (const auto& [name, size] : groups.mesh.axes)
      n = SaturatingMul(n, std::max<int64_t>(size, 1));
    int64_t named = n;
    for (const int64_t id : groups.mesh.device_ids) named = std::max(named, SaturatingAdd(id, 1));
    if (!groups.mesh.device_iota.reshape_dims.empty()) {
      named = std::max(named, Product(groups.mesh.device_iota.reshape_dims));
    }
    return named;
  }
  int64_t named = 0;
  for (const std::vector<int64_t>& group : groups.groups) {
    for (const int64_t id : group) named = std::max(named, SaturatingAdd(id, 1));
  }
  return named;
}

}  // namespace

int64_t DevicesNamedByCollectives(const HloModule& module) {
  int64_t named = 0;
  for (const HloComputation* computation : module.computations) {
    for (const HloInstruction* instr : computation->instructions) {
      if (const ReplicaGroups* groups = instr->replica_groups()) {
        named = std::max(named, NamedBy(*groups));
      }
      if (const SourceTargetPairs* pairs = instr->source_target_pairs()) {
        for (const auto& [source, target] : *pairs) {
          named = std::max({named, SaturatingAdd(source, 1), SaturatingAdd(target, 1)});
        }
      }
    }
  }
  return std::min(named, kMaxDevices);
}

}  // namespace spmdsim::ir
