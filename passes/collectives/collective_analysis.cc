#include "passes/collectives/collective_analysis.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <unordered_map>

#include "ir/c_unescape.h"
#include "ir/checked_math.h"
#include "ir/device_count.h"
#include "ir/parse_int.h"
#include "passes/module_analyses.h"
#include "passes/stats_analysis.h"

namespace spmdsim::passes {

using ir::CollectiveKind;
using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;

std::string_view DeviceIdKindName(DeviceIdKind kind) {
  switch (kind) {
    case DeviceIdKind::kReplicaId:
      return "replica_id";
    case DeviceIdKind::kPartitionId:
      return "partition_id";
    case DeviceIdKind::kGlobalDeviceId:
      return "global_device_id";
  }
  return "replica_id";
}

namespace {

using Groups = std::vector<std::vector<int64_t>>;

// Meshes with more axes than this are not searched for the axes a group spans (2^axes subsets).
constexpr size_t kMaxMeshAxes = 10;

std::string SourceOf(const ir::HloModule& module, const ir::Metadata& metadata) {
  std::string source = metadata.Source();
  if (!source.empty() || metadata.stack_frame_id == 0) return source;
  std::string_view file;
  int64_t line = 0;
  if (!module.stack_frames.Resolve(metadata.stack_frame_id, file, line)) return {};
  return std::string(file) + ":" + std::to_string(line);
}

int64_t LeafBytes(std::span<HloInstruction* const> operands, size_t limit) {
  int64_t total = 0;
  for (size_t i = 0; i < operands.size() && i < limit; ++i) {
    total = ir::SaturatingAdd(total, operands[i]->shape.LeafDataBytes());
  }
  return total;
}

// ---- Mesh axes --------------------------------------------------------------------------------

struct MeshCandidate {
  std::vector<int64_t> dims;       // size-1 axes dropped
  std::vector<std::string> names;  // empty = unnamed
};

// The coordinates of `device` (row-major over `dims`) along the axes not in `mask`, as one
// mixed-radix number: devices that differ only along the masked axes share it.
int64_t UnmaskedKey(int64_t device, const std::vector<int64_t>& dims, uint32_t mask) {
  int64_t key = 0;
  int64_t rest = device;
  for (size_t axis = dims.size(); axis-- > 0;) {
    const int64_t coord = rest % dims[axis];
    rest /= dims[axis];
    if ((mask & (1u << axis)) == 0) key = key * dims[axis] + coord;
  }
  return key;
}

// Whether `groups` are exactly the groups of devices (row-major iota over `dims`, `total` of
// them) that differ only along the axes in `mask`, in any order: every group has the masked
// axes' size, its devices share their other coordinates, and together the groups hold every
// device once. Linear in the devices, without building the mesh's groups (a module can name
// 65536 devices in every collective).
bool GroupsAreMeshSubsets(const Groups& groups, const std::vector<int64_t>& dims, uint32_t mask,
                          int64_t total) {
  int64_t group_size = 1;
  for (size_t axis = 0; axis < dims.size(); ++axis) {
    if ((mask & (1u << axis)) != 0) group_size *= dims[axis];
  }
  if (groups.empty() || static_cast<int64_t>(groups.front().size()) != group_size ||
      static_cast<int64_t>(groups.size()) != total / group_size) {
    return false;
  }
  std::vector<bool> seen(static_cast<size_t>(total), false);
  for (const auto& group : groups) {
    if (static_cast<int64_t>(group.size()) != group_size) return false;
    int64_t key = -1;
    for (const int64_t device : group) {
      if (device < 0 || device >= total || seen[static_cast<size_t>(device)]) return false;
      seen[static_cast<size_t>(device)] = true;
      const int64_t k = UnmaskedKey(device, dims, mask);
      if (key >= 0 && k != key) return false;
      key = k;
    }
  }
  return true;
}

std::string DimsText(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? "," : "") + std::to_string(dims[i]);
  return out + "]";
}

void AddCandidate(std::vector<MeshCandidate>& candidates, std::vector<int64_t> dims,
                  std::vector<std::string> names, int64_t num_devices) {
  std::vector<int64_t> kept;
  std::vector<std::string> kept_names;
  int64_t product = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] <= 0) return;
    product = ir::SaturatingMul(product, dims[i]);
    if (dims[i] == 1) continue;
    kept.push_back(dims[i]);
    if (i < names.size()) kept_names.push_back(names[i]);
  }
  if (product != num_devices || kept.empty() || kept.size() > kMaxMeshAxes) return;
  if (kept_names.size() != kept.size()) kept_names.clear();
  for (const MeshCandidate& c : candidates) {
    if (c.dims == kept) return;
  }
  candidates.push_back({std::move(kept), std::move(kept_names)});
}

