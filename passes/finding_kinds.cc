#include "passes/finding_kinds.h"

#include <array>

namespace spmdsim::passes {
namespace {

constexpr std::array<FindingKindInfo, 3> kKinds = {{
    {FindingKind::kRngKeyResidual, "rng-key-residual", "SPMD001", FindingSeverity::kWarning,
     "Random values drawn in the forward pass stay live until the backward pass reads them"},
    {FindingKind::kRngDependsOnPartition, "rng-depends-on-partition", "SPMD002",
     FindingSeverity::kWarning,
     "A random key is derived from the device's position in the mesh: the bits change with the "
     "mesh"},
    {FindingKind::kRngReplicatedCollectives, "rng-replicated-collectives", "SPMD003",
     FindingSeverity::kWarning,
     "Replicated threefry sends collectives that partitionable threefry would not"},
}};

}  // namespace

std::string_view SeverityName(FindingSeverity severity) {
  return severity == FindingSeverity::kInfo ? "info" : "warning";
}

std::span<const FindingKindInfo> FindingKinds() { return kKinds; }

const FindingKindInfo& InfoOf(FindingKind kind) {
  for (const FindingKindInfo& info : kKinds) {
    if (info.kind == kind) return info;
  }
  return kKinds.front();  // unreachable: every enumerator is listed
}

std::string_view FindingName(FindingKind kind) { return InfoOf(kind).name; }

std::optional<FindingKind> ParseFindingKind(std::string_view name) {
  for (const FindingKindInfo& info : kKinds) {
    if (info.name == name) return info.kind;
  }
  return std::nullopt;
}

}  // namespace spmdsim::passes
