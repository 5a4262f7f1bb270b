// A site's shapes, consumers, buffers (from the dataflow and aliasing) and collectives.
#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "ir/c_unescape.h"
#include "ir/checked_math.h"
#include "ir/device_count.h"
#include "passes/memory/buffer_alias_analysis.h"
#include "passes/memory/buffer_dataflow_analysis.h"
#include "passes/memory/live_range_analysis.h"
#include "passes/rng/philox_expansion.h"
#include "passes/rng/random_provenance.h"
#include "passes/rng/rng_site_finder.h"
#include "passes/rng/rng_value_flow.h"
#include "passes/rng/threefry_hashes.h"
#include "passes/sharding/partition_offsets.h"

namespace spmdsim::passes::rng_internal {

namespace {

// `user` selects random words from the tuple the site's anchor returns (a generator's
// (state, bits), a wrapper call's results): its users read them (the selection only names them;
// XLA prints it as "%call#1").
bool SelectsAnchorWords(const SiteWork& work, const HloInstruction* member,
                        const HloInstruction* user) {
  return member == work.anchor && !member->shape.IsArray() &&
         user->opcode == Opcode::kGetTupleElement && IsU32Array(user->shape);
}

// An array shape itself; for a tuple, its element with the most elements (the first of those).
const ir::Shape* LargestArray(const ir::Shape& shape) {
  if (shape.IsArray()) return &shape;
  const ir::Shape* largest = nullptr;
  for (const ir::Shape& element : shape.tuple_shapes()) {
    if (element.IsArray() &&
        (largest == nullptr || element.ElementCount() > largest->ElementCount())) {
      largest = &element;
    }
  }
  return largest;
}

// The words a threefry custom call (alone or as the root of the fusion wrapping it) outputs.
int64_t HashCallWords(const HloInstruction& anchor) {
  const HloInstruction* call = &anchor;
  if (anchor.opcode == Opcode::kFusion) {
    const HloComputation* fused = anchor.Called("calls");
    call = fused != nullptr ? fused->root : nullptr;
  }
  if (call == nullptr || call->opcode != Opcode::kCustomCall) return 0;
  if (call->shape.IsArray()) return call->shape.ElementCount();
  int64_t words = 0;
  for (const ir::Shape& element : call->shape.tuple_shapes()) {
    if (element.IsArray()) words = SaturatingAdd(words, element.ElementCount());
  }
  return words;
}

}  // namespace

void RngSiteFinder::DescribeShapes(SiteWork& work) {
  RngSite& site = work.site;
  const HloInstruction* anchor = work.anchor;
  // The random tensor: the hash outputs handed to consumers; when the site hands over more
  // elements than the consumer produces (the global bits of replicated mode or rbg, sliced by
  // the consumer), the consumer's shape.
  const ir::Shape* tensor = nullptr;
  const ir::Shape* bits = nullptr;  // what the site hands over for `tensor`: its element type
  bool tensor_from_reader = false;  // `tensor` is a consumer's output, not the hash outputs
  int64_t tensor_device = 0;        // the device's elements `tensor` stands for
  if (!work.mode_decided) site.mode = CounterMode(work);
  // Replicated mode hashes the flat counters split in halves: a device's bits are twice the
  // lanes of its hash.
  const auto doubles = [&](int64_t elements) {
    return site.mode == SiteMode::kReplicated && work.lanes != nullptr &&
           elements == work.lanes->ElementCount();
  };
  int64_t largest = 0;
  int64_t gathered = 0;  // elements all-gathered (both halves of replicated mode's hash outputs)
  const auto owned = [&](const HloInstruction* i) {
    return work.members.count(i) != 0 || site_of_.count(i) != 0 || shared_anchors_.count(i) != 0;
  };
  for (const HloInstruction* member : work.members) {
    if (member->parent != work.home) continue;
    if (IsU32Array(member->shape)) largest = std::max(largest, member->shape.ElementCount());
    if (member->opcode == Opcode::kAllGather && IsU32Array(member->shape)) {
      gathered = SaturatingAdd(gathered, member->shape.ElementCount());
    }
    for (const HloInstruction* user : member->users) {
      if (work.members.count(user) != 0) continue;
      if (!ReadsSiteValue(work, member, user)) continue;
      // A multi-output consumer (XLA:TPU fuses the dropout with its neighbours) reads the bits
      // for its widest output.
      const ir::Shape* user_shape = LargestArray(user->shape);
      if (user_shape == nullptr && !IsCollectiveStart(*user)) continue;
      // The bits of a generator's (state, bits) tuple are read by the users of the element
      // selected from it: the selection only names them.
      // rng-bit-generator's bits, generated whole on every device: the consumers' slice is the
      // device's tensor.
      // A fusion hashing several draws: the element holding this draw's outputs.
      const bool selects =
          (work.site.mode == SiteMode::kRbg && SelectsAnchorWords(work, member, user)) ||
          (work.shares_anchor && member == work.anchor &&
           user->opcode == Opcode::kGetTupleElement && user->shape.IsArray());
      if (!selects && !member->shape.IsArray()) continue;
      const ir::Shape& handed = selects ? user->shape.get() : member->shape.get();
      if (handed.ElementCount() < 2) continue;
      std::vector<const HloInstruction*> readers{user};
      if (selects && !user->users.empty()) readers.assign(user->users.begin(), user->users.end());
      // What computes from the bits, past the exchanges and reshapes replicated mode puts
      // between the hash and the dropout: its output is the device's tensor when smaller than
      // what the site hands over (it keeps the device's part of gathered bits).
      std::vector<std::pair<const HloInstruction*, const HloInstruction*>> computing;
      for (const HloInstruction* reader : readers) {
        ComputingReadersOf(reader == user ? member : user, reader, owned, computing);
      }
      for (const auto& [reader, via] : computing) {
        if (work.members.count(reader) != 0) continue;
        // Another site computes from what the sites share (the iota of counters XLA keeps once
        // for all draws of one shape), not from this site's bits.
        const auto other = site_of_.find(reader);
        if (other != site_of_.end() && &sites_[other->second] != &work) continue;
        if (reader != work.anchor && shared_anchors_.count(reader) != 0) continue;
        const ir::Shape* read = reader == user ? user_shape : LargestArray(reader->shape);
        if (read == nullptr) continue;
        // An instruction computing from the values (the dropout) produces the device's tensor;
        // at equal sizes too (a half of replicated mode's hash outputs is as large).
        const bool from_reader = handed.ElementCount() >= read->ElementCount() &&
                                 !HandsValuesOn(*reader) && !IsMovingCollective(reader->opcode) &&
                                 !IsCollectiveStart(*reader);
        const ir::Shape* candidate =
            handed.ElementCount() > read->ElementCount() || from_reader ? read : &handed;
        // What a consumer computes from the values (the dropout) is the device's tensor and wins:
        // a device may hash more than it keeps (XLA:TPU's replicated lowering hashes other
        // devices' counters and sends them the outputs). Otherwise the largest device tensor
        // wins, counting replicated mode's hash outputs twice (each lane makes two values); the
        // candidates' order (of members, of users) never decides.
        const bool is_reader = from_reader && candidate == read;
        const int64_t elements = candidate->ElementCount();
        const int64_t device =
            !is_reader && doubles(elements) ? ir::SaturatingMul(elements, 2) : elements;
        // At equal counts: the one with more dimensions.
        const auto rank = [](const ir::Shape* shape, int64_t n, bool computed) {
          return std::make_tuple(computed, n, shape->dims().size(), shape->dims());
        };
        if (tensor == nullptr ||
            rank(candidate, device, is_reader) > rank(tensor, tensor_device, tensor_from_reader)) {
          tensor = candidate;
          bits = &handed;
          tensor_from_reader = is_reader;
          tensor_device = device;
        }
      }
    }
  }
  // A hash fused with its consumer: the bits never leave the fusion; their shape is the lanes'.
  const ir::Shape* lanes = work.lanes;
  if (anchor->opcode == Opcode::kFusion && !BitsLeave(work)) {
    if (lanes == nullptr) lanes = HashLaneShape(anchor->Called("calls"));
    tensor = lanes;
    tensor_from_reader = false;
    bits = nullptr;
  }
  // Partitionable threefry hashes one lane per element of the tensor (JAX's bits are x0 ^ x1 of
  // the lanes iota_2x32_shape numbers): the lanes are the device's tensor, whatever a consumer
  // makes of the bits (a reader may keep part of a mask).
  if (site.mode == SiteMode::kPartitionable && lanes != nullptr &&
      site.kind == SiteKind::kThreefryExpanded) {
    tensor = lanes;
    tensor_from_reader = false;
  }
  // The hash's (x0, x1) outputs themselves: replicated mode's bits are both halves.
  bool both_halves = false;
  if (tensor == nullptr && anchor->shape.IsTuple() && anchor->shape.tuple_shapes().size() >= 2) {
    tensor = &anchor->shape.tuple_shapes()[1];
    both_halves = site.mode == SiteMode::kReplicated && tensor->IsArray() &&
                  anchor->shape.tuple_shapes()[0] == *tensor;
  }
  if (tensor == nullptr && anchor->shape.IsArray()) tensor = &anchor->shape.get();
  if (tensor != nullptr) {
    site.shape = tensor->dims();
    site.local_elements = tensor->ElementCount();
    if (both_halves && tensor->rank() == 1) {
      site.local_elements = ir::SaturatingMul(site.local_elements, 2);
      site.shape = {site.local_elements};
    }
    if (anchor->opcode == Opcode::kRng) {
      site.dtype =
          std::string(ir::PrimitiveTypeName((bits != nullptr ? bits : tensor)->element_type()));
    } else if (anchor->opcode == Opcode::kCustomCall) {
      // What the call outputs (a consumer may hand on a mask computed from it).
      const ir::Shape* output = LargestArray(anchor->shape);
      site.dtype = std::string(ir::PrimitiveTypeName(
          (output != nullptr ? output : (bits != nullptr ? bits : tensor))->element_type()));
    }
  }
  if (site.purpose != SitePurpose::kBits && site.mode == SiteMode::kReplicated &&
      work.counters.size() == 2 && work.counters[0]->opcode == Opcode::kConstant) {
    site.mode = SiteMode::kUnknown;
  }
  site.global_elements = site.local_elements;
  if (site.mode == SiteMode::kPartitionable) {
    site.shards = PartitionShards(work);
    site.shards_known = !work.offsets_elided;
    site.global_elements = ir::SaturatingMul(site.local_elements, site.shards);
    // The cu_threefry2x32 call is not partitioned: each of its two outputs is the global
    // tensor's counters hashed (the bits are their xor).
    if (site.kind == SiteKind::kThreefryCustomCall) {
      const int64_t halves = HashCallWords(*anchor) / 2;
      if (halves > site.global_elements && site.local_elements > 0) {
        site.global_elements = halves;
        site.shards = halves / site.local_elements;
      }
    }
  } else if (site.mode == SiteMode::kReplicated || site.mode == SiteMode::kRbg) {
    // Replicated mode hashes the flat counters split in halves: each pair of lanes makes two
    // values, so a device's bits are twice its lanes. Unrolled (GPU/TPU), XLA partitions the
    // lanes like any elementwise op and offsets each device's counters.
    const int64_t slices = site.kind == SiteKind::kThreefryExpanded ? EvaluatedShards(work) : 0;
    site.shards_known = !work.offsets_elided;
    if (site.mode == SiteMode::kReplicated && lanes != nullptr && !tensor_from_reader &&
        site.local_elements == lanes->ElementCount()) {
      site.local_elements = ir::SaturatingMul(site.local_elements, 2);
      site.shape = {site.local_elements};
    }
    // rng-bit-generator is not partitioned: every device generates the whole array (the
    // generator's bits output) and its consumers slice it.
    int64_t generated = site.mode == SiteMode::kRbg && anchor->shape.IsTuple() &&
                                anchor->shape.tuple_shapes().size() >= 2 &&
                                anchor->shape.tuple_shapes()[1].IsArray()
                            ? anchor->shape.tuple_shapes()[1].ElementCount()
                            : 0;
    // The cu_threefry2x32 call is not partitioned: it hashes the global counters on every
    // device, both halves of its outputs.
    if (site.kind == SiteKind::kThreefryCustomCall) generated = HashCallWords(*anchor);
    const int64_t counted =
        site.mode == SiteMode::kReplicated && site.kind == SiteKind::kThreefryExpanded
            ? ReplicatedCounterElements(work)
            : 0;
    site.shards_known = !work.offsets_elided;
    if (counted > 0) {
      site.shards_known = true;
      site.global_elements = std::max(site.local_elements, counted);
      site.shards = site.local_elements > 0 ? site.global_elements / site.local_elements : 1;
    } else if (slices > 1) {
      site.shards = slices;
      site.global_elements = ir::SaturatingMul(site.local_elements, slices);
    } else {
      site.global_elements = std::max({site.local_elements, largest, gathered, generated});
      site.shards = site.local_elements > 0 ? site.global_elements / site.local_elements : 1;
    }
  }
  // A sharded rng-bit-generator: XLA's partitioner has each shard generate its own piece from
  // the state plus the shard's offset (a device-position value added into the state), so the
  // tensor is the pieces of the distinct offsets. A key the user derived from the device's
  // position (shard_map) makes each device's draw its own instead.
  if (anchor->opcode == Opcode::kRngBitGenerator && !anchor->operands.empty() &&
      !site.key_depends_on_partition) {
    const int64_t slices = DistinctDeviceSlices(DeviceOffsets({anchor->operands[0]}),
                                                module_.num_partitions, module_.replica_count);
    if (slices > 1 && site.local_elements > 0) {
      site.shards = slices;
      site.global_elements = ir::SaturatingMul(site.local_elements, slices);
      site.shards_known = true;
    }
  }
  if (SizableFromSource(site)) SizeFromUnpartitionedDraw(site);
  // The cu_threefry2x32 call is not partitioned: its counters are the global ones, they tell no
  // split.
  if (site.mode == SiteMode::kPartitionable && site.shards_known &&
      site.kind != SiteKind::kThreefryCustomCall) {
    work.hash_shards = HashShards(work);
  }
  // Expanded Philox: every device computes the global words and keeps its slice.
  if (work.philox) {
    site.dtype = "u32";
    site.local_elements = work.philox->kept_words;
    site.global_elements = work.philox->generated_words;
    site.shape = work.philox->kept_shape != nullptr ? work.philox->kept_shape->dims()
                                                    : std::vector<int64_t>{site.global_elements};
    site.shards = site.local_elements > 0 ? site.global_elements / site.local_elements : 1;
  }
}

void RngSiteFinder::SizeFromUnpartitionedDraw(RngSite& site) {
  const auto& draws = options_.unpartitioned_draws;
  size_t best_length = 0;
  int64_t global = 0;
  bool agree = true;
  for (const RngSiteOptions::UnpartitionedDraw& draw : draws) {
    const std::string_view name = draw.op_name;
    const bool prefix = !name.empty() && site.op_name.starts_with(name) &&
                        (site.op_name.size() == name.size() || site.op_name[name.size()] == '/');
    if (!prefix || name.size() < best_length) continue;
    if (name.size() > best_length) {
      best_length = name.size();
      global = draw.global_elements;
      agree = true;
    } else if (draw.global_elements != global) {
      agree = false;  // two draws of one call site with different sizes: not decided
    }
  }
  if (best_length == 0 || !agree || site.local_elements <= 0 || global < site.local_elements ||
      global % site.local_elements != 0) {
    return;
  }
  site.global_elements = global;
  site.shards = global / site.local_elements;
  site.shards_known = true;
  site.shards_from_unpartitioned = true;
}

void RngSiteFinder::DescribeConsumers(SiteWork& work) {
  std::set<std::string> seen;
  std::set<const HloInstruction*> consumer_set;
  std::set<const HloInstruction*>& crossing = work.crossing;
  for (const HloInstruction* member : work.members) {
    // The readers of the member's values, with the collective they came through (replicated
    // threefry gathers or exchanges hash outputs before the dropout reads them).
    std::vector<std::pair<const HloInstruction*, const HloInstruction*>> readers;
    for (const HloInstruction* user : member->users) {
      if (work.members.count(user) != 0 || !ReadsSiteValue(work, member, user)) continue;
      if (SelectsAnchorWords(work, member, user) && !user->users.empty()) {
        for (const HloInstruction* reader : user->users) readers.emplace_back(reader, nullptr);
        continue;
      }
      if (!IsMovingCollective(user->opcode) && !IsCollectiveStart(*user)) {
        readers.emplace_back(user, nullptr);
        continue;
      }
      std::vector<const HloInstruction*> past;
      for (size_t k = 0; k < user->operands.size(); ++k) {
        if (user->operands[k] == member) {
          ReadersPastCollective(*user, static_cast<int64_t>(k), past);
        }
      }
      if (past.empty()) readers.emplace_back(user, nullptr);
      for (const HloInstruction* reader : past) readers.emplace_back(reader, user);
    }
    // What computes from the values, past reshapes, copies and further exchanges (XLA:TPU's
    // all-to-all of hash outputs is reshape, all-to-all, reduce, reshape), each with the direct
    // reader that holds the member's buffer.
    const auto owned = [&](const HloInstruction* i) {
      return work.members.count(i) != 0 || site_of_.count(i) != 0 || shared_anchors_.count(i) != 0;
    };
    std::vector<std::tuple<const HloInstruction*, const HloInstruction*, const HloInstruction*>>
        computing;
    for (const auto& [reader, through] : readers) {
      std::vector<std::pair<const HloInstruction*, const HloInstruction*>> found;
      ComputingReaders(reader, through, owned, found);
      for (const auto& [user, via] : found) {
        if (work.members.count(user) != 0) continue;  // back into the site's own instructions
        computing.emplace_back(user, via, through != nullptr ? through : reader);
      }
    }
    for (const auto& [user, via, direct] : computing) {
      bool select = false;
      bool compare = false;
      bool log = false;
      const auto look = [&](const HloInstruction* i) {
        select |= i->opcode == Opcode::kSelect;
        compare |= i->opcode == Opcode::kCompare;
        log |= i->opcode == Opcode::kLog || i->opcode == Opcode::kErf || i->opcode == Opcode::kSqrt;
      };
      look(user);
      if (user->opcode == Opcode::kFusion) ForEachNested(user->Called("calls"), look);
      // XLA may fuse the bernoulli's compare into the hash: the member hands over the mask, and
      // a consumer selecting with it completes the dropout.
      const bool mask_in_member = ComputesMask(*member);
      // Another site's member (its key derivation or counters, reading the partition id or a
      // key the sites share) does not read this site's bits: not a consumer of them.
      const bool other_site = site_of_.count(user) != 0 || shared_anchors_.count(user) != 0;
      if (user->opcode != Opcode::kTuple && user->opcode != Opcode::kWhile) {
        if (!other_site) consumer_set.insert(user);
        // The member's own buffer is held until its direct reader (a collective's copy is a
        // buffer of its own).
        if ((member != work.anchor || BitsLeave(work)) && CrossesIntoBackward(member, direct)) {
          crossing.insert(member);
        }
      }
      std::string what;
      const auto other = site_of_.find(user);
      if (other != site_of_.end()) {
        what = "key of " + sites_[other->second].site.name;
      } else if (shared_anchors_.count(user) != 0) {
        what = "key of " + std::string(user->name);
      } else if ((select && (compare || mask_in_member)) || (compare && SelectsWithMask(*user))) {
        what = "dropout (mask and select)";
      } else if (compare || mask_in_member) {
        what = "mask (compare)";
      } else if (log) {
        what = "normal";
      } else if (user->opcode == Opcode::kTuple || user->opcode == Opcode::kWhile) {
        what = "loop state";
      } else {
        what = work.site.draws.empty() ? "bits" : work.site.draws;
      }
      what +=
          " in " + std::string(user->name) + " (" +
          std::string(SitePhaseName(RngPhase(user->metadata().op_name))) +
          (via != nullptr ? ", through " + std::string(via->name) : "") +
          (mask_in_member && what.rfind("key of", 0) != 0 ? ", mask computed with the hash)" : ")");
      if (what.rfind("dropout (mask and select)", 0) == 0 && user != work.anchor) {
        work.dropout_readers.push_back(user);
      }
      if (seen.insert(what).second) work.site.consumers.push_back(what);
    }
  }
  // A hash fused with its consumer: the consumer is the fusion itself. Where the bits also leave
  // it (XLA:GPU fuses the backward's mask and select with the hash and hands the bits to other
  // fusions too), only a dropout completed inside is a consumer.
  if (work.anchor->opcode == Opcode::kFusion) {
    const bool leaves = BitsLeave(work);
    bool select = false;
    bool compare = false;
    ForEachNested(work.anchor->Called("calls"), [&](const HloInstruction* i) {
      select |= i->opcode == Opcode::kSelect;
      compare |= i->opcode == Opcode::kCompare;
    });
    const std::string what = select && compare ? "dropout (mask and select)"
                             : leaves          ? ""
                             : compare         ? "mask (compare)"
                                       : (work.site.draws.empty() ? "bits" : work.site.draws);
    if (!what.empty()) {
      const std::string consumer = what + " in " + std::string(work.anchor->name) + " (" +
                                   std::string(SitePhaseName(work.site.phase)) +
                                   ", fused with the hash)";
      if (seen.insert(consumer).second) work.site.consumers.push_back(consumer);
      consumer_set.insert(work.anchor);
    }
  }
  std::sort(work.site.consumers.begin(), work.site.consumers.end());
  work.site.consumer_count = static_cast<int64_t>(consumer_set.size());
}

void RngSiteFinder::DescribeDropoutTensor(SiteWork& work) {
  RngSite& site = work.site;
  // The cu_threefry2x32 call is not partitioned in either mode: its outputs are global and the
  // dropouts take the device's part.
  if ((site.mode != SiteMode::kReplicated && site.kind != SiteKind::kThreefryCustomCall) ||
      work.dropout_readers.empty()) {
    return;
  }
  const auto from_site = [&](const HloInstruction* operand) {
    return FromSite(operand, work.members);
  };
  const ir::Shape* tensor = nullptr;
  for (const HloInstruction* reader : work.dropout_readers) {
    const ir::Shape* shape = DropoutSelectShape(*reader, from_site);
    if (shape != nullptr && shape->ElementCount() > 1 &&
        (tensor == nullptr || shape->ElementCount() > tensor->ElementCount())) {
      tensor = shape;
    }
  }
  if (tensor == nullptr) return;
  // A select over more elements than the draw has broadcasts the mask (flax nnx's Dropout with
  // broadcast_dims: a [B, 1, D] mask selecting in [B, S, D]): not the bits' tensor.
  if (site.shards_known && site.global_elements > 0 &&
      tensor->ElementCount() > site.global_elements) {
    return;
  }
  // The same elements: the bits' flat pieces (XLA:TPU moving a half's pieces of one row by
  // collective-permutes and selects) make the dropout's tensor, whose shape is the select's.
  if (tensor->ElementCount() == site.local_elements) {
    if (site.shape.size() <= 1 && tensor->rank() >= 2) site.shape = tensor->dims();
    return;
  }
  site.shape = tensor->dims();
  site.local_elements = tensor->ElementCount();
  site.global_elements = std::max(site.global_elements, site.local_elements);
  site.shards = site.global_elements / site.local_elements;
}

int RngSiteFinder::MemberSite(const DataflowAnalysis& dataflow, const HloValue& value) {
  int site = -1;
  const auto shared = shared_anchors_.find(value.instruction);
  if (shared != shared_anchors_.end()) {
    // An output of a fusion hashing several draws: the site of the hash it comes from, when
    // that output is random (not a consumer fused in).
    const ShapeIndex index = dataflow.SlotIndex(value.slot);
    if (index.empty()) return -1;  // the tuple of outputs
    if (index[0] >= 0 && index[0] < static_cast<int64_t>(shared->second.size())) {
      site = shared->second[index[0]];
    }
    if (site >= 0 && !OutputIsRandom(sites_[site], index[0])) site = -1;
  } else {
    const auto member = site_of_.find(value.instruction);
    if (member != site_of_.end()) site = member->second;
  }
  // What a collective delivers of a site's values (XLA combines the gathers of several sites
  // into one all-gather-start): the site of the operand it moves.
  if (site < 0) {
    const HloInstruction* moved = MovedOperand(*value.instruction, dataflow.SlotIndex(value.slot));
    const auto member = moved != nullptr ? site_of_.find(moved) : site_of_.end();
    if (member != site_of_.end()) site = member->second;
  }
  // What XLA hoisted out of the site's loop (a scanned layer's counters and their exchange):
  // computed once in a caller, but the site's buffers all the same.
  if (site < 0) {
    const auto hoisted = hoisted_of_.find(value.instruction);
    if (hoisted != hoisted_of_.end()) site = hoisted->second;
  }
  return site;
}

void RngSiteFinder::MeasureBuffers(const DataflowAnalysis& dataflow, const AliasAnalysis& alias,
                                   const LiveRangeAnalysis* live_ranges) {
  // buffer id -> (site, first member value)
  std::map<int32_t, std::pair<int, int32_t>> owner;
  // Values defined outside any site, with their buffers: a site's buffer holding one is not the
  // site's unless the value is computed from constants alone (checked below, for those buffers
  // only).
  std::vector<std::pair<int32_t, const HloInstruction*>> outside;
  // The site of each draw the provenance found (random_provenance.h): the site anchored where
  // the draw's hash starts (its rotation, the loop, the custom call, the generator), or the
  // fusion holding its rounds; sites drawing bits first (XLA may fuse a key derivation beside
  // the bits it keys).
  if (sites_.empty()) return;  // no random numbers: nothing to measure
  const RandomProvenance& provenance = analyses_.Provenance();
  std::unordered_map<const HloInstruction*, int32_t> anchor_draw;
  for (const RandomSource& source : provenance.sources()) {
    anchor_draw.try_emplace(source.anchor, source.draw);
  }
  std::unordered_map<int32_t, int> source_site;
  std::set<int> keys_only;  // bits sites mapped to a draw whose bits only make keys
  for (const bool bits : {true, false}) {
    for (size_t s = 0; s < sites_.size(); ++s) {
      const SiteWork& work = sites_[s];
      if ((work.site.purpose == SitePurpose::kBits) != bits) continue;
      std::vector<int32_t> draws;
      if (work.rotation != nullptr) draws.push_back(provenance.DrawStartingAt(work.rotation));
      if (draws.empty() || draws[0] < 0) {
        draws = {provenance.DrawStartingAt(work.anchor)};
        if (const auto a = anchor_draw.find(work.anchor); draws[0] < 0 && a != anchor_draw.end()) {
          draws = {a->second};
        }
        if (draws[0] < 0 && !work.shares_anchor) draws = provenance.DrawsHeldBy(work.anchor);
      }
      for (const int32_t draw : draws) {
        if (draw < 0) continue;
        source_site.try_emplace(draw, static_cast<int>(s));
        if (bits && !provenance.sources()[static_cast<size_t>(draw)].random) {
          keys_only.insert(static_cast<int>(s));
        }
      }
    }
  }
  // A hash whose bits only key other draws (or leave the step as a key) derives keys, whatever
  // its op_name says (unsafe_rbg splits and folds keys with rng-bit-generator itself).
  for (const int s : keys_only) {
    bool random = false;
    for (const auto& [draw, site] : source_site) {
      random |= site == s && provenance.sources()[static_cast<size_t>(draw)].random;
    }
    if (!random) sites_[static_cast<size_t>(s)].site.purpose = SitePurpose::kKey;
  }
  // With the provenance's draws, a site's values are exactly its draw's random values (bits,
  // what is derived from them alone, its counters); without (a module whose hashes the
  // provenance does not see, e.g. calls before optimizations), the site's members.
  const bool by_provenance = !source_site.empty();
  for (const HloValue& value : dataflow.values()) {
    const int32_t buffer = alias.BufferIdOf(value.id);
    int site = -1;
    if (by_provenance) {
      if (provenance.IsRandom(value.id)) {
        const auto of = source_site.find(provenance.Source(value.id));
        if (of != source_site.end()) site = of->second;
      }
      if (site < 0) {
        outside.emplace_back(buffer, value.instruction);
        continue;
      }
      if (value.instruction->opcode == Opcode::kConstant) continue;  // not a temp buffer in XLA
    } else {
      site = MemberSite(dataflow, value);
      if (site < 0) {
        outside.emplace_back(buffer, value.instruction);
        continue;
      }
      if (value.instruction->opcode == Opcode::kConstant) continue;  // not a temp buffer in XLA
      // The device's position offsets the counters but is no value of the random-number site.
      if (value.instruction->opcode == Opcode::kPartitionId ||
          value.instruction->opcode == Opcode::kReplicaId) {
        continue;
      }
      // The output of a hash fused with its consumer is the consumer's, not random bits.
      if (value.instruction == sites_[site].anchor && !sites_[site].shares_anchor &&
          !BitsLeave(sites_[site])) {
        continue;
      }
    }
    value_site_[value.id] = site;
    // Name the buffer after a value in the anchor's computation when it has one (the counters
    // a loop starts from), else after its first value.
    const auto known = owner.find(buffer);
    if (known == owner.end()) {
      owner[buffer] = {site, value.id};
    } else if (value.instruction->parent == sites_[site].home &&
               dataflow.value(known->second.second).instruction->parent != sites_[site].home &&
               !value.is_phi) {
      known->second.second = value.id;
    }
  }
  std::set<int32_t> foreign;  // site buffers that also hold another computation's data
  for (const auto& [buffer, instr] : outside) {
    if (owner.count(buffer) != 0 && foreign.count(buffer) == 0 && !FromConstantsOnly(instr)) {
      foreign.insert(buffer);
    }
  }
  // Held across the start of the backward pass. Scheduled, it is a live-range fact: one of the
  // buffer's values is defined before the boundary's position in the flattened schedule and
  // still live at it (XLA may schedule a backward site's counters, or their exchange, early in
  // the forward). Unscheduled, the buffers holding what a crossing member reads out (a loop's
  // result is its state buffer).
  std::set<int32_t> held;
  if (live_ranges != nullptr) {
    std::vector<int64_t> boundaries;
    for (const auto& [computation, start] : backward_start_) {
      const int64_t time = live_ranges->TimeOf(start);
      if (time >= 0) boundaries.push_back(time);
    }
    for (const auto& [id, site] : value_site_) {
      if (!live_ranges->HasRange(id)) continue;
      const TimeBound& range = live_ranges->Range(id);
      for (const int64_t boundary : boundaries) {
        if (range.start < boundary && range.end >= boundary) held.insert(alias.BufferIdOf(id));
      }
    }
  } else {
    for (const SiteWork& work : sites_) {
      for (const HloInstruction* member : work.crossing) {
        const int32_t slot = dataflow.FirstSlot(member);
        if (slot < 0) continue;
        for (int32_t id : dataflow.ValueSet(slot)) held.insert(alias.BufferIdOf(id));
      }
    }
  }
  // What each site computes from its hash: the anchor, its holders and everything reached from
  // them through users.
  std::map<int, std::unordered_set<const HloInstruction*>> downstream;
  const auto computed_from_hash = [&](int s, const HloInstruction* instr) {
    auto [it, fresh] = downstream.try_emplace(s);
    if (fresh) {
      std::vector<const HloInstruction*> pending{sites_[s].anchor};
      pending.insert(pending.end(), sites_[s].holders.begin(), sites_[s].holders.end());
      while (!pending.empty() && it->second.size() < kMaxDownstreamWalk) {
        const HloInstruction* at = pending.back();
        pending.pop_back();
        if (!it->second.insert(at).second) continue;
        pending.insert(pending.end(), at->users.begin(), at->users.end());
      }
    }
    return it->second.count(instr) != 0;
  };
  for (const auto& [buffer, who] : owner) {
    if (foreign.count(buffer) != 0) continue;
    const HloValue& value = dataflow.value(who.second);
    const ir::Shape& shape = dataflow.SlotShape(value.slot);
    if (!shape.IsArray()) continue;
    if (alias.buffers()[buffer].live_out) continue;
    SiteWork& work = sites_[who.first];
    RngSiteBuffer out;
    out.value = dataflow.ValueName(value);
    out.opcode = std::string(value.instruction->opcode_name());
    out.shape = ShapeText(shape);
    out.op_name = ir::CUnescape(value.instruction->metadata().op_name);
    if (out.op_name.empty()) out.op_name = work.site.op_name;  // loop-body copies carry none
    out.bytes = shape.ByteSize();
    out.role = BufferRole(value.instruction, work.anchor, work.home);
    // Hoisted out of the site's loop: counters the caller computes, not the loop's copies.
    if (out.role == SiteBufferRole::kLoopTemporaries && hoisted_of_.count(value.instruction)) {
      out.role = SiteBufferRole::kCounters;
    }
    // What the provenance says the buffer holds, where the instruction alone does not tell:
    // a generator's bits computed in the computation it was expanded into (XLA:CPU's %rng.N)
    // are bits, not a loop's copies; a draw's counters anywhere are counters.
    if (by_provenance) {
      const RandomKind kind = provenance.Kind(value.id);
      if (kind == RandomKind::kBits && work.site.kind != SiteKind::kThreefryRolled &&
          IsCounterRole(out.role)) {
        out.role = SiteBufferRole::kHashOutputsOrBits;
      } else if (kind == RandomKind::kCounters && !IsCounterRole(out.role)) {
        out.role = SiteBufferRole::kCounters;
      } else if (kind == RandomKind::kDerived && shape.element_type() == ir::PrimitiveType::kPred) {
        out.role = SiteBufferRole::kMask;
      }
    }
    // Computed before the hash by JAX's key derivation (XLA:TPU leaves a fold_in's scalar rounds
    // unfused in the dropout's scope): the key, neither the site's counters nor its bits.
    if (out.role == SiteBufferRole::kDerived && IsKeyDerivationOpName(out.op_name) &&
        !computed_from_hash(who.first, value.instruction)) {
      continue;
    }
    for (int32_t id : alias.buffers()[buffer].values) {
      out.values.push_back(dataflow.ValueName(dataflow.value(id)));
    }
    out.held_across = held.count(buffer) != 0;
    work.site.materialized_bytes = SaturatingAdd(work.site.materialized_bytes, out.bytes);
    if (IsCounterRole(out.role)) {
      work.site.counter_bytes = SaturatingAdd(work.site.counter_bytes, out.bytes);
    } else {
      work.site.bits_bytes = SaturatingAdd(work.site.bits_bytes, out.bytes);
    }
    work.site.buffers.push_back(std::move(out));
  }
  for (SiteWork& work : sites_) {
    std::stable_sort(
        work.site.buffers.begin(), work.site.buffers.end(),
        [](const RngSiteBuffer& a, const RngSiteBuffer& b) { return a.bytes > b.bytes; });
  }
}

}  // namespace spmdsim::passes::rng_internal