void AddShardingCandidates(const ir::Sharding& sharding, std::vector<MeshCandidate>& candidates,
                           int64_t num_devices) {
  if (sharding.kind == ir::Sharding::Kind::kTuple) {
    for (const ir::Sharding& element : sharding.tuple) {
      AddShardingCandidates(element, candidates, num_devices);
    }
  } else if (sharding.kind == ir::Sharding::Kind::kTiled && sharding.uses_iota) {
    // [1,2,4]<=[4,2]T(1,0): the mesh is the iota's reshape [4,2]; [2,4]<=[8] (no transpose):
    // the tile assignment [2,4] itself, with devices row-major over it.
    AddCandidate(candidates, sharding.iota.reshape_dims, {}, num_devices);
    bool identity = true;
    for (size_t i = 0; i < sharding.iota.transpose_perm.size(); ++i) {
      identity = identity && sharding.iota.transpose_perm[i] == static_cast<int64_t>(i);
    }
    if (identity) AddCandidate(candidates, sharding.tile_dims, {}, num_devices);
  }
}

// Shardy's mesh in the header: frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["data"=4,
// "model"=2]>}}. Only a module with exactly one mesh is read.
void AddSdyMesh(const ir::HloModule& module, std::vector<MeshCandidate>& candidates,
                int64_t num_devices) {
  for (const ir::Attribute& attr : module.attributes) {
    if (attr.name != "frontend_attributes") continue;
    const std::string_view text = attr.value;
    const size_t start = text.find("#sdy.mesh<[");
    if (start == std::string_view::npos || text.find("#sdy.mesh<[", start + 1) != text.npos) {
      return;
    }
    const size_t end = text.find("]>", start);
    if (end == std::string_view::npos) return;
    std::string_view body = text.substr(start + 11, end - start - 11);
    std::vector<int64_t> dims;
    std::vector<std::string> names;
    while (!body.empty()) {
      const size_t open = body.find('"');
      if (open == body.npos) break;
      const size_t close = body.find('"', open + 1);
      const size_t eq = body.find('=', close);
      if (close == body.npos || eq == body.npos) return;
      size_t num_end = eq + 1;
      while (num_end < body.size() && body[num_end] >= '0' && body[num_end] <= '9') ++num_end;
      const std::optional<int64_t> size = ir::ParseInt64(body.substr(eq + 1, num_end - eq - 1));
      if (!size) return;
      std::string name(body.substr(open + 1, close - open - 1));
      std::erase(name, '\\');  // the escaped form \"data\"
      names.push_back(std::move(name));
      dims.push_back(*size);
      body.remove_prefix(num_end);
    }
    AddCandidate(candidates, dims, names, num_devices);
  }
}

