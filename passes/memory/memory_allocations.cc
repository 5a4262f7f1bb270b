// Which allocation each buffer takes, in XLA's order: arguments, outputs, constants, tuple
// tables, temporaries reused in allocations they do not overlap (XLA's BufferAssigner).
#include <algorithm>
#include <boost/sort/pdqsort/pdqsort.hpp>
#include <climits>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "passes/memory/peak_memory_builder.h"

namespace spmdsim::passes::memory_internal {

void PeakMemoryBuilder::ClassifyBuffers() {
  const auto& buffers = alias_.buffers();
  kind_.resize(buffers.size());
  for (const HloBuffer& buffer : buffers) {
    bool constant = false;
    bool argument = false;
    bool tuple = false;
    for (int32_t id : buffer.values) {
      const HloValue& value = df_.value(id);
      const HloInstruction* instr = value.instruction;
      constant |= instr->opcode == Opcode::kConstant;
      argument |= instr->opcode == Opcode::kParameter && instr->parent == module_.entry;
      tuple |= df_.SlotShape(value.slot).IsTuple();
    }
    BufferKind kind = BufferKind::kTemp;
    if (constant) {
      kind = BufferKind::kConstant;
    } else if (argument) {
      kind = BufferKind::kArgument;
    } else if (tuple) {
      kind = buffer.live_out ? BufferKind::kTupleOutput : BufferKind::kTupleTemp;
    } else if (buffer.live_out) {
      kind = BufferKind::kOutput;
    }
    kind_[buffer.id] = kind;
    const int64_t bytes = BufferBytes(buffer);
    switch (kind) {
      case BufferKind::kArgument:
        result_.argument_bytes = ir::SaturatingAdd(result_.argument_bytes, bytes);
        if (buffer.live_out) {
          result_.alias_bytes = ir::SaturatingAdd(result_.alias_bytes, bytes);
          result_.output_bytes = ir::SaturatingAdd(result_.output_bytes, bytes);
        }
        break;
      case BufferKind::kTupleOutput:
      case BufferKind::kOutput:
        result_.output_bytes = ir::SaturatingAdd(result_.output_bytes, bytes);
        break;
      case BufferKind::kTemp:
        ++result_.temp_buffer_count;
        break;
      default:
        break;
    }
  }
}

void PeakMemoryBuilder::AddValues(Allocation& allocation, std::span<const int32_t> ids) const {
  for (int32_t id : ids) {
    if (!lr_.HasRange(id)) {
      allocation.unranged = true;
      continue;
    }
    if (allocation.readonly) continue;  // nothing is placed beside it
    allocation.timeline.Add(lr_.Range(id));
    touching_->Add(id, lr_.Range(id), allocation.index);
  }
}

PeakMemoryBuilder::PostOrderPositions::PostOrderPositions(size_t id_bound)
    : at(id_bound, -1), state(id_bound, 0), owner(id_bound, -1) {}

void PeakMemoryBuilder::AppendPostOrder(const ir::HloComputation* computation, int32_t number,
                                        PostOrderPositions& positions, int64_t& next) {
  // The marks start at 0 (a computation is walked once per PostOrderPositions), and no other
  // computation's walk touches this one's: operands and control predecessors are in the same
  // computation.
  const auto mark = [&](const HloInstruction* instr) -> uint8_t& {
    return positions.state[static_cast<size_t>(instr->id)];
  };
  const int64_t first = next;
  std::vector<const HloInstruction*> stack;
  for (const HloInstruction* start : computation->instructions) {
    positions.owner[static_cast<size_t>(start->id)] = number;
    if (!start->users.empty() || mark(start) != 0) continue;
    stack.push_back(start);
    while (!stack.empty()) {
      const HloInstruction* current = stack.back();
      uint8_t& state = mark(current);
      if (state == 2) {
        stack.pop_back();
        continue;
      }
      if (state == 1) {
        stack.pop_back();
        state = 2;
        positions.at[static_cast<size_t>(current->id)] = next++;
        continue;
      }
      state = 1;
      for (auto op = current->operands.rbegin(); op != current->operands.rend(); ++op) {
        if (mark(*op) == 0) stack.push_back(*op);
      }
      for (const HloInstruction* pred : current->control_predecessors()) {
        if (mark(pred) == 0) stack.push_back(pred);
      }
    }
  }
  // What no walk reached (only on a cycle, which XLA's verifier refuses) follows in text order.
  if (next - first == static_cast<int64_t>(computation->instructions.size())) return;
  for (const HloInstruction* instr : computation->instructions) {
    if (positions.At(instr) < 0) positions.at[static_cast<size_t>(instr->id)] = next++;
  }
}

std::vector<const ir::HloComputation*> PeakMemoryBuilder::CallersFirst() const {
  std::vector<const ir::HloComputation*> post_order;
  std::unordered_map<const ir::HloComputation*, bool> visited;
  std::function<void(const ir::HloComputation*)> visit = [&](const ir::HloComputation* c) {
    if (visited[c]) return;
    visited[c] = true;
    for (const HloInstruction* instr : c->instructions) {
      std::vector<const ir::HloComputation*> callees;
      if (instr->opcode == Opcode::kWhile) {
        callees = {instr->Called("body"), instr->Called("condition")};
      } else {
        for (const ir::CalledComputation& called : instr->called_computations()) {
          callees.push_back(called.computation);
        }
      }
      for (const ir::HloComputation* callee : callees) {
        if (callee != nullptr && df_.Context(callee) == CallContext::kControlFlow) {
          visit(callee);
        }
      }
    }
    post_order.push_back(c);
  };
  visit(module_.entry);
  std::reverse(post_order.begin(), post_order.end());
  return post_order;
}

const std::vector<int64_t>& PeakMemoryBuilder::LocalPostOrder() {
  if (!local_post_order_.empty()) return local_post_order_;
  PostOrderPositions at(module_.instruction_id_bound);
  for (const ir::HloComputation* computation : module_.computations) {
    if (df_.Context(computation) != CallContext::kControlFlow) continue;
    const auto number = static_cast<int32_t>(walked_number_.size());
    walked_number_.emplace(computation, number);
    int64_t next = 0;
    AppendPostOrder(computation, number, at, next);
  }
  local_post_order_ = std::move(at.at);
  walked_computation_ = std::move(at.owner);
  return local_post_order_;
}

std::vector<int64_t> PeakMemoryBuilder::PostOrderPositionsIn(
    const std::vector<const ir::HloComputation*>& order, int64_t& next) {
  const std::vector<int64_t>& local = LocalPostOrder();
  // Each computation's first position, then every instruction's from its computation's, in
  // one pass over the arrays by id (not a visit to each instruction). Both orders list only
  // control-flow computations, all of which LocalPostOrder walked (`at` throws on any other).
  std::vector<int64_t> first(walked_number_.size(), -1);
  next = 0;
  for (const ir::HloComputation* computation : order) {
    first[static_cast<size_t>(walked_number_.at(computation))] = next;
    next += static_cast<int64_t>(computation->instructions.size());
  }
  std::vector<int64_t> at(local.size(), -1);
  for (size_t id = 0; id < at.size(); ++id) {
    const int32_t owner = walked_computation_[id];
    if (owner >= 0 && first[static_cast<size_t>(owner)] >= 0) {
      at[id] = first[static_cast<size_t>(owner)] + local[id];
    }
  }
  return at;
}

const std::vector<int64_t>& PeakMemoryBuilder::XlaValueOrder() {
  if (xla_value_order_ != nullptr) return *xla_value_order_;
  std::vector<const ir::HloComputation*> control_flow;
  for (const ir::HloComputation* computation : module_.computations) {
    if (df_.Context(computation) == CallContext::kControlFlow) control_flow.push_back(computation);
  }
  int64_t next = 0;
  const std::vector<int64_t> at = PostOrderPositionsIn(control_flow, next);
  const auto values = static_cast<size_t>(df_.values().size());
  // One visit to each value's instruction: its position goes in the first half of `rank`, its
  // index among the instruction's slots in the second, until the largest such index is known.
  std::vector<int64_t> rank(2 * values);
  int64_t slots = 1;
  for (const HloValue& value : df_.values()) {
    const auto id = static_cast<size_t>(value.id);
    const int64_t placed = at[static_cast<size_t>(value.instruction->id)];
    rank[id] = placed < 0 ? next : placed;
    rank[values + id] = value.slot - df_.FirstSlot(value.instruction);
    slots = std::max<int64_t>(slots, rank[values + id] + 1);
  }
  for (const HloValue& value : df_.values()) {
    const auto id = static_cast<size_t>(value.id);
    rank[id] = value.is_phi
                   ? ir::SaturatingAdd(ir::SaturatingMul(next + 1, slots), value.id)
                   : ir::SaturatingAdd(ir::SaturatingMul(rank[id], slots), rank[values + id]);
  }
  std::copy_n(rank.begin(), values, rank.begin() + static_cast<ptrdiff_t>(values));
  xla_value_order_ = std::make_shared<const std::vector<int64_t>>(std::move(rank));
  return *xla_value_order_;
}

namespace {

// XLA's assignment order of one buffer as one 128-bit number: larger first, live-out first among
// equals, then in program order, then by id. A million buffers sort in 60% of the time a
// comparison of four fields takes (it compares without branches).
struct AssignmentKey {
  uint64_t high;  // bytes, descending: the sign bit flipped (signed order), then inverted
  uint64_t low;   // not live-out (1 bit), position (31 bits), id (32 bits)
  bool operator<(const AssignmentKey& o) const {
    return high < o.high || (high == o.high && low < o.low);
  }
  static uint64_t Flip(int64_t bytes) {
    return ~(static_cast<uint64_t>(bytes) ^ (uint64_t{1} << 63));
  }
  int64_t bytes() const { return static_cast<int64_t>(Flip(static_cast<int64_t>(high))); }
  int32_t id() const { return static_cast<int32_t>(static_cast<uint32_t>(low)); }
};

}  // namespace

std::vector<PeakMemoryBuilder::SizedBuffer> PeakMemoryBuilder::AssignmentOrder() {
  int64_t next = 0;
  const std::vector<int64_t> at = PostOrderPositionsIn(CallersFirst(), next);
  // Positions count instructions: below 2^31 short of two billion of them.
  if (next > INT32_MAX) throw std::length_error("buffer assignment: too many instructions");
  std::vector<AssignmentKey> keys;
  keys.reserve(alias_.buffers().size());
  for (const HloBuffer& buffer : alias_.buffers()) {
    int64_t position = INT32_MAX;  // a buffer's position is its earliest value's
    for (int32_t id : buffer.values) {
      const auto instr = static_cast<size_t>(df_.value(id).instruction->id);
      position = std::min(position, std::max<int64_t>(at[instr], 0));
    }
    keys.push_back(AssignmentKey{AssignmentKey::Flip(BufferBytes(buffer)),
                                 static_cast<uint64_t>(!buffer.live_out) << 63 |
                                     static_cast<uint64_t>(position) << 32 |
                                     static_cast<uint32_t>(buffer.id)});
  }
  boost::sort::pdqsort_branchless(keys.begin(), keys.end());
  std::vector<SizedBuffer> order;
  order.reserve(keys.size());
  for (const AssignmentKey& key : keys) order.push_back(SizedBuffer{key.id(), key.bytes()});
  return order;
}

PeakMemoryBuilder::OperandCandidates PeakMemoryBuilder::OperandCandidatesOf() const {
  OperandCandidates out;
  const auto& buffers = alias_.buffers();
  out.begin.reserve(buffers.size() + 1);
  out.space.reserve(buffers.size());
  out.begin.push_back(0);
  const bool reuses = options_.platform.ReusesArgumentAndOutputAllocations();
  for (const HloBuffer& buffer : buffers) {
    out.space.push_back(BufferSpace(buffer));
    const BufferKind kind = kind_[buffer.id];
    if (reuses && (kind == BufferKind::kTemp || kind == BufferKind::kOutput)) {
      for (int32_t id : buffer.values) {
        const HloValue& value = df_.value(id);
        if (!df_.SlotIsTop(value.slot) || df_.SlotShape(value.slot).IsTuple()) continue;
        for (const HloInstruction* operand : value.instruction->operands) {
          const int32_t top = df_.FirstSlot(operand);
          if (top < 0) continue;
          for (int32_t operand_value : df_.ValueSet(top)) {
            out.buffers.push_back(alias_.BufferIdOf(operand_value));
          }
        }
      }
    }
    out.begin.push_back(out.buffers.size());
  }
  return out;
}

bool PeakMemoryBuilder::CanShareAsOperand(int32_t user_id, int32_t operand_id) const {
  const HloValue& user = df_.value(user_id);
  if (user.instruction->opcode == Opcode::kCopy) return false;
  for (int32_t slot : df_.value(operand_id).positions) {
    const HloInstruction* at = df_.SlotInstruction(slot);
    if (sharing_memo_.operand_numbers.First(*user.instruction, at) < 0) continue;
    if (CanShareOperandBufferWithUser(df_, *at, slot, *user.instruction, user.slot, sharing_memo_,
                                      options_.platform.platform))
      return true;
  }
  return false;
}

std::optional<std::vector<int32_t>> PeakMemoryBuilder::RegisteredHoldingShareable(
    int32_t value_id, const std::vector<int32_t>& allocation_of_buffer,
    const std::vector<int32_t>& registration_of) const {
  const HloValue& value = df_.value(value_id);
  std::optional<std::vector<const HloInstruction*>> may = OperandsThatMayShare(
      df_, *value.instruction, value.slot, sharing_memo_, options_.platform.platform);
  if (!may) return std::nullopt;
  if (value.instruction->opcode == Opcode::kCopy) may->clear();  // as CanShareAsOperand
  std::vector<int32_t> numbers;
  for (const HloInstruction* operand : *may) {
    const int32_t first = df_.FirstSlot(operand);
    for (int32_t slot = first; first >= 0 && slot < first + df_.SlotCount(operand); ++slot) {
      for (int32_t id : df_.ValueSet(slot)) {
        const int32_t a = allocation_of_buffer[static_cast<size_t>(alias_.BufferIdOf(id))];
        if (a < 0 || static_cast<size_t>(a) >= registration_of.size()) continue;
        if (registration_of[static_cast<size_t>(a)] >= 0) {
          numbers.push_back(registration_of[static_cast<size_t>(a)]);
        }
      }
    }
  }
  std::sort(numbers.begin(), numbers.end(), std::greater<>());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  return numbers;
}

bool PeakMemoryBuilder::Interferes(int32_t new_id, int32_t assigned_id) const {
  const TimeBound& a = lr_.Range(new_id);
  const TimeBound& b = lr_.Range(assigned_id);
  if (a.start > b.end || b.start > a.end) return false;
  if (a.end == b.start) return !CanShareAsOperand(assigned_id, new_id);
  if (b.end == a.start) return !CanShareAsOperand(new_id, assigned_id);
  return true;
}

bool PeakMemoryBuilder::MaybeAssign(Allocation& allocation, const HloBuffer& buffer, int64_t bytes,
                                    int64_t space) {
  if (bytes > allocation.size || allocation.readonly || allocation.unranged) return false;
  if (allocation.space != space) return false;
  if (buffer.live_out && allocation.size != bytes) return false;
  for (int32_t id : buffer.values) {
    if (!lr_.HasRange(id) || allocation.timeline.StrictlyOverlaps(lr_.Range(id))) return false;
  }
  // With no overlap beyond touching ends, only the values that touch a new one can interfere
  // with it, and only they can be what a copy reads (a value a copy reads is live where the
  // copy's value starts).
  for (int32_t id : buffer.values) {
    const HloInstruction* instr = df_.value(id).instruction;
    bool conflict = false;
    touching_->ForEachTouching(allocation.index, lr_.Range(id), [&](int32_t assigned) {
      if (conflict) return;
      if (Interferes(id, assigned)) {
        conflict = true;
        return;
      }
      if (instr->opcode != Opcode::kCopy) return;
      for (int32_t slot : df_.value(assigned).positions) {
        const HloInstruction* at = df_.SlotInstruction(slot);
        if (std::find(instr->operands.begin(), instr->operands.end(), at) !=
            instr->operands.end()) {
          conflict = true;
          return;
        }
      }
    });
    if (conflict) return false;
  }
  AddValues(allocation, buffer.values);
  return true;
}

bool PeakMemoryBuilder::ParameterValueHasAlias(const HloValue& value) const {
  return df_.InputOutputAliases().ParameterAliased(value.instruction->parameter_number,
                                                   df_.SlotIndex(value.slot));
}

std::vector<int64_t> PeakMemoryBuilder::ComputeBufferBytes() const {
  std::vector<int64_t> bytes(alias_.buffers().size(), 0);
  for (const HloBuffer& buffer : alias_.buffers()) {
    int64_t& size = bytes[static_cast<size_t>(buffer.id)];
    for (int32_t id : buffer.values) size = std::max(size, ValueBytes(id));
  }
  return bytes;
}

struct PeakMemoryBuilder::KeptAssignment {
  std::shared_ptr<const std::vector<int64_t>> xla_value_order;
  std::shared_ptr<const std::vector<int64_t>> buffer_bytes;
  std::vector<BufferKind> kind;
  std::vector<CreatedAllocation> created;
  int64_t argument_bytes = 0;
  int64_t output_bytes = 0;
  int64_t alias_bytes = 0;
  int64_t temp_buffer_count = 0;
};

void PeakMemoryBuilder::ClassifyAndAssign() {
  const ModuleAnalyses::MemoryAssignmentKey key{static_cast<int>(options_.platform.platform),
                                                options_.per_device_from_shardings};
  if (const auto* kept = static_cast<const KeptAssignment*>(analyses_.MemoryAssignment(key))) {
    xla_value_order_ = kept->xla_value_order;
    buffer_bytes_ = kept->buffer_bytes;
    kind_ = kept->kind;
    created_ = kept->created;
    result_.argument_bytes = kept->argument_bytes;
    result_.output_bytes = kept->output_bytes;
    result_.alias_bytes = kept->alias_bytes;
    result_.temp_buffer_count = kept->temp_buffer_count;
    return;
  }
  buffer_bytes_ = std::make_shared<const std::vector<int64_t>>(ComputeBufferBytes());
  ClassifyBuffers();
  AssignToExistingAllocations();
  auto state = std::make_shared<KeptAssignment>();
  XlaValueOrder();  // every run packs a heap with it
  state->xla_value_order = xla_value_order_;
  state->buffer_bytes = buffer_bytes_;
  state->kind = kind_;
  state->created = created_;
  state->argument_bytes = result_.argument_bytes;
  state->output_bytes = result_.output_bytes;
  state->alias_bytes = result_.alias_bytes;
  state->temp_buffer_count = result_.temp_buffer_count;
  analyses_.KeepMemoryAssignment(key, std::move(state));
}

void PeakMemoryBuilder::ResizeValues() {
  if (options_.resized_values.empty()) return;
  auto bytes = std::make_shared<std::vector<int64_t>>(*buffer_bytes_);
  for (const HloBuffer& buffer : alias_.buffers()) {
    if (kind_[static_cast<size_t>(buffer.id)] != BufferKind::kTemp) continue;
    bool resized = false;
    int64_t size = 0;
    for (int32_t id : buffer.values) {
      const auto it = options_.resized_values.find(df_.ValueName(df_.value(id)));
      resized |= it != options_.resized_values.end();
      size = std::max(size, it != options_.resized_values.end() ? it->second : ValueBytes(id));
    }
    if (resized) (*bytes)[static_cast<size_t>(buffer.id)] = size;
  }
  buffer_bytes_ = std::move(bytes);
}

namespace {

// How many of the newest registered allocations a temporary is offered one by one before the
// gap index lists the free ones among the rest (a bound on the walk, not on the answer).
constexpr int32_t kWalkedNewest = 64;

}  // namespace

void PeakMemoryBuilder::AssignToExistingAllocations() {
  const OperandCandidates candidates = OperandCandidatesOf();
  std::vector<Allocation> allocations;
  std::vector<int32_t> allocation_of_buffer(alias_.buffers().size(), -1);
  std::vector<int32_t> registered;  // allocations later temporaries may reuse
  // The free stretches of the registered allocations: a buffer none of them can take skips the
  // offers (on a large flat graph nearly every temporary).
  std::vector<int64_t> range_ends;
  range_ends.reserve(df_.values().size());
  for (const HloValue& value : df_.values()) {
    if (lr_.HasRange(value.id)) range_ends.push_back(lr_.Range(value.id).end);
  }
  AllocationGapIndex free_stretches(std::move(range_ends));
  ValueTouchIndex touching(df_.values().size(), static_cast<size_t>(lr_.EndTime()) + 1);
  touching_ = &touching;
  // A registered allocation's gaps are indexed under its registration number, a small number.
  // By registration number: a stretch over which the allocation was found busy (none: start
  // past end). Its values only accumulate, so a range meeting that stretch is refused again
  // without asking its timeline: an offer walks down past the same busy allocations as the
  // buffers before it.
  std::vector<TimeBound> busy_over;
  std::vector<int32_t> registration_of;  // by allocation index; -1: not registered
  const auto register_for_reuse = [&](int32_t index) {
    registration_of.resize(allocations.size(), -1);
    registration_of[static_cast<size_t>(index)] = static_cast<int32_t>(registered.size());
    registered.push_back(index);
    busy_over.push_back(TimeBound{INT64_MAX, INT64_MIN});
    allocations[static_cast<size_t>(index)].timeline.TrackGaps(
        &free_stretches, static_cast<int32_t>(registered.size() - 1));
  };
  const auto some_registered_free = [&](const HloBuffer& buffer) {
    return std::all_of(buffer.values.begin(), buffer.values.end(), [&](int32_t id) {
      return lr_.HasRange(id) && free_stretches.AnyContains(lr_.Range(id));
    });
  };
  // Offers `buffer` to the registered allocations, newest first, that may take it: those free
  // over its first value's range (MaybeAssign refuses every other one), or all of them when the
  // index cannot tell; the index of the one that took it, -1 if none. Allocations are
  // registered as they are made, so newest is the highest registration number.
  const auto offer_to_registered = [&](const HloBuffer& buffer, int64_t bytes) {
    int32_t taken = -1;
    const auto offer = [&](int32_t number) {
      const int32_t index = registered[static_cast<size_t>(number)];
      if (!MaybeAssign(allocations[static_cast<size_t>(index)], buffer, bytes,
                       candidates.space[static_cast<size_t>(buffer.id)])) {
        return false;
      }
      taken = index;
      return true;
    };
    auto number = static_cast<int32_t>(registered.size()) - 1;
    if (buffer.values.empty()) {
      while (number >= 0 && !offer(number)) --number;
      return taken;
    }
    // The newest allocations one by one (the one that takes a buffer is usually among them),
    // the rest through the index, which lists only the free ones.
    const TimeBound& range = lr_.Range(buffer.values.front());
    for (int32_t walked = 0; number >= 0 && walked < kWalkedNewest; --number, ++walked) {
      TimeBound& busy = busy_over[static_cast<size_t>(number)];
      if (busy.start < range.end && busy.end > range.start) continue;
      const Allocation& allocation =
          allocations[static_cast<size_t>(registered[static_cast<size_t>(number)])];
      if (allocation.timeline.StrictlyOverlaps(range, &busy)) continue;
      if (offer(number)) return taken;
    }
    if (number < 0) return taken;
    // Where the rules name the operands whose values the first value may follow in an
    // allocation (touching: ending where it starts), only the allocations free before it starts
    // are listed by the index, and those holding such values are offered among them in the same
    // newest-first order: a combined all-reduce's results are not offered each of its operands'.
    if (options_.offer_exhaustively) {
      while (number >= 0 && !offer(number)) --number;
      return taken;
    }
    if (const auto named = RegisteredHoldingShareable(buffer.values.front(), allocation_of_buffer,
                                                      registration_of)) {
      auto next_named = named->begin();  // highest first
      const auto offer_named_above = [&](int32_t above) {
        for (; next_named != named->end() && *next_named > above; ++next_named) {
          if (*next_named <= number && offer(*next_named)) return true;
        }
        return false;
      };
      const auto offer_free_or_named = [&](int32_t free) {
        if (free > number) return false;
        if (offer_named_above(free)) return true;
        if (next_named != named->end() && *next_named == free) ++next_named;  // offered once
        return offer(free);
      };
      const TimeBound free_before{range.start - 1, range.end};
      if (free_stretches.VisitOwnersContaining(free_before, offer_free_or_named)) {
        if (taken < 0) offer_named_above(-1);
        return taken;
      }
    } else {
      const auto offer_below = [&](int32_t free) { return free <= number && offer(free); };
      if (free_stretches.VisitOwnersContaining(range, offer_below)) return taken;
    }
    while (number >= 0 && !offer(number)) --number;  // the index cannot tell
    return taken;
  };
  const std::vector<SizedBuffer> order = AssignmentOrder();
  // The loop takes buffers largest first, so what it reads of each (the buffer, its first
  // value's live range, its kind and operand candidates) is a cache miss the loop would wait
  // for: it is fetched a few buffers ahead (the buffer itself further ahead, as the range's
  // address is read from it).
  constexpr size_t kBufferAhead = 16;
  constexpr size_t kRangeAhead = 8;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k + kBufferAhead < order.size()) {
      const auto ahead = static_cast<size_t>(order[k + kBufferAhead].id);
      __builtin_prefetch(&alias_.buffers()[ahead]);
      __builtin_prefetch(&kind_[ahead]);
      __builtin_prefetch(&candidates.begin[ahead]);
    }
    if (k + kRangeAhead < order.size()) {
      const HloBuffer& ahead = alias_.buffers()[order[k + kRangeAhead].id];
      if (!ahead.values.empty()) __builtin_prefetch(&lr_.Range(ahead.values.front()));
    }
    const SizedBuffer& next = order[k];
    // Named, not bound: lambdas below capture them (clang before 16 cannot capture bindings).
    const int32_t buffer_id = next.id;
    const int64_t bytes = next.bytes;
    const HloBuffer& buffer = alias_.buffers()[buffer_id];
    const BufferKind kind = kind_[buffer_id];
    const auto add = [&](bool readonly) {
      allocations.push_back(Allocation{bytes,
                                       candidates.space[static_cast<size_t>(buffer_id)],
                                       readonly,
                                       false,
                                       static_cast<int32_t>(allocations.size()),
                                       {}});
      created_.push_back(CreatedAllocation{kind == BufferKind::kTupleTemp, bytes, buffer_id,
                                           candidates.space[static_cast<size_t>(buffer_id)]});
      AddValues(allocations.back(), buffer.values);
      allocation_of_buffer[buffer_id] = static_cast<int32_t>(allocations.size() - 1);
      return static_cast<int32_t>(allocations.size() - 1);
    };
    if (kind == BufferKind::kConstant || kind == BufferKind::kTupleTemp ||
        kind == BufferKind::kTupleOutput) {
      add(/*readonly=*/true);
      continue;
    }
    if (kind == BufferKind::kArgument) {
      bool aliased = false;
      for (int32_t id : buffer.values) {
        const HloValue& value = df_.value(id);
        if (value.instruction->opcode == Opcode::kParameter &&
            value.instruction->parent == module_.entry) {
          aliased = ParameterValueHasAlias(value);
        }
      }
      const int32_t index = add(/*readonly=*/!aliased);
      if (aliased) register_for_reuse(index);
      continue;
    }
    if (!options_.platform.ReusesArgumentAndOutputAllocations()) continue;
    // An operand's allocation, then the registered ones, newest first.
    const int64_t space = candidates.space[static_cast<size_t>(buffer_id)];
    bool placed = false;
    for (size_t c = candidates.begin[static_cast<size_t>(buffer_id)];
         c < candidates.begin[static_cast<size_t>(buffer_id) + 1]; ++c) {
      const int32_t a = allocation_of_buffer[static_cast<size_t>(candidates.buffers[c])];
      if (a >= 0 && MaybeAssign(allocations[static_cast<size_t>(a)], buffer, bytes, space)) {
        allocation_of_buffer[buffer_id] = a;
        placed = true;
        break;
      }
    }
    if (!placed && some_registered_free(buffer)) {
      const int32_t index = offer_to_registered(buffer, bytes);
      if (index >= 0) {
        allocation_of_buffer[buffer_id] = index;
        placed = true;
      }
    }
    if (placed) {
      if (kind == BufferKind::kTemp) {
        kind_[buffer_id] = BufferKind::kReused;
        --result_.temp_buffer_count;
      }
      continue;
    }
    if (kind == BufferKind::kOutput) register_for_reuse(add(/*readonly=*/false));
  }
  touching_ = nullptr;
}

}  // namespace spmdsim::passes::memory_internal
