// The heap: the temporaries' live intervals, the best-fit packing, the combined temp
// allocation, and the heaps of the other memory spaces.
#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "passes/memory/peak_memory_builder.h"

namespace spmdsim::passes::memory_internal {

void PeakMemoryBuilder::SimulateHeap() {
  const int64_t end_time = lr_.EndTime();
  std::vector<int32_t> to_assign;
  for (const HloValue& value : df_.values()) {
    if (IsHeapValue(value.id)) to_assign.push_back(value.id);
  }
  std::sort(to_assign.begin(), to_assign.end(), [&](int32_t a, int32_t b) {
    const TimeBound& ra = lr_.Range(a);
    const TimeBound& rb = lr_.Range(b);
    return std::tie(ra.start, ra.end, a) < std::tie(rb.start, rb.end, b);
  });
  range_end_.assign(df_.values().size(), -1);
  // Buffers recomputed late (options_.recompute_values) are not replayed value by value: each
  // becomes one or two copies, [start, last early read] and [first late read, end].
  const std::map<int32_t, BufferSplit> splits =
      active_space_ == 0 ? RecomputeSplits() : std::map<int32_t, BufferSplit>{};
  // (position, value named for the copy, size, free time) of each copy, by position.
  std::vector<std::tuple<int64_t, int32_t, int64_t, int64_t>> copies;
  for (const auto& [buffer_id, split] : splits) {
    if (split.early_end >= split.start) {
      copies.emplace_back(split.start, split.value, split.bytes, split.early_end);
    }
    copies.emplace_back(split.late_start, split.value, split.bytes, std::min(split.end, end_time));
  }
  std::stable_sort(copies.begin(), copies.end(),
                   [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  // The values defined and freed at each position, in to_assign's order: one array each,
  // counted into place (a vector per position costs an allocation per value).
  std::vector<int32_t> replayed;
  replayed.reserve(to_assign.size());
  for (int32_t id : to_assign) {
    if (splits.count(alias_.BufferIdOf(id)) != 0) {
      range_end_[id] = -2;  // never allocated: nothing shares its space
      continue;
    }
    replayed.push_back(id);
    range_end_[id] = lr_.Range(id).end;
  }
  const auto by_position = [&](auto position_of) {
    std::pair<std::vector<uint32_t>, std::vector<int32_t>> out;
    auto& [begin, ids] = out;
    begin.assign(static_cast<size_t>(end_time + 2), 0);
    for (int32_t id : replayed) ++begin[static_cast<size_t>(position_of(id)) + 1];
    for (size_t t = 0; t + 1 < begin.size(); ++t) begin[t + 1] += begin[t];
    ids.resize(replayed.size());
    std::vector<uint32_t> next(begin.begin(), begin.end() - 1);
    for (int32_t id : replayed) ids[next[static_cast<size_t>(position_of(id))]++] = id;
    return out;
  };
  const auto [defined_begin, defined] =
      by_position([&](int32_t id) { return lr_.Range(id).start; });
  const auto [freed_begin, freed] =
      by_position([&](int32_t id) { return std::min(lr_.Range(id).end, end_time); });
  // The copies' intervals by the position they are freed at, in the order they were made.
  std::multimap<int64_t, int32_t> copies_freed;
  size_t next_copy = 0;
  const auto first_copy_id = static_cast<int32_t>(df_.values().size());
  interval_of_value_.assign(df_.values().size(), -1);
  std::vector<int32_t> first_allocated(alias_.buffers().size(), -1);
  step_live_.assign(static_cast<size_t>(end_time + 1), 0);
  snapshot_tick_.assign(static_cast<size_t>(end_time + 1), 0);

  // Every heap tick taken at position t maps back to t.
  const auto record_tick = [&](int64_t t) {
    while (static_cast<int64_t>(tick_time_.size()) < recorder_.ticks()) tick_time_.push_back(t);
  };
  freed_now_.assign(df_.values().size(), false);
  std::vector<int32_t> frees;  // freed at t, less those TryShareOperand reuses (freed_now_)
  for (int64_t t = 0; t <= end_time; ++t) {
    const auto at = static_cast<size_t>(t);
    frees.assign(freed.begin() + freed_begin[at], freed.begin() + freed_begin[at + 1]);
    for (int32_t id : frees) freed_now_[static_cast<size_t>(id)] = true;
    for (uint32_t k = defined_begin[at]; k < defined_begin[at + 1]; ++k) {
      const int32_t id = defined[k];
      const HloValue& value = df_.value(id);
      const HloBuffer& buffer = alias_.BufferOf(id);
      const int64_t size = BufferBytes(buffer);
      if (first_allocated[buffer.id] >= 0) {
        interval_of_value_[id] =
            recorder_.ShareWith(id, interval_of_value_[first_allocated[buffer.id]], size);
        record_tick(t);
        continue;
      }
      bool shared = false;
      if (buffer.values.size() == 1) shared = TryShareOperand(value, t, size);
      if (!shared) {
        interval_of_value_[id] = recorder_.Alloc(id, size);
        first_allocated[buffer.id] = id;
      }
      record_tick(t);
    }
    for (; next_copy < copies.size() && std::get<0>(copies[next_copy]) <= t; ++next_copy) {
      const auto& [unused, id, size, end] = copies[next_copy];
      // A copy's interval id is past every value's: `first_copy_id + value`.
      const int32_t interval = recorder_.Alloc(first_copy_id + id, size);
      if (interval >= 0) copies_freed.emplace(end, interval);
      record_tick(t);
    }
    step_live_[at] = recorder_.live_bytes();
    snapshot_tick_[at] = recorder_.ticks();
    for (int32_t id : frees) {
      if (!freed_now_[static_cast<size_t>(id)]) continue;  // an output took its space
      recorder_.Free(interval_of_value_[id]);
      freed_now_[static_cast<size_t>(id)] = false;
    }
    if (!copies_freed.empty()) {
      const auto [first, last] = copies_freed.equal_range(t);
      for (auto it = first; it != last; ++it) recorder_.Free(it->second);
    }
    record_tick(t);
  }
  result_.max_live_temp_bytes = recorder_.peak_live_bytes();
}

std::map<int32_t, PeakMemoryBuilder::BufferSplit> PeakMemoryBuilder::RecomputeSplits() {
  std::map<int32_t, BufferSplit> splits;
  if (options_.recompute_values.empty() || !options_.late_reader) return splits;
  if (df_.values().size() > static_cast<size_t>(INT32_MAX / 2)) return splits;
  std::set<int32_t> candidates;
  std::map<int32_t, int32_t> named_by;
  for (const HloValue& value : df_.values()) {
    if (options_.recompute_values.count(df_.ValueName(value)) == 0 || !IsHeapValue(value.id))
      continue;
    const int32_t buffer = alias_.BufferIdOf(value.id);
    if (candidates.insert(buffer).second) named_by[buffer] = value.id;
  }
  for (int32_t buffer_id : candidates) {
    const HloBuffer& buffer = alias_.buffers()[buffer_id];
    std::set<const HloInstruction*> defining;
    for (int32_t id : buffer.values) defining.insert(df_.value(id).instruction);
    BufferSplit split;
    split.value = named_by[buffer_id];
    split.bytes = BufferBytes(buffer);
    split.start = INT64_MAX;
    int64_t late = INT64_MAX;
    bool ok = true;
    for (int32_t id : buffer.values) {
      if (!IsHeapValue(id)) {
        ok = false;
        break;
      }
      const TimeBound& range = lr_.Range(id);
      split.start = std::min(split.start, range.start);
      split.end = std::max(split.end, range.end);
      split.early_end = std::max(split.early_end, range.start);
      for (const HloUse& use : df_.value(id).uses) {
        if (defining.count(use.user) != 0) continue;
        const int64_t t = lr_.TimeOf(use.user);
        if (t < 0) continue;
        if (options_.late_reader(*use.user)) {
          late = std::min(late, t);
        } else {
          split.early_end = std::max(split.early_end, t);
        }
      }
    }
    if (!ok || late == INT64_MAX || late <= split.early_end + 1) continue;
    split.late_start = late;
    splits[buffer_id] = split;
    result_.recomputed.push_back(
        {df_.ValueName(df_.value(split.value)), split.bytes, split.early_end, split.late_start});
  }
  return splits;
}

const PeakMemoryBuilder::OperandOffers& PeakMemoryBuilder::OffersOf(const HloInstruction& user) {
  if (offers_.user == &user) return offers_;
  offers_.user = &user;
  offers_.values.clear();
  offers_.by_defining.clear();
  std::unordered_set<int32_t> seen;
  for (const HloInstruction* operand : user.operands) {
    const int32_t operand_top = df_.FirstSlot(operand);
    if (operand_top < 0) continue;
    for (int32_t operand_id : df_.ValueSet(operand_top)) {
      const HloInstruction* defining = df_.value(operand_id).instruction;
      // Only a value one of the user's operands defines is offered; a repeated one is refused
      // again, as it was the first time.
      if (defining != operand && sharing_memo_.operand_numbers.First(user, defining) < 0) continue;
      if (!seen.insert(operand_id).second) continue;
      offers_.by_defining[defining].push_back(static_cast<uint32_t>(offers_.values.size()));
      offers_.values.push_back(operand_id);
    }
  }
  return offers_;
}

bool PeakMemoryBuilder::TryShareOperand(const HloValue& value, int64_t t, int64_t size) {
  const HloInstruction* instr = value.instruction;
  if (instr->opcode == Opcode::kCopy) return false;
  const auto offer = [&](int32_t operand_id) {
    // The one load that refuses most operands first: only a heap value whose space is freed
    // at t has its end there (range_end_ is negative for every other value).
    if (range_end_[operand_id] != t) return false;
    if (alias_.BufferOf(operand_id).values.size() > 1) return false;
    if (!lr_.HasRange(operand_id) || !IsHeapValue(operand_id)) return false;
    if (!freed_now_[static_cast<size_t>(operand_id)]) return false;  // not freed at t
    const HloValue& operand_value = df_.value(operand_id);
    if (!CanShareOperandBufferWithUser(df_, *operand_value.instruction, operand_value.slot, *instr,
                                       value.slot, sharing_memo_, options_.platform.platform)) {
      return false;
    }
    recorder_.Free(interval_of_value_[operand_id]);
    freed_now_[static_cast<size_t>(operand_id)] = false;  // SimulateHeap does not free it again
    interval_of_value_[value.id] =
        recorder_.ShareWith(value.id, interval_of_value_[operand_id], size);
    range_end_[operand_id] = lr_.Range(value.id).end;
    return true;
  };
  if (instr->operands.size() <= kNarrowUser) {
    for (const HloInstruction* operand : instr->operands) {
      const int32_t operand_top = df_.FirstSlot(operand);
      if (operand_top < 0) continue;
      for (int32_t operand_id : df_.ValueSet(operand_top)) {
        const HloInstruction* defining = df_.value(operand_id).instruction;
        if (defining != operand && sharing_memo_.operand_numbers.First(*instr, defining) < 0) {
          continue;  // offered only where one of the user's operands defines it
        }
        if (offer(operand_id)) return true;
      }
    }
    return false;
  }
  // The rules name the few operands a wide user's output may take, where they can: a combined
  // all-reduce's output is offered its own operand, not all of them (N^2 questions otherwise).
  const OperandOffers& offers = OffersOf(*instr);
  const auto may = options_.offer_exhaustively
                       ? std::nullopt
                       : OperandsThatMayShare(df_, *instr, value.slot, sharing_memo_,
                                              options_.platform.platform);
  if (!may) {
    for (int32_t operand_id : offers.values) {
      if (offer(operand_id)) return true;
    }
    return false;
  }
  picked_offers_.clear();
  for (const HloInstruction* defining : *may) {
    const auto it = offers.by_defining.find(defining);
    if (it != offers.by_defining.end()) {
      picked_offers_.insert(picked_offers_.end(), it->second.begin(), it->second.end());
    }
  }
  std::sort(picked_offers_.begin(), picked_offers_.end());  // in the order they are offered
  picked_offers_.erase(std::unique(picked_offers_.begin(), picked_offers_.end()),
                       picked_offers_.end());
  for (uint32_t at : picked_offers_) {
    if (offer(offers.values[at])) return true;
  }
  return false;
}

HeapPackOptions PeakMemoryBuilder::PackOptions(int64_t space) {
  HeapPackOptions pack;
  pack.alignment = options_.platform.TempAlignment(space);
  pack.buffer_rank = XlaValueOrder();
  if (options_.platform.PacksInDefinitionOrder(space)) {
    pack.best_of_both = false;
    pack.order = PackingOrder::kDefinition;
    // The asynchronous copies memory-space assignment adds (an eviction's copy-start/copy-done
    // into this space) are placed after the program's own values.
    pack.placed_after_others.reserve(df_.values().size());
    for (const HloValue& value : df_.values()) {
      const Opcode opcode = value.instruction->opcode;
      pack.placed_after_others.push_back(opcode == Opcode::kCopyStart ||
                                         opcode == Opcode::kCopyDone);
    }
  }
  return pack;
}

void PeakMemoryBuilder::PackHeap() {
  packed_ = PackBestFit(recorder_.intervals(), PackOptions(active_space_));
  result_.heap_bytes = packed_.heap_size;
  result_.packing_order = PackingOrderName(packed_.chosen);
  result_.spatial_heap_bytes = packed_.spatial_heap_size;
  result_.temporal_heap_bytes = packed_.temporal_heap_size;
  if (!options_.record_placements) return;
  const auto& intervals = recorder_.intervals();
  for (size_t i = 0; i < intervals.size(); ++i) {
    if (static_cast<size_t>(intervals[i].buffer) >= df_.values().size()) continue;  // a copy
    const HloValue& value = df_.value(intervals[i].buffer);
    result_.placements.push_back(Placement{
        std::string(value.instruction->name) + ShapeIndexToString(df_.SlotIndex(value.slot)),
        packed_.offsets[i], intervals[i].size});
  }
}

void PeakMemoryBuilder::CombineTemp() {
  std::vector<CreatedAllocation> order;
  for (const CreatedAllocation& a : created_) {
    if (a.space == 0) order.push_back(a);
  }
  if (result_.heap_bytes > 0) order.push_back(CreatedAllocation{true, result_.heap_bytes, -1, 0});
  order.resize(order.size() + static_cast<size_t>(ThreadLocalAllocationCount()));
  size_t first = 0;
  size_t last = order.size();
  while (true) {
    while (first != last && !order[first].temp) ++first;
    if (first == last) break;
    --last;
    while (first != last && order[last].temp) --last;
    if (first == last) break;
    std::swap(order[first], order[last]);
    ++first;
  }
  const int64_t alignment = options_.platform.TempAlignment(0);
  int64_t size = 0;
  bool any = false;
  for (size_t k = first; k < order.size(); ++k) {
    const CreatedAllocation& a = order[k];
    if (!a.temp) continue;
    const int64_t base = any ? AlignUp(size, alignment) : 0;
    if (a.buffer < 0) heap_base_ = base;
    size = ir::SaturatingAdd(base, a.bytes);
    any = true;
  }
  result_.temp_bytes = size;
  // What the tables add to temp, the alignment between the pieces included.
  result_.tuple_table_bytes = size - result_.heap_bytes;
  for (Placement& placement : result_.placements) {
    placement.offset = ir::SaturatingAdd(placement.offset, heap_base_);
  }
}

int64_t PeakMemoryBuilder::ThreadLocalAllocationCount() const {
  const std::function<int64_t(const ir::Shape&)> slots = [&](const ir::Shape& shape) {
    int64_t n = 1;
    for (const ir::Shape& element : shape.tuple_shapes()) n += slots(element);
    return n;
  };
  int64_t count = 0;
  for (const ir::HloComputation* computation : module_.computations) {
    // A fusion's body is its kernel's code, not a thread-local call (a fusion calls it).
    if (df_.Context(computation) != CallContext::kEmbedded || computation->IsFusionComputation()) {
      continue;
    }
    for (const HloInstruction* instr : computation->instructions) {
      if (instr->opcode == Opcode::kBitcast || instr->opcode == Opcode::kGetTupleElement) {
        continue;  // they name their operand's buffer
      }
      count += instr->opcode == Opcode::kTuple ? 1 : slots(instr->shape);
    }
  }
  return count;
}

void PeakMemoryBuilder::SimulateOtherSpace(int64_t space) {
  active_space_ = space;
  SimulateHeap();
  const HeapPackResult packed = PackBestFit(recorder_.intervals(), PackOptions(space));
  MemorySpaceUsage usage;
  usage.space = space;
  usage.name = options_.platform.MemorySpaceName(space);
  usage.temp_bytes = packed.heap_size;
  if (space == 0) {
    // The default memory's temp allocation also holds the tuple tables.
    const int64_t heap = result_.heap_bytes;
    result_.heap_bytes = packed.heap_size;
    CombineTemp();
    usage.temp_bytes = result_.temp_bytes;
    result_.heap_bytes = heap;
    result_.temp_bytes = 0;
    result_.tuple_table_bytes = 0;
  }
  usage.max_live_bytes = recorder_.peak_live_bytes();
  for (const HloValue& value : df_.values()) usage.value_count += IsHeapValue(value.id) ? 1 : 0;
  result_.memory_spaces.push_back(std::move(usage));
  recorder_ = HeapRecorder();
  tick_time_.clear();
}

std::set<int64_t> PeakMemoryBuilder::OtherMemorySpaces() const {
  std::set<int64_t> spaces;
  for (const HloBuffer& buffer : alias_.buffers()) {
    if (kind_[buffer.id] != BufferKind::kTemp) continue;
    spaces.insert(BufferSpace(buffer));
  }
  if (options_.memory_space == 0) spaces.erase(0);
  spaces.erase(options_.memory_space);
  return spaces;
}

}  // namespace spmdsim::passes::memory_internal