std::vector<MeshCandidate> MeshCandidates(const ir::HloModule& module, int64_t num_devices) {
  std::vector<MeshCandidate> candidates;
  AddSdyMesh(module, candidates, num_devices);
  if (module.entry != nullptr) {
    for (const HloInstruction* param : module.entry->parameters) {
      if (param != nullptr && param->sharding()) {
        AddShardingCandidates(*param->sharding(), candidates, num_devices);
      }
    }
  }
  // Meshes more axes first: a group matched there says more than "all devices".
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const MeshCandidate& a, const MeshCandidate& b) {
                     if (a.names.empty() != b.names.empty()) return !a.names.empty();
                     return a.dims.size() > b.dims.size();
                   });
  AddCandidate(candidates, {num_devices}, {}, num_devices);
  return candidates;
}

std::string MatchMeshAxes(const Groups& groups, const std::vector<MeshCandidate>& candidates,
                          const ir::ReplicaGroups* written) {
  for (const MeshCandidate& mesh : candidates) {
    int64_t total = 1;
    for (const int64_t d : mesh.dims) total = ir::SaturatingMul(total, d);
    const uint32_t subsets = 1u << mesh.dims.size();
    for (uint32_t mask = 1; mask < subsets; ++mask) {
      if (!GroupsAreMeshSubsets(groups, mesh.dims, mask, total)) continue;
      std::string out;
      for (size_t axis = 0; axis < mesh.dims.size(); ++axis) {
        if ((mask & (1u << axis)) == 0) continue;
        if (!out.empty()) out += ",";
        out += mesh.names.empty() ? std::to_string(axis) : mesh.names[axis];
      }
      if (mesh.names.empty()) {
        return (out.find(',') == out.npos ? "axis " : "axes ") + out + " of mesh " +
               DimsText(mesh.dims);
      }
      return out;
    }
  }
  if (written != nullptr && written->uses_mesh) {  // fall back to the names XLA wrote
    std::string out;
    for (const ir::MeshAxisRef& axis : written->mesh.group_axes) {
      out += (out.empty() ? "" : ",") + axis.name;
    }
    return out;
  }
  return {};
}

// ---- Wire bytes and time ------------------------------------------------------------------------

int64_t Fraction(int64_t bytes, int64_t numerator, int64_t denominator) {
  return ir::SaturatingMulDiv(bytes, numerator, denominator);
}

int64_t NodeOf(int64_t device, const Topology* topology) {
  return topology == nullptr ? 0 : device / topology->devices_per_node;
}

}  // namespace

int64_t WireBytesPerDevice(CollectiveKind kind, int64_t bytes, int64_t group_size) {
  const int64_t n = group_size;
  switch (kind) {
    case CollectiveKind::kCollectivePermute:
    case CollectiveKind::kSend:
      return bytes;  // a pair, whatever the groups
    case CollectiveKind::kRecv:
      return 0;  // counted at the sender
    default:
      break;
  }
  if (n <= 1) return 0;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return Fraction(bytes, 2 * (n - 1), n);
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kRaggedAllToAll:
      return Fraction(bytes, n - 1, n);
    default:
      return bytes;  // collective-broadcast
  }
}

