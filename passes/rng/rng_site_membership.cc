// A site's members (what computes its values), its counter mode and its shard count.
#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "ir/c_unescape.h"
#include "ir/checked_math.h"
#include "ir/device_count.h"
#include "passes/memory/buffer_alias_analysis.h"
#include "passes/memory/buffer_dataflow_analysis.h"
#include "passes/rng/philox_expansion.h"
#include "passes/rng/random_provenance.h"
#include "passes/rng/rng_site_finder.h"
#include "passes/rng/threefry_hashes.h"
#include "passes/sharding/partition_offsets.h"

namespace spmdsim::passes::rng_internal {

bool RngSiteFinder::RandomOnlyElement(const HloInstruction* tuple, int64_t index, int depth) {
  if (tuple->opcode == Opcode::kTuple && index >= 0 &&
      index < static_cast<int64_t>(tuple->operands.size())) {
    return RandomOnly(tuple->operands[index], depth + 1);
  }
  // A barrier (remat's) passes each element through unchanged.
  if (tuple->opcode == Opcode::kOptimizationBarrier && tuple->operands.size() == 1 &&
      depth <= kMaxWalkDepth) {
    return RandomOnlyElement(tuple->operands[0], index, depth + 1);
  }
  return RandomOnly(tuple, depth + 1);
}

// Derived only from keys, counters and constants.
bool RngSiteFinder::RandomOnly(const HloInstruction* instr, int depth) {
  if (depth > kMaxWalkDepth) return false;
  const auto found = random_only_.find(instr);
  if (found != random_only_.end()) return found->second;
  random_only_[instr] = true;  // optimistic on cycles (loop-carried keys)
  bool result = false;
  switch (instr->opcode) {
    case Opcode::kConstant:
    case Opcode::kIota:
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
    case Opcode::kRngGetAndUpdateState:
      result = true;
      break;
    case Opcode::kParameter: {
      const HloComputation* computation = instr->parent;
      if (computation != nullptr && computation->is_entry) {
        // A key: u32 words, at most 4 of them (threefry u32[2], rbg u32[4]).
        result = IsU32Array(instr->shape) && instr->shape.ElementCount() <= 4;
      } else if (computation != nullptr && !computation->callers.empty()) {
        result = true;
        for (const HloInstruction* caller : computation->callers) {
          if (caller->opcode == Opcode::kWhile || caller->opcode == Opcode::kCall) {
            const size_t number =
                static_cast<size_t>(std::max<int64_t>(instr->parameter_number, 0));
            if (number < caller->operands.size()) {
              result &= RandomOnly(caller->operands[number], depth + 1);
            }
          } else {
            result = false;
          }
        }
      }
      break;
    }
    case Opcode::kGetTupleElement: {
      const HloInstruction* operand = instr->operands.empty() ? nullptr : instr->operands[0];
      if (operand == nullptr) break;
      if (operand->opcode == Opcode::kParameter && operand->parent != nullptr &&
          !operand->parent->is_entry && !operand->parent->callers.empty()) {
        result = true;
        for (const HloInstruction* caller : operand->parent->callers) {
          if ((caller->opcode == Opcode::kWhile || caller->opcode == Opcode::kCall) &&
              !caller->operands.empty()) {
            const size_t number =
                caller->opcode == Opcode::kWhile
                    ? 0
                    : static_cast<size_t>(std::max<int64_t>(operand->parameter_number, 0));
            if (number < caller->operands.size()) {
              result &= RandomOnlyElement(caller->operands[number], instr->tuple_index, depth);
            }
          } else {
            result = false;
          }
        }
      } else if (operand->opcode == Opcode::kWhile && !operand->operands.empty()) {
        result = RandomOnlyElement(operand->operands[0], instr->tuple_index, depth);
      } else {
        result = RandomOnlyElement(operand, instr->tuple_index, depth);
      }
      break;
    }
    default:
      // XLA puts an AllocateBuffer (no operands, contents undefined) where a loop's initial
      // state is never read (a dead input slot): it carries no data.
      if (instr->opcode == Opcode::kCustomCall && instr->operands.empty() &&
          instr->custom_call_target() == "AllocateBuffer") {
        result = true;
        break;
      }
      if (instr->opcode == Opcode::kCustomCall &&
          instr->custom_call_target().find("threefry") == std::string_view::npos) {
        result = false;
        break;
      }
      result = !instr->operands.empty();
      for (const HloInstruction* operand : instr->operands) {
        if (!result) break;
        result = RandomOnly(operand, depth + 1);
      }
      if (instr->operands.empty() && instr->opcode == Opcode::kFusion) result = true;
      break;
  }
  random_only_[instr] = result;
  return result;
}

// Partitionable counters come from u64 iotas (iota_2x32_shape); replicated ones from a flat
// 32-bit iota split in halves.
SiteMode RngSiteFinder::CounterMode(const SiteWork& work) {
  bool u64_iota = false;
  bool flat_iota = false;
  bool exchanged = false;
  std::unordered_set<const HloInstruction*> seen;
  std::function<void(const HloInstruction*, int)> walk = [&](const HloInstruction* instr,
                                                             int depth) {
    if (depth > 12 || !seen.insert(instr).second) return;
    // Replicated counters span the global array: some collective moves them (any form:
    // XLA:TPU's all-to-alls, the async pairs).
    if (ir::CollectiveKindOf(instr->opcode) != ir::CollectiveKind::kNone &&
        ir::CollectiveKindOf(instr->opcode) != ir::CollectiveKind::kAllReduce) {
      exchanged = true;
    }
    if (instr->metadata().op_name.find("iota_2x32_shape") != std::string_view::npos)
      u64_iota = true;
    const auto look = [&](const HloInstruction* inner) {
      if (inner->opcode != Opcode::kIota) return;
      // JAX's partitionable counters are iota_2x32_shape's per-element global indices; its
      // replicated counters one flat u32 iota, which XLA may rewrite into iotas of the tensor's
      // dimensions (XLA:TPU computes the flat index from them): by op_name, not rank.
      if (inner->shape.element_type() == PrimitiveType::kU64 ||
          inner->metadata().op_name.find("iota_2x32_shape") != std::string_view::npos) {
        u64_iota = true;
      } else if (inner->shape.rank() == 1 || (inner->shape.element_type() == PrimitiveType::kU32 &&
                                              inner->metadata().op_name.ends_with("/iota"))) {
        flat_iota = true;
      }
    };
    look(instr);
    if (instr->opcode == Opcode::kFusion) ForEachNested(instr->Called("calls"), look);
    for (const HloInstruction* operand : Producers(instr)) walk(operand, depth + 1);
  };
  for (const HloInstruction* counter : work.counters) walk(counter, 0);
  if (u64_iota) return SiteMode::kPartitionable;
  if (flat_iota || exchanged) return SiteMode::kReplicated;
  return SiteMode::kUnknown;
}

// Shards of a partitionable site: the partition-id offset of its counters, read from a constant
// table indexed by partition-id (distinct values) or partition-id itself (every device).
std::vector<const HloInstruction*> FusedHashInputs(const HloInstruction& fusion,
                                                   const HloInstruction* rotation) {
  const HloComputation* fused = fusion.Called("calls");
  if (rotation == nullptr || fused == nullptr) return {};
  // The fusion instruction calling each computation nested in the body.
  std::unordered_map<const HloComputation*, const HloInstruction*> caller{{fused, &fusion}};
  std::vector<const HloComputation*> pending{fused};
  while (!pending.empty() && caller.size() < 64) {
    const HloComputation* computation = pending.back();
    pending.pop_back();
    for (const HloInstruction* instr : computation->instructions) {
      const HloComputation* inner =
          instr->opcode == Opcode::kFusion ? instr->Called("calls") : nullptr;
      if (inner != nullptr && caller.emplace(inner, instr).second) pending.push_back(inner);
    }
  }
  if (caller.count(rotation->parent) == 0) return {};
  std::vector<const HloInstruction*> inputs;
  std::unordered_set<const HloInstruction*> seen;
  std::vector<const HloInstruction*> stack{rotation};
  while (!stack.empty()) {
    const HloInstruction* instr = stack.back();
    stack.pop_back();
    if (!seen.insert(instr).second) continue;
    if (instr->opcode != Opcode::kParameter) {
      for (const HloInstruction* operand : instr->operands) stack.push_back(operand);
      continue;
    }
    const auto it = caller.find(instr->parent);
    const int64_t n = instr->parameter_number;
    if (it == caller.end() || n < 0 || n >= static_cast<int64_t>(it->second->operands.size())) {
      continue;
    }
    const HloInstruction* operand = it->second->operands[static_cast<size_t>(n)];
    if (it->second == &fusion) {
      inputs.push_back(operand);
    } else {
      stack.push_back(operand);
    }
  }
  return inputs;
}

int64_t RngSiteFinder::PartitionShards(SiteWork& work) {
  if (const int64_t slices = EvaluatedShards(work); slices > 0) return slices;
  return TableShards(work);
}

// The device-position arithmetic that offsets the counters, evaluated on every device
// (passes/sharding/partition_offsets.h); 0 when there is none or it cannot be evaluated. A key
// derived from the device's position (shard_map) would be counted too, so such sites get 0.
int64_t RngSiteFinder::EvaluatedShards(SiteWork& work) {
  if (!work.site.key_depends_on_partition) {
    // A fusion builds its counters inside: its operands other than the key carry the offsets.
    // Where the hash is known, only the operands its fused body reads on the way to the hash:
    // XLA:TPU fuses the hash into its consumer's fusion, beside collectives and loop state whose
    // device-dependent scalars are not counter offsets.
    std::vector<const HloInstruction*> roots;
    for (const HloInstruction* counter : work.counters) {
      if (counter != work.anchor || counter->opcode != Opcode::kFusion) {
        roots.push_back(counter);
        continue;
      }
      std::vector<const HloInstruction*> inputs = FusedHashInputs(*counter, work.rotation);
      // Partitionable counters (the global row-major index) with the device's id read inside
      // the hash's own body (the shard's table lookup fused in, XLA:GPU): the offsets are the
      // body's scalars computed from it. (Replicated mode reads the id to pick exchanged
      // counters, which are not offsets.)
      const bool reads_device_id =
          work.site.mode == SiteMode::kPartitionable && work.rotation != nullptr &&
          work.rotation->parent == counter->Called("calls") &&
          std::any_of(inputs.begin(), inputs.end(), [](const HloInstruction* input) {
            return input->opcode == Opcode::kPartitionId || input->opcode == Opcode::kReplicaId;
          });
      if (reads_device_id) {
        roots.push_back(counter);
        continue;
      }
      if (inputs.empty()) inputs.assign(counter->operands.begin(), counter->operands.end());
      for (const HloInstruction* operand : inputs) {
        if (std::find(work.keys.begin(), work.keys.end(), operand) == work.keys.end()) {
          roots.push_back(operand);
        }
      }
    }
    const std::vector<DeviceOffset> offsets = DeviceOffsets(roots);
    const int64_t slices =
        DistinctDeviceSlices(offsets, module_.num_partitions, module_.replica_count);
    if (slices == 0 && ReadsElidedTable(offsets)) work.offsets_elided = true;
    return slices;
  }
  return 0;
}

// JAX's replicated threefry hashes the flat counters iota(n) of the whole array, split in halves
// (REFERENCE §2). XLA partitions that iota like any array: each device builds iota(n / k) plus
// its slice's offset, and exchanges or selects slices before hashing. n is the length of the
// iota-building instruction times the distinct offsets the devices give it; 0 when no such
// instruction feeds the hash.
int64_t RngSiteFinder::ReplicatedCounterElements(SiteWork& work) {
  std::vector<const HloInstruction*> pending;
  for (const HloInstruction* counter : work.counters) {
    if (counter == work.anchor && counter->opcode == Opcode::kFusion) {
      for (const HloInstruction* input : FusedHashInputs(*counter, work.rotation)) {
        pending.push_back(input);
      }
    } else {
      pending.push_back(counter);
    }
  }
  constexpr size_t kMaxVisited = 4096;
  std::unordered_set<const HloInstruction*> seen;
  // Breadth first: the nearest iota-building instruction is the counters'.
  for (size_t next = 0; next < pending.size() && seen.size() < kMaxVisited; ++next) {
    const HloInstruction* instr = pending[next];
    if (!seen.insert(instr).second) continue;
    if (std::find(work.keys.begin(), work.keys.end(), instr) != work.keys.end()) continue;
    const bool builds_iota =
        instr->shape.IsArray() && instr->shape.rank() == 1 && IsU32Array(instr->shape) &&
        (instr->opcode == Opcode::kIota || (instr->opcode == Opcode::kFusion &&
                                            ContainsOpcode(instr->Called("calls"), Opcode::kIota)));
    if (builds_iota && instr != work.anchor) {
      // No offset from the device's position: every device builds the same counters, all of
      // them (an unpartitioned module, or counters XLA left replicated).
      const std::vector<DeviceOffset> offsets = DeviceOffsets({instr});
      const int64_t slices = offsets.empty() ? 1
                                             : DistinctDeviceSlices(offsets, module_.num_partitions,
                                                                    module_.replica_count);
      if (slices > 0) return ir::SaturatingMul(instr->shape.ElementCount(), slices);
      // These are the counters, but their offsets read a table the dump left out: an iota
      // further up (one that computes the offset) is not theirs.
      if (ReadsElidedTable(offsets)) {
        work.offsets_elided = true;
        return 0;
      }
    }
    for (const HloInstruction* operand : instr->operands) pending.push_back(operand);
  }
  return 0;
}

int64_t RngSiteFinder::TableShards(const SiteWork& work) {
  int64_t shards = 1;
  std::unordered_set<const HloInstruction*> seen;
  std::function<void(const HloInstruction*, int)> walk = [&](const HloInstruction* counter,
                                                             int depth) {
    if (depth > 8 || !seen.insert(counter).second) return;
    // Only the instruction that builds the counters from iotas carries the shard offset.
    const bool builds_counters = counter->opcode == Opcode::kIota ||
                                 (counter->opcode == Opcode::kFusion &&
                                  ContainsOpcode(counter->Called("calls"), Opcode::kIota));
    for (const HloInstruction* operand : counter->operands) {
      if (!builds_counters) break;
      if (operand->opcode != Opcode::kPartitionId && operand->opcode != Opcode::kReplicaId) {
        continue;
      }
      // The device's offset along each split dimension, one table per dimension indexed by
      // partition id: the shards are the distinct offset tuples (a tensor split 4 ways on its
      // rows and 2 on its columns reads a 4-valued and a 2-valued table: 8 shards).
      std::vector<std::vector<int64_t>> tables;
      for (const HloInstruction* other : counter->operands) {
        std::vector<int64_t> table = ArrayConstant(other);
        if (table.size() > 1 && static_cast<int64_t>(table.size()) == module_.num_partitions) {
          tables.push_back(std::move(table));
        }
      }
      const bool via_table = !tables.empty();
      std::set<std::vector<int64_t>> tuples;
      for (size_t p = 0; via_table && p < tables[0].size(); ++p) {
        std::vector<int64_t> tuple;
        for (const std::vector<int64_t>& table : tables) tuple.push_back(table[p]);
        tuples.insert(std::move(tuple));
      }
      shards = std::max<int64_t>(shards, static_cast<int64_t>(tuples.size()));
      if (!via_table) shards = std::max<int64_t>(shards, module_.num_partitions);
    }
    for (const HloInstruction* producer : Producers(counter)) walk(producer, depth + 1);
  };
  for (const HloInstruction* counter : work.counters) walk(counter, 0);
  return shards;
}

namespace {

// The partition-id or replica-id a fusion reads inside its fused body, if any.
const HloInstruction* FusedDevicePosition(const HloInstruction& fusion) {
  if (fusion.opcode != Opcode::kFusion) return nullptr;
  const HloInstruction* inner = nullptr;
  ForEachNested(fusion.Called("calls"), [&](const HloInstruction* i) {
    if (inner == nullptr &&
        (i->opcode == Opcode::kPartitionId || i->opcode == Opcode::kReplicaId)) {
      inner = i;
    }
  });
  return inner;
}

}  // namespace

const HloInstruction* RngSiteFinder::PartitionDependency(const DataflowAnalysis& dataflow,
                                                         const HloInstruction* key,
                                                         bool derived_keys_only) {
  // Each value is walked in one of two states: `past` a hash (or from the start, when any
  // computation counts), where everything it is computed from counts; before one
  // (derived_keys_only), where only the key's own bits are followed back to the hashes that
  // made them. What a walk learns of a (value, state) holds for every later walk (it depends on
  // nothing else): the values a walk that found nothing went through are clean, and those on
  // the path to what it found lead there. A chain of k keys derived one from the next is so
  // walked once in all, not once per key (k^2: 20,000 keys took 40 s).
  const RandomProvenance* provenance = derived_keys_only ? &analyses_.Provenance() : nullptr;
  constexpr size_t kMaxValues = 1 << 16;
  struct Pending {
    int32_t id;
    bool past;
    int32_t from;  // the entry of `visited` whose value pushed it; -1 for the key
  };
  std::vector<Pending> pending;
  std::vector<Pending> visited;  // in the order walked, each with the entry that pushed it
  const size_t states = 2 * dataflow.values().size();
  dependency_seen_.resize(states);
  dependency_known_.resize(states, kDependencyUnknown);
  dependency_hit_.resize(states, nullptr);
  if (++dependency_walk_ == 0) {  // the numbers wrapped: no mark may look current
    std::fill(dependency_seen_.begin(), dependency_seen_.end(), 0);
    dependency_walk_ = 1;
  }
  const uint32_t walk = dependency_walk_;
  const auto state = [](int32_t id, bool past) {
    return 2 * static_cast<size_t>(id) + (past ? 1 : 0);
  };
  int32_t from = -1;
  const auto push_element = [&](const HloInstruction* instr, const ShapeIndex& index, bool past) {
    const int32_t slot = index.empty() ? dataflow.FirstSlot(instr) : dataflow.SlotAt(instr, index);
    if (slot < 0) return;
    for (int32_t s = slot; s < slot + dataflow.SlotSpan(slot); ++s) {
      for (const int32_t id : dataflow.ValueSet(s)) pending.push_back({id, past, from});
    }
  };
  // The walk found `hit` through the visited entry `at`: the values on the path to it lead there.
  const auto found = [&](const HloInstruction* hit, int32_t at) {
    for (int32_t k = at; k >= 0; k = visited[static_cast<size_t>(k)].from) {
      const size_t st =
          state(visited[static_cast<size_t>(k)].id, visited[static_cast<size_t>(k)].past);
      dependency_known_[st] = kDependencyHit;
      dependency_hit_[st] = hit;
    }
    return hit;
  };
  push_element(key, {}, !derived_keys_only);
  while (!pending.empty()) {
    const Pending entry = pending.back();
    pending.pop_back();
    const auto [id, past, parent] = entry;
    const size_t st = state(id, past);
    uint32_t& mark = dependency_seen_[st];
    if (mark == walk || dependency_known_[st] == kDependencyClean) continue;
    if (dependency_known_[st] == kDependencyHit) return found(dependency_hit_[st], parent);
    mark = walk;
    if (visited.size() >= kMaxValues) return nullptr;  // nothing learnt: the walk stopped short
    from = static_cast<int32_t>(visited.size());
    visited.push_back(entry);
    const HloValue& value = dataflow.value(id);
    const HloInstruction* defining = value.instruction;
    if (past &&
        (defining->opcode == Opcode::kPartitionId || defining->opcode == Opcode::kReplicaId)) {
      return found(defining, from);
    }
    if (!past && provenance->Kind(id) != RandomKind::kBits) continue;
    const ShapeIndex index = dataflow.SlotIndex(value.slot);
    if (value.is_phi) {
      // A loop-carried element: what the loop starts with and what its body hands back there.
      const HloInstruction* loop = defining;
      if (loop->opcode == Opcode::kParameter && loop->parent != nullptr) {
        loop = nullptr;
        for (const HloInstruction* caller : defining->parent->callers) {
          if (caller->opcode == Opcode::kWhile) loop = caller;
        }
      }
      if (loop != nullptr && loop->opcode == Opcode::kWhile && !loop->operands.empty()) {
        push_element(loop->operands[0], index, past);
        const HloComputation* body = loop->Called("body");
        if (body != nullptr && body->root != nullptr) push_element(body->root, index, past);
      } else {
        for (const HloInstruction* operand : defining->operands) {
          push_element(operand, {}, past);
        }
      }
      continue;
    }
    if (const HloInstruction* inner = past ? FusedDevicePosition(*defining) : nullptr) {
      return found(inner, from);
    }
    if (defining->opcode == Opcode::kParameter) continue;  // the entry's: an input
    if (!index.empty() && defining->opcode == Opcode::kCopy && !defining->operands.empty()) {
      push_element(defining->operands[0], index, past);  // a copied element holds that element
      continue;
    }
    // Past a hash (split, fold_in) everything it read counts: the device's position it hashed.
    const bool hash = past || !provenance->DrawsHeldBy(defining).empty();
    for (const HloInstruction* operand : defining->operands) push_element(operand, {}, hash);
  }
  // Walked to the end without finding one: every value it went through is clean.
  for (const Pending& entry : visited)
    dependency_known_[state(entry.id, entry.past)] = kDependencyClean;
  return nullptr;
}

// A site whose scope is the whole program (a key split at the top level,
// `jit(train_step)/rng_bit_generator`) keeps only the members the dataflow joins to its anchor
// through other members (its counters, the generator state, the bits): its scope alone would
// take every random-only instruction of the module.
// Sites of one scope share its instructions by dataflow: each goes to the site whose anchor
// reaches it first, breadth first through operands and users among the candidates (the anchors
// in site order, so a counter several hashes read goes to the first); the rest to the first.
void RngSiteFinder::AssignByDataflow(const std::vector<int>& sites,
                                     const std::vector<const HloInstruction*>& candidates) {
  const std::unordered_set<const HloInstruction*> open(candidates.begin(), candidates.end());
  std::unordered_set<const HloInstruction*> claimed;
  std::vector<std::pair<const HloInstruction*, int>> frontier;
  for (const int s : sites) {
    const HloInstruction* anchor = sites_[s].anchor;
    frontier.emplace_back(anchor, s);
    // A loop's state comes in through its init tuple.
    if (anchor->opcode == Opcode::kWhile && !anchor->operands.empty()) {
      if (const HloInstruction* init = LoopInitTuple(anchor->operands[0]); init != nullptr) {
        frontier.emplace_back(init, s);
      }
    }
    for (const HloInstruction* holder : sites_[s].holders) frontier.emplace_back(holder, s);
  }
  for (const auto& [start, s] : frontier) claimed.insert(start);
  while (!frontier.empty()) {
    std::vector<std::pair<const HloInstruction*, int>> next;
    for (const auto& [at, s] : frontier) {
      const auto visit = [&, site = s](const HloInstruction* neighbour) {
        if (open.count(neighbour) == 0 || !claimed.insert(neighbour).second) return;
        site_of_[neighbour] = site;
        next.emplace_back(neighbour, site);
      };
      for (const HloInstruction* operand : at->operands) visit(operand);
      for (const HloInstruction* user : at->users) visit(user);
    }
    frontier = std::move(next);
  }
  // What no anchor reaches through the scope's own instructions is not random: a constant-built
  // mask computed beside the draws (a causal mask in a block whose key is folded in).
}

void RngSiteFinder::KeepConnectedMembers() {
  std::vector<std::vector<const HloInstruction*>> by_site(sites_.size());
  for (const auto& [instr, s] : site_of_) by_site[static_cast<size_t>(s)].push_back(instr);
  for (size_t s = 0; s < sites_.size(); ++s) {
    // A scope below the program's root already narrows the members to one JAX call site.
    if (sites_[s].site.scope.find('/') != std::string::npos) continue;
    std::unordered_set<const HloInstruction*> reached;
    std::vector<const HloInstruction*> stack = {sites_[s].anchor};
    for (const HloInstruction* holder : sites_[s].holders) stack.push_back(holder);
    const auto in_site = [&](const HloInstruction* instr) {
      const auto it = site_of_.find(instr);
      return it != site_of_.end() && it->second == static_cast<int>(s);
    };
    while (!stack.empty()) {
      const HloInstruction* at = stack.back();
      stack.pop_back();
      if (!reached.insert(at).second) continue;
      for (const HloInstruction* next : at->operands) {
        if (in_site(next)) stack.push_back(next);
      }
      for (const HloInstruction* next : at->users) {
        if (in_site(next)) stack.push_back(next);
      }
    }
    for (const HloInstruction* instr : by_site[s]) {
      if (reached.count(instr) == 0) site_of_.erase(instr);
    }
  }
}

// What XLA hoisted out of a loop (loop-invariant code motion) is computed in a caller of the
// site's computation and reaches the hash through the loop's state: a scanned layer's counters,
// made from the partition id, exchanged between devices (replicated mode) and passed in. Walked
// back from the hash by dataflow (Producers crosses from a loop's parameter to its operand),
// through what the site's scope computes and through plumbing; what lies outside the site's
// computation, in its scope and random-only, feeds the site (the collectives among it move the
// site's counters). Not members (the site's scope walks stay in its computation), but their
// buffers are the site's (MeasureBuffers): counters held across the loops that read them.
void RngSiteFinder::FindHoistedProducers() {
  // What the sites of one scope and computation have walked: a later one finds nothing new there
  // (the first site to reach an instruction keeps it), so each instruction is walked once per
  // scope, not once per site (20,000 key derivations of one scope took seconds).
  std::map<std::pair<std::string_view, const HloComputation*>,
           std::unordered_set<const HloInstruction*>>
      walked;
  for (size_t s = 0; s < sites_.size(); ++s) {
    SiteWork& work = sites_[s];
    const std::string& scope = work.site.scope;
    if (scope.empty() || work.anchor == nullptr) continue;
    const auto in_scope = [&](const HloInstruction* instr) {
      const std::string_view op_name = instr->metadata().op_name;
      return op_name.size() >= scope.size() && op_name.compare(0, scope.size(), scope) == 0 &&
             (op_name.size() == scope.size() || op_name[scope.size()] == '/');
    };
    const auto plumbing = [](const HloInstruction* instr) {
      return instr->opcode == Opcode::kParameter || instr->opcode == Opcode::kGetTupleElement ||
             instr->opcode == Opcode::kTuple || instr->opcode == Opcode::kCopy ||
             instr->opcode == Opcode::kBitcast;
    };
    std::vector<const HloInstruction*> stack(work.anchor->operands.begin(),
                                             work.anchor->operands.end());
    for (const HloInstruction* holder : work.holders) {
      stack.insert(stack.end(), holder->operands.begin(), holder->operands.end());
    }
    std::unordered_set<const HloInstruction*>& seen = walked[{scope, work.home}];
    const size_t walk_start = seen.size();
    while (!stack.empty() && seen.size() - walk_start < kMaxHoistedWalk) {
      const HloInstruction* at = stack.back();
      stack.pop_back();
      if (at == nullptr || !seen.insert(at).second) continue;
      const bool scoped = in_scope(at);
      if (!scoped && !plumbing(at)) continue;
      if (scoped && at->parent != work.home && !plumbing(at) && site_of_.count(at) == 0 &&
          RandomOnly(at)) {
        hoisted_of_.emplace(at, static_cast<int>(s));
      }
      for (const HloInstruction* producer : Producers(at)) stack.push_back(producer);
    }
  }
}

void RngSiteFinder::CollectMembers() {
  // Members: random-only instructions of the anchor's computation inside its scope; each goes to
  // the site with the longest scope. The anchor's loop body and condition belong to it whole.
  std::unordered_map<const HloComputation*, std::vector<int>> by_computation;
  for (size_t s = 0; s < sites_.size(); ++s) {
    by_computation[sites_[s].home].push_back(static_cast<int>(s));
    if (!sites_[s].shares_anchor) site_of_[sites_[s].anchor] = static_cast<int>(s);
  }
  // The elements taken out of a fusion that hashes several draws belong to the hash they come
  // from.
  for (const auto& [fusion, owners] : shared_anchors_) {
    for (const HloInstruction* user : fusion->users) {
      if (user->opcode != Opcode::kGetTupleElement || user->tuple_index < 0 ||
          user->tuple_index >= static_cast<int64_t>(owners.size()) ||
          owners[user->tuple_index] < 0) {
        continue;
      }
      site_of_.emplace(user, owners[user->tuple_index]);
    }
  }
  for (const auto& [computation, indices] : by_computation) {
    // Scope -> the sites with it; an instruction goes to the site of its longest op_name prefix
    // (at a '/') that is a scope.
    std::unordered_map<std::string_view, std::vector<int>> sites_of_scope;
    // The lengths of the scopes: a prefix of another length is not looked up (hashed) at all.
    std::vector<bool> scope_length;
    for (const int s : indices) {
      const std::string& scope = sites_[s].site.scope;
      if (scope.empty()) continue;
      sites_of_scope[scope].push_back(s);
      if (scope_length.size() <= scope.size()) scope_length.resize(scope.size() + 1);
      scope_length[scope.size()] = true;
    }
    if (sites_of_scope.empty()) continue;
    // Scopes several sites share (JAX 0.4 names every call of a cached jit(_uniform) after its
    // first): their instructions, for the dataflow to decide.
    std::map<std::string_view, std::vector<const HloInstruction*>> shared_scope;
    for (const HloInstruction* instr : computation->instructions) {
      if (site_of_.count(instr) != 0 || shared_anchors_.count(instr) != 0) continue;
      const std::string_view op_name = instr->metadata().op_name;
      const std::vector<int>* best = nullptr;
      std::string_view best_scope;
      for (size_t length = op_name.size(); length > 0 && best == nullptr;) {
        const bool may_be_scope = length < scope_length.size() && scope_length[length];
        const auto found =
            may_be_scope ? sites_of_scope.find(op_name.substr(0, length)) : sites_of_scope.end();
        if (found != sites_of_scope.end()) {
          best = &found->second;
          best_scope = found->first;
        }
        const size_t slash = op_name.rfind('/', length - 1);
        length = slash == std::string_view::npos ? 0 : slash;
      }
      if (best == nullptr || !RandomOnly(instr)) continue;
      if (best->size() == 1) {
        site_of_[instr] = best->front();
      } else {
        shared_scope[best_scope].push_back(instr);
      }
    }
    for (const auto& [scope, candidates] : shared_scope) {
      AssignByDataflow(sites_of_scope.at(scope), candidates);
    }
  }
  KeepConnectedMembers();
  FindHoistedProducers();
  for (size_t s = 0; s < sites_.size(); ++s) {
    const HloInstruction* anchor = sites_[s].anchor;
    if (anchor->opcode == Opcode::kWhile && !anchor->operands.empty()) {
      const HloInstruction* init = LoopInitTuple(anchor->operands[0]);
      if (init != nullptr && init->opcode == Opcode::kTuple) {
        site_of_.emplace(init, static_cast<int>(s));
      }
    }
    // Fusions computing the hash's first rounds belong to it; copies of its last rounds fused
    // into consumers are consumers.
    for (const HloInstruction* holder : sites_[s].holders) {
      if (shared_anchors_.count(holder) == 0 && RandomOnly(holder)) {
        site_of_.emplace(holder, static_cast<int>(s));
      }
    }
    // The wrapper calls around the anchor, and what they compute, belong to the site.
    for (const HloComputation* c = anchor->parent; c != nullptr && c != sites_[s].home;) {
      if (c->callers.size() != 1) break;
      const HloInstruction* caller = c->callers.front();
      site_of_.emplace(caller, static_cast<int>(s));
      wrapper_of_.emplace(caller, static_cast<int>(s));
      ForEachNested(c, [&](const HloInstruction* instr) {
        if (instr->parent != nullptr && !instr->parent->IsFusionComputation()) {
          site_of_.emplace(instr, static_cast<int>(s));
        }
      });
      c = caller->parent;
    }
    for (const ir::CalledComputation& called : anchor->called_computations()) {
      if (called.computation == nullptr || called.computation->IsFusionComputation()) continue;
      ForEachNested(called.computation, [&](const HloInstruction* instr) {
        if (instr->parent != nullptr && !instr->parent->IsFusionComputation()) {
          site_of_.emplace(instr, static_cast<int>(s));
        }
      });
    }
  }
  // An element taken out of a wrapper call's result (a compact get-tuple-element, without
  // metadata of its own) belongs to the wrapped site.
  for (const auto& [computation, indices] : by_computation) {
    for (const HloInstruction* instr : computation->instructions) {
      if (instr->opcode != Opcode::kGetTupleElement || instr->operands.empty() ||
          site_of_.count(instr) != 0) {
        continue;
      }
      const auto owner = wrapper_of_.find(instr->operands[0]);
      if (owner != wrapper_of_.end()) site_of_.emplace(instr, owner->second);
    }
  }
  for (const auto& [instr, s] : site_of_) sites_[s].members.insert(instr);
  for (SiteWork& work : sites_) {
    if (work.shares_anchor) work.members.insert(work.anchor);
  }
  for (SiteWork& work : sites_) {
    work.site.instruction_count = static_cast<int64_t>(work.members.size());
  }
}

}  // namespace spmdsim::passes::rng_internal
