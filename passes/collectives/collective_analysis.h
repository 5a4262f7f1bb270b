// Every collective of a partitioned module, with what it costs: the device groups it runs over,
// the bytes each device puts on the wire, how many times it runs per step, and (given a
// Topology) an alpha-beta time estimate.
//
// Bytes follow REFERENCE §5 with B the full (unsharded) buffer and n the group size:
//   all-reduce      B = operand bytes (summed over a variadic all-reduce)   wire 2(n-1)/n * B
//   all-gather      B = result bytes                                         wire  (n-1)/n * B
//   reduce-scatter  B = operand bytes                                        wire  (n-1)/n * B
//   all-to-all      B = operand bytes (local)                                wire  (n-1)/n * B
//   collective-permute / send / collective-broadcast: B = operand bytes (local), wire B
// under the ring algorithm for the first three (NCCL's default for large messages), a direct
// exchange for the rest. A recv carries no wire bytes of its own (its send does).
//
// Async forms count once: X-start (X-done is skipped) and async-start wrapping a collective
// (attributes taken from the wrapped instruction). A collective runs as often as its computation:
// a while body runs known_trip_count times (backend_config) or, failing that, the count read from
// the loop's induction pattern (`i < constant` with a constant initial i); nested loops multiply
// and a computation called from several places counts per call.
//
// Device ids (REFERENCE §4): use_global_device_ids=true -> global device ids; channel_id alone ->
// partition ids; neither -> replica ids. Node placement treats the ids as device ids, which is
// exact when there is one replica (partition ids) or one partition (replica ids).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/hlo.h"
#include "passes/collectives/topology.h"
#include "passes/loop_trip_count.h"

namespace spmdsim::passes {

class ModuleAnalyses;

struct CollectiveOptions {
  // The machine, for node placement and times; nullptr = bytes only (times stay 0).
  const Topology* topology = nullptr;
};

// What a collective's replica groups number (XLA's CollectiveOpGroupMode, as the dump tells it):
// global device ids (use_global_device_ids=true), partitions (a channel_id), or replicas.
enum class DeviceIdKind : uint8_t { kReplicaId, kPartitionId, kGlobalDeviceId };
// "replica_id", "partition_id", "global_device_id" (the JSON's words).
std::string_view DeviceIdKindName(DeviceIdKind kind);

// Wire bytes per device of one execution of B bytes over groups of `group_size` (the table
// above): the busiest device's share, 0 for recv (its sender counts it).
int64_t WireBytesPerDevice(ir::CollectiveKind kind, int64_t bytes, int64_t group_size);

struct CollectiveOp {
  std::string instruction;  // the instruction that starts it (X-start, async-start, or X)
  // That instruction in the analysed module (valid while the module lives): the handle other
  // analyses join on.
  const ir::HloInstruction* start = nullptr;
  ir::CollectiveKind kind = ir::CollectiveKind::kNone;  // base kind (all-reduce for -start)
  std::string opcode;                                   // as written
  std::string computation;                              // where it sits
  DeviceIdKind id_kind = DeviceIdKind::kReplicaId;      // what the replica groups number
  // Device groups; for collective-permute the {source, target} pairs. Shared by the ops with the
  // same replica groups: a module of 10,000 collectives over 65,536 devices holds one copy.
  std::shared_ptr<const std::vector<std::vector<int64_t>>> device_groups;
  const std::vector<std::vector<int64_t>>& groups() const {
    static const std::vector<std::vector<int64_t>> kNone;
    return device_groups ? *device_groups : kNone;
  }
  int64_t group_size = 0;  // devices per group (2 for a permute pair)
  std::string mesh_axes;   // the mesh axes a group spans; empty when none matches
  // The operands that travel, the first ones of its instruction: > 1 only for a variadic
  // (combined) collective; 1 for send (data, token) and in-place collective-permute (input,
  // output buffer, offsets).
  int64_t operand_count = 0;
  int64_t bytes = 0;                  // B of the table above, one execution
  std::string algorithm;              // "ring" | "direct"
  int64_t wire_bytes_per_device = 0;  // busiest device, one execution
  int64_t intra_node_bytes = 0;       // of wire_bytes_per_device (needs a topology)
  int64_t inter_node_bytes = 0;
  bool spans_nodes = false;
  double est_time_us = 0;  // one execution
  int64_t loop_multiplier = 1;
  bool trip_count_known = true;  // false: some enclosing loop's trip count is unknown (taken as 1)
  std::string op_name;
  std::string source;  // "file.py:123" or empty
};

struct CollectiveKindTotals {
  int64_t count = 0;                  // instructions
  int64_t executions = 0;             // with loop multipliers
  int64_t wire_bytes_per_device = 0;  // with loop multipliers
  double est_time_us = 0;             // with loop multipliers
};

struct CollectiveResult {
  int64_t num_devices = 1;        // replica_count * num_partitions
  std::string topology;           // name, empty without one
  std::vector<CollectiveOp> ops;  // text order
  std::map<std::string, CollectiveKindTotals> by_kind;
  // Per step, loop multipliers applied.
  int64_t total_wire_bytes_per_device = 0;
  int64_t total_intra_node_bytes = 0;
  int64_t total_inter_node_bytes = 0;
  double est_time_us = 0;
  std::vector<std::string> notes;
};

CollectiveResult AnalyzeCollectives(const ir::HloModule& module,
                                    const CollectiveOptions& options = {});
// The same, with the execution counts `analyses` keeps for the module's other analyses.
CollectiveResult AnalyzeCollectives(ModuleAnalyses& analyses,
                                    const CollectiveOptions& options = {});

// WhileTripCount, ComputationExecutionCounts: passes/loop_trip_count.h.

}  // namespace spmdsim::passes