namespace {

// How a group list meets the topology's nodes, computed once per distinct list and kind of
// exchange (a module of 10,000 collectives over the same 65,536 devices walks them once): for
// each group its size and its node-crossing count, distinct pairs only. The count is, per kind:
// a permute pair crosses (1) or not; all-to-all: the peers on other nodes of the member whose
// node holds the fewest of the group (each member sends 1/n to each peer); a ring: the hops
// between consecutive members on different nodes (NCCL's channels rotate which device makes
// the crossing: c/n of the bytes). Without a topology every device is on one node.
class NodeCrossings {
 public:
  const std::vector<std::pair<int64_t, int64_t>>& Of(const CollectiveOp& op,
                                                     const Topology* topology) {
    static const std::vector<std::pair<int64_t, int64_t>> kNone;
    if (topology == nullptr || op.device_groups == nullptr) return kNone;
    const int kind =
        op.kind == CollectiveKind::kCollectivePermute || op.kind == CollectiveKind::kSend ||
                op.kind == CollectiveKind::kRecv
            ? 0
        : op.kind == CollectiveKind::kAllToAll || op.kind == CollectiveKind::kRaggedAllToAll ? 1
                                                                                             : 2;
    auto [found, inserted] = known_.try_emplace({op.device_groups.get(), kind});
    if (!inserted) return found->second;
    std::set<std::pair<int64_t, int64_t>> distinct;
    for (const std::vector<int64_t>& group : *op.device_groups) {
      if (group.empty()) continue;
      const auto size = static_cast<int64_t>(group.size());
      int64_t crossing = 0;
      if (kind == 0) {
        crossing = size == 2 && NodeOf(group[0], topology) != NodeOf(group[1], topology);
      } else if (kind == 1) {
        std::unordered_map<int64_t, int64_t> per_node;
        for (const int64_t device : group) ++per_node[NodeOf(device, topology)];
        int64_t fewest = size;
        for (const auto& [node, count] : per_node) fewest = std::min(fewest, count);
        crossing = size - fewest;
      } else {
        for (size_t i = 0; i < group.size(); ++i) {
          const int64_t next = group[(i + 1) % group.size()];
          crossing += NodeOf(group[i], topology) != NodeOf(next, topology);
        }
      }
      distinct.emplace(crossing, size);
    }
    found->second.assign(distinct.begin(), distinct.end());
    return found->second;
  }

 private:
  std::map<std::pair<const void*, int>, std::vector<std::pair<int64_t, int64_t>>> known_;
};

// Fills wire bytes, the intra/inter split and the time of one execution.
void Cost(CollectiveOp& op, const Topology* topology, NodeCrossings& crossings) {
  const int64_t n = op.group_size;
  const bool ring = op.kind == CollectiveKind::kAllReduce ||
                    op.kind == CollectiveKind::kAllGather ||
                    op.kind == CollectiveKind::kReduceScatter;
  op.algorithm = ring ? "ring" : "direct";
  op.wire_bytes_per_device = WireBytesPerDevice(op.kind, op.bytes, n);
  // Sequential steps of the ring or of the broadcast's chain; one for a direct exchange.
  int64_t steps = 1;
  if (op.kind == CollectiveKind::kAllReduce) {
    steps = 2 * (n - 1);
  } else if (ring || op.kind == CollectiveKind::kAllToAll ||
             op.kind == CollectiveKind::kRaggedAllToAll) {
    steps = n - 1;
  } else if (op.kind == CollectiveKind::kCollectiveBroadcast) {
    steps = std::max<int64_t>(1, n - 1);
  }
  if (n <= 1 && op.kind != CollectiveKind::kCollectivePermute && op.kind != CollectiveKind::kSend) {
    steps = 0;
  }

  // Inter-node share: a ring over a group with c node-crossing hops out of n sends c/n of its
  // bytes between nodes (NCCL's channels rotate which device makes the crossing); all-to-all
  // sends 1/n to each peer; a permute pair crosses or not.
  // Without a topology every device is on one node. Linear in the devices: a module can name
  // 65536 of them in one group.
  const bool pairwise = op.kind == CollectiveKind::kCollectivePermute ||
                        op.kind == CollectiveKind::kSend || op.kind == CollectiveKind::kRecv;
  const bool all_to_all =
      op.kind == CollectiveKind::kAllToAll || op.kind == CollectiveKind::kRaggedAllToAll;
  int64_t inter = 0;
  for (const auto& [crossing, size] : crossings.Of(op, topology)) {
    if (pairwise) {
      if (crossing > 0) inter = std::max(inter, op.wire_bytes_per_device);
    } else if (all_to_all) {
      inter = std::max(inter, Fraction(op.bytes, crossing, n));
    } else {
      inter = std::max(inter, Fraction(op.wire_bytes_per_device, crossing, size));
    }
  }
  op.inter_node_bytes = std::min(inter, op.wire_bytes_per_device);
  op.intra_node_bytes = op.wire_bytes_per_device - op.inter_node_bytes;
  op.spans_nodes = op.inter_node_bytes > 0;
  if (topology == nullptr) return;

  const LinkClass& intra = topology->intra_node;
  const LinkClass& inter_link = topology->inter_node ? *topology->inter_node : intra;
  const double latency = op.spans_nodes ? inter_link.latency_us : intra.latency_us;
  // GB/s = 1e3 bytes per microsecond.
  const double intra_us =
      static_cast<double>(op.intra_node_bytes) / (intra.bus_bandwidth_GBps * 1e3);
  const double inter_us =
      static_cast<double>(op.inter_node_bytes) / (inter_link.bus_bandwidth_GBps * 1e3);
  op.est_time_us = latency * static_cast<double>(steps) + std::max(intra_us, inter_us);
}

}  // namespace

