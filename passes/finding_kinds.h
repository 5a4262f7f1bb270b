// Every kind of finding spmdsim reports, defined once: its name in the output (JSON `kind`, text,
// HTML), its SARIF rule id, its severity, and a one-line summary (the SARIF rule's description).
// A finding carries its FindingKind; views and emitters look the rest up here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace spmdsim::passes {

enum class FindingKind : uint8_t {
  kRngKeyResidual,            // random values held from the forward into the backward pass
  kRngDependsOnPartition,     // a key derived from the device's position in the mesh
  kRngReplicatedCollectives,  // collectives replicated threefry sends for its bits
};

enum class FindingSeverity : uint8_t { kInfo, kWarning };
// "info", "warning" (the JSON's words; SARIF says "note" for info).
std::string_view SeverityName(FindingSeverity severity);

struct FindingKindInfo {
  FindingKind kind;
  std::string_view name;      // "rng-key-residual"
  std::string_view sarif_id;  // "SPMD001"
  FindingSeverity severity;
  std::string_view summary;
};

// Every kind, in SARIF rule order.
std::span<const FindingKindInfo> FindingKinds();
const FindingKindInfo& InfoOf(FindingKind kind);
std::string_view FindingName(FindingKind kind);
// The kind with this name (a baseline's `kind`); nullopt for a name this build does not know.
std::optional<FindingKind> ParseFindingKind(std::string_view name);

}  // namespace spmdsim::passes