namespace {

struct NamedProducers {
  std::string common_op_name;  // the longest whole-component prefix of their op_names
  const ir::HloInstruction* first = nullptr;
};

// The nearest producers of `operands` that carry an op_name (XLA's bitcasts, copies and
// concatenations for a combined collective carry none; a parameter of a computation called from
// one place stands for its caller's operand), a bounded walk up the operands.
NamedProducers NearestNamedProducers(std::span<ir::HloInstruction* const> operands) {
  NamedProducers out;
  std::vector<const ir::HloInstruction*> stack(operands.begin(), operands.end());
  std::set<const ir::HloInstruction*> seen;
  bool any = false;
  bool all_same = true;
  while (!stack.empty() && seen.size() < 256) {
    const ir::HloInstruction* at = stack.back();
    stack.pop_back();
    if (!seen.insert(at).second) continue;
    const std::string name = ir::CUnescape(at->metadata().op_name);
    if (name.empty()) {
      if (at->opcode == Opcode::kParameter && at->parent != nullptr &&
          at->parent->callers.size() == 1 && at->parameter_number >= 0 &&
          static_cast<size_t>(at->parameter_number) <
              at->parent->callers.front()->operands.size()) {
        stack.push_back(
            at->parent->callers.front()->operands[static_cast<size_t>(at->parameter_number)]);
      } else {
        stack.insert(stack.end(), at->operands.begin(), at->operands.end());
      }
      continue;
    }
    if (!any) {
      out.common_op_name = name;
      out.first = at;
      any = true;
      continue;
    }
    all_same &= name == out.common_op_name;
    size_t keep = 0;
    while (keep < out.common_op_name.size() && keep < name.size() &&
           out.common_op_name[keep] == name[keep]) {
      ++keep;
    }
    out.common_op_name.resize(keep);
  }
  // Cut back to whole components when the names differ.
  if (!all_same) {
    const size_t slash = out.common_op_name.rfind('/');
    out.common_op_name.resize(slash == std::string::npos ? 0 : slash);
  }
  return out;
}

}  // namespace

CollectiveResult AnalyzeCollectives(const ir::HloModule& module, const CollectiveOptions& options) {
  ModuleAnalyses analyses(module);
  return AnalyzeCollectives(analyses, options);
}

CollectiveResult AnalyzeCollectives(ModuleAnalyses& analyses, const CollectiveOptions& options) {
  const ir::HloModule& module = analyses.module();
  CollectiveResult result;
  result.num_devices = ir::DeviceCount(module);
  if (options.topology != nullptr) result.topology = options.topology->name;
  const std::unordered_map<const HloComputation*, bool>& known = analyses.Executions().known;
  const std::unordered_map<const HloComputation*, int64_t>& counts = analyses.Executions().runs;
  const std::vector<MeshCandidate> meshes = MeshCandidates(module, result.num_devices);
  struct ExpandedGroups {
    std::shared_ptr<Groups> groups = std::make_shared<Groups>();
    std::string mesh_axes;
  };
  std::unordered_map<std::string, ExpandedGroups> expanded;  // by replica groups and participants
  NodeCrossings crossings;

  std::set<const HloComputation*> async_wrapped;
  for (const HloComputation* computation : module.computations) {
    for (const HloInstruction* instr : computation->instructions) {
      if (instr->opcode != Opcode::kAsyncStart) continue;
      for (const auto& called : instr->called_computations())
        async_wrapped.insert(called.computation);
    }
  }
  bool mixed_ids = false;
  for (const HloComputation* computation : module.computations) {
    if (async_wrapped.count(computation) > 0) continue;
    for (const HloInstruction* instr : computation->instructions) {
      const CollectiveKind kind = CollectiveStarted(*instr);
      if (kind == CollectiveKind::kNone) continue;
      const HloInstruction* coll = instr;
      if (instr->opcode == Opcode::kAsyncStart) coll = instr->Called("calls")->root;

      CollectiveOp op;
      op.instruction = std::string(instr->name);
      op.start = instr;
      op.kind = kind;
      op.opcode = std::string(instr->opcode_name());
      op.computation = std::string(computation->name);
      op.operand_count = static_cast<int64_t>(coll->operands.size());
      if (coll->use_global_device_ids()) {
        op.id_kind = DeviceIdKind::kGlobalDeviceId;
      } else if (coll->channel_id() >= 0) {
        op.id_kind = DeviceIdKind::kPartitionId;
      } else {
        op.id_kind = DeviceIdKind::kReplicaId;
      }
      const int64_t participants = op.id_kind == DeviceIdKind::kGlobalDeviceId ? result.num_devices
                                   : op.id_kind == DeviceIdKind::kPartitionId
                                       ? module.num_partitions
                                       : module.replica_count;
      if (op.id_kind == DeviceIdKind::kPartitionId && module.replica_count > 1) mixed_ids = true;
      if (op.id_kind == DeviceIdKind::kReplicaId && module.num_partitions > 1) mixed_ids = true;

      if (coll->source_target_pairs()) {
        auto pairs = std::make_shared<Groups>();
        for (const auto& [source, target] : *coll->source_target_pairs()) {
          pairs->push_back({source, target});
        }
        op.device_groups = std::move(pairs);
        op.group_size = 2;
      } else {
        // Collectives of one program mostly repeat a few replica groups: each is expanded and
        // matched to the mesh once.
        const std::string key =
            (coll->replica_groups() ? coll->replica_groups()->ToString() : std::string()) + "|" +
            std::to_string(participants);
        auto [found, inserted] = expanded.try_emplace(key);
        ExpandedGroups& groups = found->second;
        if (inserted) {
          if (coll->replica_groups()) *groups.groups = coll->replica_groups()->Expand();
          if (groups.groups->empty() && participants <= ir::kMaxDevices) {
            std::vector<int64_t> all(static_cast<size_t>(std::max<int64_t>(0, participants)));
            for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
            groups.groups->push_back(std::move(all));
          }
          groups.mesh_axes = MatchMeshAxes(*groups.groups, meshes, coll->replica_groups());
        }
        op.device_groups = groups.groups;
        op.group_size = op.groups().empty() ? 0 : static_cast<int64_t>(op.groups()[0].size());
        op.mesh_axes = groups.mesh_axes;
      }

      // B per the table in the header.
      if (op.kind == CollectiveKind::kAllGather) {
        const ir::Shape& shape = coll->shape;
        if (coll->opcode == Opcode::kAllGatherStart && shape.IsTuple() &&
            shape.tuple_shapes().size() == 2) {
          op.bytes = shape.tuple_shapes()[1].LeafDataBytes();
        } else {
          op.bytes = shape.LeafDataBytes();
        }
      } else if (op.kind == CollectiveKind::kSend ||
                 (op.kind == CollectiveKind::kCollectivePermute &&
                  coll->HasAttribute("slice_sizes"))) {
        // send: the data operand (then a token); in-place collective-permute (slice_sizes=):
        // input, output buffer, then index operands. Only the first operand travels.
        op.bytes = LeafBytes(coll->operands, 1);
        op.operand_count = std::min<int64_t>(op.operand_count, 1);
      } else if (op.kind == CollectiveKind::kCollectivePermute) {
        // XLA's combiner merges permutes with the same pairs into one with many operands.
        op.bytes = LeafBytes(coll->operands, coll->operands.size());
      } else if (op.kind == CollectiveKind::kAllReduce &&
                 coll->shape.IsTuple() == (coll->operands.size() > 1)) {
        // What is reduced is the result's type: XLA:TPU folds a convert into the all-reduce
        // (f32 operands, bf16 results: bf16 on the wire).
        op.bytes = coll->shape.LeafDataBytes();
      } else if (op.kind == CollectiveKind::kRecv) {
        op.bytes = coll->shape.IsTuple() && !coll->shape.tuple_shapes().empty()
                       ? coll->shape.tuple_shapes()[0].LeafDataBytes()
                       : 0;
      } else {
        op.bytes = LeafBytes(coll->operands, coll->operands.size());
      }
      Cost(op, options.topology, crossings);

      const auto count = counts.find(computation);
      op.loop_multiplier = count == counts.end() ? 0 : count->second;
      const auto is_known = known.find(computation);
      op.trip_count_known = is_known == known.end() || is_known->second;
      const ir::Metadata& metadata =
          instr->metadata().empty() ? coll->metadata() : instr->metadata();
      op.op_name = ir::CUnescape(metadata.op_name);
      op.source = SourceOf(module, metadata);
      // XLA's combiners give a combined collective no metadata of its own: it is named after
      // what its operands compute (their common op_name prefix), and their first source.
      if (op.op_name.empty()) {
        const NamedProducers named = NearestNamedProducers(
            instr != coll ? instr->operands : coll->operands);  // an async wrapper's operands
        op.op_name = named.common_op_name;
        if (op.source.empty() && named.first != nullptr) {
          op.source = SourceOf(module, named.first->metadata());
        }
      }

      CollectiveKindTotals& totals = result.by_kind[std::string(ir::CollectiveKindName(op.kind))];
      ++totals.count;
      totals.executions = ir::SaturatingAdd(totals.executions, op.loop_multiplier);
      const int64_t wire = ir::SaturatingMul(op.wire_bytes_per_device, op.loop_multiplier);
      const double time = op.est_time_us * static_cast<double>(op.loop_multiplier);
      totals.wire_bytes_per_device = ir::SaturatingAdd(totals.wire_bytes_per_device, wire);
      totals.est_time_us += time;
      result.total_wire_bytes_per_device =
          ir::SaturatingAdd(result.total_wire_bytes_per_device, wire);
      result.total_intra_node_bytes =
          ir::SaturatingAdd(result.total_intra_node_bytes,
                            ir::SaturatingMul(op.intra_node_bytes, op.loop_multiplier));
      result.total_inter_node_bytes =
          ir::SaturatingAdd(result.total_inter_node_bytes,
                            ir::SaturatingMul(op.inter_node_bytes, op.loop_multiplier));
      result.est_time_us += time;
      if (!op.trip_count_known) {
        result.notes.push_back(op.instruction +
                               ": an enclosing loop has no known trip count; counted once");
      }
      result.ops.push_back(std::move(op));
    }
  }
  if (mixed_ids) {
    result.notes.push_back(
        "some collectives use partition or replica ids in a module with both replicas and "
        "partitions; node placement treats those ids as device ids");
  }
  if (ir::DevicesFromCollectives(module)) {
    result.notes.push_back("the module's header says " +
                           std::to_string(ir::HeaderDeviceCount(module)) +
                           " device(s) (replica_count x num_partitions), its collectives name "
                           "device ids up to " +
                           std::to_string(result.num_devices - 1) + ": " +
                           std::to_string(result.num_devices) + " devices assumed");
  }
  return result;
}

}  // namespace spmdsim::passes
