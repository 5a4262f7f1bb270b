#include "passes/memory/memory_analysis.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "ir/c_unescape.h"
#include "ir/checked_math.h"
#include "passes/memory/allocation_timeline.h"
#include "passes/memory/buffer_alias_analysis.h"
#include "passes/memory/buffer_dataflow_analysis.h"
#include "passes/memory/buffer_sharing_rules.h"
#include "passes/memory/live_range_analysis.h"
#include "passes/sharding/sharding_sizes.h"

namespace spmdsim::passes {

using ir::HloInstruction;
using ir::Opcode;

namespace {

// What XLA's buffer assignment makes of an HloBuffer.
enum class BufferKind : uint8_t {
  kConstant,     // constant allocation: not in memory_analysis()
  kArgument,     // entry parameter allocation
  kTupleTemp,    // tuple-shaped, appended to the temp allocation
  kTupleOutput,  // tuple-shaped and live out (the root tuple table)
  kOutput,       // live out
  kTemp,         // packed into the heap
  kReused,       // a temporary placed in an argument or output allocation it does not overlap
};

std::string SourceOf(const ir::HloModule& module, const HloInstruction& instr) {
  if (!instr.metadata().source_file.empty()) return instr.metadata().Source();
  std::string_view file;
  int64_t line = 0;
  if (instr.metadata().stack_frame_id > 0 &&
      module.stack_frames.Resolve(instr.metadata().stack_frame_id, file, line)) {
    std::string out(file);
    if (line > 0) out += ":" + std::to_string(line);
    return out;
  }
  return {};
}

class PeakMemoryBuilder {
 public:
  PeakMemoryBuilder(ModuleAnalyses& analyses, const MemoryAnalysisOptions& options)
      : module_(analyses.module()),
        options_(options),
        df_(analyses.Dataflow()),
        alias_(analyses.Alias()),
        lr_(analyses.LiveRanges()) {
    if (options_.per_device_from_shardings) {
      sharding_ = std::make_unique<ShardingSizes>(ShardingSizes::Compute(df_, lr_.sequence()));
    }
  }

  PeakMemoryResult Build() {
    result_.schedule =
        lr_.scheduled() ? "module schedule" : "dependency order (module not scheduled)";
    result_.per_device_from_shardings = options_.per_device_from_shardings;
    result_.num_partitions = module_.num_partitions;
    result_.schedule_length = lr_.EndTime();
    result_.value_count = static_cast<int64_t>(df_.values().size());
    result_.buffer_count = static_cast<int64_t>(alias_.buffers().size());
    if (options_.per_device_from_shardings) {
      result_.notes.push_back(
          "sizes per device from the shardings; instructions without one inherit a split from "
          "their operands or users (an estimate)");
    }
    if (module_.entry == nullptr) return std::move(result_);
    result_.platform = options_.platform;
    ClassifyBuffers();
    AssignToExistingAllocations();
    // Each memory space is a heap of its own (XLA runs the heap simulation per buffer color); the
    // one reported (the default memory unless options_.memory_space names another) goes last, as
    // the peak listing and the curve read its recorder.
    const int64_t reported = options_.memory_space;
    for (int64_t space : OtherMemorySpaces()) SimulateOtherSpace(space);
    active_space_ = reported;
    SimulateHeap();
    PackHeap();
    if (reported == 0) {
      CombineTemp();
    } else {
      // Arguments, outputs and tuple tables live in the default memory space.
      result_.temp_bytes = result_.heap_bytes;
      result_.argument_bytes = result_.output_bytes = result_.alias_bytes = 0;
      result_.tuple_table_bytes = 0;
    }
    result_.memory_space = reported;
    result_.memory_space_name = options_.platform.MemorySpaceName(reported);
    result_.peak_bytes = PeakBytes(result_.argument_bytes, result_.output_bytes,
                                   result_.alias_bytes, result_.temp_bytes);
    ListLiveAtPeak();
    BuildTimeline();
    return std::move(result_);
  }

 private:
  int64_t SlotBytes(int32_t slot) const {
    return sharding_ != nullptr ? sharding_->SlotBytes(slot)
                                : options_.platform.BufferBytes(df_.SlotShape(slot));
  }
  int64_t ValueSpace(int32_t value_id) const {
    return options_.platform.MemorySpaceOf(df_.SlotShape(df_.value(value_id).slot));
  }
  // XLA gives all values of one buffer the same color; the first value's space stands for all.
  int64_t BufferSpace(const HloBuffer& buffer) const {
    return buffer.values.empty() ? 0 : ValueSpace(buffer.values.front());
  }

  // The memory spaces holding temporaries, but the reported one (the default memory among them
  // when another is reported).
  std::set<int64_t> OtherMemorySpaces() const {
    std::set<int64_t> spaces;
    for (const HloBuffer& buffer : alias_.buffers()) {
      if (kind_[buffer.id] != BufferKind::kTemp) continue;
      spaces.insert(BufferSpace(buffer));
    }
    if (options_.memory_space == 0) spaces.erase(0);
    spaces.erase(options_.memory_space);
    return spaces;
  }

  // Packs the temporaries of memory space `space` into their own heap and records its size.
  void SimulateOtherSpace(int64_t space) {
    active_space_ = space;
    SimulateHeap();
    HeapPackOptions pack;
    pack.alignment = options_.platform.TempAlignment(space);
    pack.buffer_rank = XlaValueOrder();
    const HeapPackResult packed = PackBestFit(recorder_.intervals(), pack);
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
  int64_t ValueBytes(int32_t value_id) const { return SlotBytes(df_.value(value_id).slot); }
  int64_t BufferBytes(const HloBuffer& buffer) const {
    int64_t size = 0;
    for (int32_t id : buffer.values) size = std::max(size, ValueBytes(id));
    return size;
  }

  void ClassifyBuffers() {
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

  // --- Reuse of argument and output allocations (BufferAssigner::AssignSingleHloBuffer) ---------
  //
  // Before temporaries go to the heap, XLA visits every buffer, largest first (live-out ones
  // first among equals, then in program order), and gives a temporary the space of an existing
  // allocation when their live ranges do not overlap: an operand's allocation first, then any
  // donated parameter or output allocation made so far. Only allocations at least as large
  // qualify, and an output allocation only takes buffers of exactly its size if they live out.

  struct Allocation {
    int64_t size = 0;
    int64_t space = 0;      // memory space (XLA's buffer color)
    bool readonly = false;  // a parameter that is not donated
    std::vector<int32_t> values;
    bool unranged = false;  // holds a value without a live range: nothing else goes in
    AllocationTimeline timeline;
  };

  void AddValues(Allocation& allocation, const std::vector<int32_t>& ids) const {
    for (int32_t id : ids) {
      allocation.values.push_back(id);
      if (!lr_.HasRange(id)) {
        allocation.unranged = true;
        continue;
      }
      allocation.timeline.Add(id, lr_.Range(id));
    }
  }

  // XLA's HloComputation::MakeInstructionPostOrder: depth-first from each instruction without
  // users, control predecessors first, then operands in order.
  static void AppendPostOrder(const ir::HloComputation* computation,
                              std::unordered_map<const HloInstruction*, int64_t>& at,
                              int64_t& next) {
    std::unordered_map<const HloInstruction*, int> state;  // 1 visiting, 2 done
    std::vector<const HloInstruction*> stack;
    for (const HloInstruction* start : computation->instructions) {
      if (!start->users.empty() || state.count(start)) continue;
      stack.push_back(start);
      while (!stack.empty()) {
        const HloInstruction* current = stack.back();
        auto it = state.find(current);
        if (it != state.end() && it->second == 2) {
          stack.pop_back();
          continue;
        }
        if (it != state.end() && it->second == 1) {
          stack.pop_back();
          it->second = 2;
          at[current] = next++;
          continue;
        }
        state[current] = 1;
        for (auto op = current->operands.rbegin(); op != current->operands.rend(); ++op) {
          if (!state.count(*op)) stack.push_back(*op);
        }
        for (const HloInstruction* pred : current->control_predecessors()) {
          if (!state.count(pred)) stack.push_back(pred);
        }
      }
    }
    for (const HloInstruction* instr : computation->instructions) {
      if (!at.count(instr)) at[instr] = next++;
    }
  }

  // Control-flow computations callers first (the reverse of a post order of the call graph in
  // which callees are visited in instruction order, a while's body before its condition).
  std::vector<const ir::HloComputation*> CallersFirst() const {
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

  // Each value's rank in the order XLA's dataflow analysis creates HloValues (their ids, which
  // break the heap's ties): computations in the module's order (XLA prints them in
  // MakeComputationPostOrder's order, callees first), each one's instructions in
  // MakeInstructionPostOrder's, the values of one instruction by shape index; the phis come after
  // them all, as XLA makes them while propagating. Intervals of recomputed copies (ids past the
  // values) rank as the value they copy.
  const std::vector<int64_t>& XlaValueOrder() {
    if (!xla_value_order_.empty() || df_.values().empty()) return xla_value_order_;
    std::unordered_map<const HloInstruction*, int64_t> at;
    int64_t next = 0;
    for (const ir::HloComputation* computation : module_.computations) {
      if (df_.Context(computation) == CallContext::kControlFlow) {
        AppendPostOrder(computation, at, next);
      }
    }
    const auto values = static_cast<int64_t>(df_.values().size());
    int64_t slots = 1;
    for (const HloValue& value : df_.values()) {
      slots = std::max<int64_t>(slots, value.slot - df_.FirstSlot(value.instruction) + 1);
    }
    std::vector<int64_t> rank(static_cast<size_t>(2 * values));
    for (const HloValue& value : df_.values()) {
      const auto found = at.find(value.instruction);
      const int64_t position = found == at.end() ? next : found->second;
      const int64_t within = value.slot - df_.FirstSlot(value.instruction);
      rank[static_cast<size_t>(value.id)] =
          value.is_phi ? ir::SaturatingAdd(ir::SaturatingMul(next + 1, slots), value.id)
                       : ir::SaturatingAdd(ir::SaturatingMul(position, slots), within);
    }
    for (int64_t id = 0; id < values; ++id) {
      rank[static_cast<size_t>(values + id)] = rank[static_cast<size_t>(id)];
    }
    xla_value_order_ = std::move(rank);
    return xla_value_order_;
  }

  std::vector<int32_t> AssignmentOrder() const {
    std::vector<int64_t> position(df_.values().size(), 0);
    {
      std::unordered_map<const HloInstruction*, int64_t> at;
      int64_t next = 0;
      for (const ir::HloComputation* computation : CallersFirst()) {
        AppendPostOrder(computation, at, next);
      }
      for (const HloValue& value : df_.values()) position[value.id] = at[value.instruction];
    }
    std::vector<int64_t> buffer_position(alias_.buffers().size(), INT64_MAX);
    for (const HloBuffer& buffer : alias_.buffers()) {
      for (int32_t id : buffer.values) {
        buffer_position[buffer.id] = std::min(buffer_position[buffer.id], position[id]);
      }
    }
    std::vector<int32_t> order(alias_.buffers().size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::vector<int64_t> bytes(order.size());
    for (const HloBuffer& buffer : alias_.buffers()) bytes[buffer.id] = BufferBytes(buffer);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      if (bytes[a] != bytes[b]) return bytes[a] > bytes[b];
      const bool la = alias_.buffers()[a].live_out;
      const bool lb = alias_.buffers()[b].live_out;
      if (la != lb) return la;
      if (buffer_position[a] != buffer_position[b]) return buffer_position[a] < buffer_position[b];
      return a < b;
    });
    return order;
  }

  // May `user_id`'s value take over `operand_id`'s space where one ends as the other starts?
  bool CanShareAsOperand(int32_t user_id, int32_t operand_id) const {
    const HloValue& user = df_.value(user_id);
    if (user.instruction->opcode == Opcode::kCopy) return false;
    for (int32_t slot : df_.value(operand_id).positions) {
      const HloInstruction* at = df_.SlotInstruction(slot);
      const auto& operands = user.instruction->operands;
      if (std::find(operands.begin(), operands.end(), at) == operands.end()) continue;
      if (CanShareOperandBufferWithUser(df_, *at, slot, *user.instruction, user.slot, sharing_memo_,
                                        options_.platform.platform))
        return true;
    }
    return false;
  }

  bool Interferes(int32_t new_id, int32_t assigned_id) const {
    const TimeBound& a = lr_.Range(new_id);
    const TimeBound& b = lr_.Range(assigned_id);
    if (a.start > b.end || b.start > a.end) return false;
    if (a.end == b.start) return !CanShareAsOperand(assigned_id, new_id);
    if (b.end == a.start) return !CanShareAsOperand(new_id, assigned_id);
    return true;
  }

  bool MaybeAssign(Allocation& allocation, const HloBuffer& buffer, int64_t bytes) {
    if (bytes > allocation.size || allocation.readonly || allocation.unranged) return false;
    if (allocation.space != BufferSpace(buffer)) return false;
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
      allocation.timeline.ForEachTouching(lr_.Range(id), [&](int32_t assigned) {
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

  bool ParameterValueHasAlias(const HloValue& value) const {
    const ShapeIndex index = df_.SlotIndex(value.slot);
    for (const ir::InputOutputAlias& alias : module_.input_output_alias) {
      if (alias.parameter_number == value.instruction->parameter_number &&
          alias.parameter_index == index) {
        return true;
      }
    }
    return false;
  }

  void AssignToExistingAllocations() {
    std::vector<Allocation> allocations;
    std::vector<int32_t> allocation_of_buffer(alias_.buffers().size(), -1);
    std::vector<int32_t> registered;  // allocations later temporaries may reuse
    for (int32_t buffer_id : AssignmentOrder()) {
      const HloBuffer& buffer = alias_.buffers()[buffer_id];
      const int64_t bytes = BufferBytes(buffer);
      const BufferKind kind = kind_[buffer_id];
      const auto add = [&](bool readonly) {
        allocations.push_back(Allocation{bytes, BufferSpace(buffer), readonly, {}, {}, {}});
        created_.push_back(CreatedAllocation{kind == BufferKind::kTupleTemp, bytes, buffer_id,
                                             BufferSpace(buffer)});
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
        if (aliased) registered.push_back(index);
        continue;
      }
      if (!options_.platform.ReusesArgumentAndOutputAllocations()) continue;
      // An operand's allocation, then the registered ones, newest first.
      bool placed = false;
      for (int32_t id : buffer.values) {
        const HloValue& value = df_.value(id);
        if (!df_.SlotIsTop(value.slot) || df_.SlotShape(value.slot).IsTuple()) continue;
        for (const HloInstruction* operand : value.instruction->operands) {
          const int32_t top = df_.FirstSlot(operand);
          if (top < 0) continue;
          for (int32_t operand_value : df_.ValueSet(top)) {
            const int32_t a = allocation_of_buffer[alias_.BufferIdOf(operand_value)];
            if (a >= 0 && MaybeAssign(allocations[static_cast<size_t>(a)], buffer, bytes)) {
              allocation_of_buffer[buffer_id] = a;
              placed = true;
              break;
            }
          }
          if (placed) break;
        }
        if (placed) break;
      }
      for (auto it = registered.rbegin(); !placed && it != registered.rend(); ++it) {
        if (MaybeAssign(allocations[static_cast<size_t>(*it)], buffer, bytes)) {
          allocation_of_buffer[buffer_id] = *it;
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
      if (kind == BufferKind::kOutput) registered.push_back(add(/*readonly=*/false));
    }
  }

  bool IsHeapValue(int32_t value_id) const {
    const int32_t buffer = alias_.BufferIdOf(value_id);
    return kind_[buffer] == BufferKind::kTemp && lr_.HasRange(value_id) &&
           BufferSpace(alias_.buffers()[buffer]) == active_space_;
  }

  // Replays the schedule as XLA's HeapSimulator::RunComputation does: at each position, the
  // values defined there are allocated (or share an aliased value's or a dying operand's
  // space), then the values whose live range ends there are freed.
  void SimulateHeap() {
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
    std::vector<std::vector<int32_t>> defined(static_cast<size_t>(end_time + 1));
    std::vector<std::vector<int32_t>> freed(static_cast<size_t>(end_time + 1));
    range_end_.assign(df_.values().size(), -1);
    // Buffers recomputed late (options_.recompute_values) are not replayed value by value: each
    // becomes one or two copies, [start, last early read] and [first late read, end].
    const std::map<int32_t, BufferSplit> splits =
        active_space_ == 0 ? RecomputeSplits() : std::map<int32_t, BufferSplit>{};
    // (value named for the copy, size, free time) allocated at each position.
    std::vector<std::vector<std::tuple<int32_t, int64_t, int64_t>>> copies(
        static_cast<size_t>(end_time + 1));
    for (const auto& [buffer_id, split] : splits) {
      if (split.early_end >= split.start) {
        copies[static_cast<size_t>(split.start)].emplace_back(split.value, split.bytes,
                                                              split.early_end);
      }
      copies[static_cast<size_t>(split.late_start)].emplace_back(split.value, split.bytes,
                                                                 std::min(split.end, end_time));
    }
    for (int32_t id : to_assign) {
      const TimeBound& range = lr_.Range(id);
      if (splits.count(alias_.BufferIdOf(id)) != 0) {
        range_end_[id] = -2;  // never allocated: nothing shares its space
        continue;
      }
      defined[static_cast<size_t>(range.start)].push_back(id);
      freed[static_cast<size_t>(std::min(range.end, end_time))].push_back(id);
      range_end_[id] = range.end;
    }
    std::vector<std::vector<int32_t>> copies_freed(static_cast<size_t>(end_time + 1));
    const auto first_copy_id = static_cast<int32_t>(df_.values().size());
    interval_of_value_.assign(df_.values().size(), -1);
    std::vector<int32_t> first_allocated(alias_.buffers().size(), -1);
    step_live_.assign(static_cast<size_t>(end_time + 1), 0);

    // Every heap tick taken at position t maps back to t.
    const auto record_tick = [&](int64_t t) {
      while (static_cast<int64_t>(tick_time_.size()) < recorder_.ticks()) tick_time_.push_back(t);
    };
    for (int64_t t = 0; t <= end_time; ++t) {
      auto& frees = freed[static_cast<size_t>(t)];
      for (int32_t id : defined[static_cast<size_t>(t)]) {
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
        if (buffer.values.size() == 1) shared = TryShareOperand(value, t, frees, size);
        if (!shared) {
          interval_of_value_[id] = recorder_.Alloc(id, size);
          first_allocated[buffer.id] = id;
        }
        record_tick(t);
      }
      for (const auto& [id, size, end] : copies[static_cast<size_t>(t)]) {
        // A copy's interval id is past every value's: `first_copy_id + value`.
        const int32_t interval = recorder_.Alloc(first_copy_id + id, size);
        if (interval >= 0) copies_freed[static_cast<size_t>(end)].push_back(interval);
        record_tick(t);
      }
      step_live_[static_cast<size_t>(t)] = recorder_.live_bytes();
      for (int32_t id : frees) recorder_.Free(interval_of_value_[id]);
      for (int32_t interval : copies_freed[static_cast<size_t>(t)]) recorder_.Free(interval);
      record_tick(t);
    }
    result_.max_live_temp_bytes = recorder_.peak_live_bytes();
  }

  struct BufferSplit {
    int32_t value = 0;  // the recompute_values value that named the buffer
    int64_t bytes = 0;
    int64_t start = 0;       // first definition of any of its values
    int64_t early_end = -1;  // last early read (or definition); < start: none
    int64_t late_start = 0;  // first late read
    int64_t end = 0;
  };

  // The temp buffers holding a value of options_.recompute_values that a late reader reads: freed
  // after their last early read (or their definitions, e.g. a whole while loop), and copied again
  // at their first late read. A read is a use by an instruction that does not itself define a
  // value of the same buffer (a loop's own body and init tuple are the buffer, not its readers).
  std::map<int32_t, BufferSplit> RecomputeSplits() {
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

  bool TryShareOperand(const HloValue& value, int64_t t, std::vector<int32_t>& frees,
                       int64_t size) {
    const HloInstruction* instr = value.instruction;
    if (instr->opcode == Opcode::kCopy) return false;
    for (const HloInstruction* operand : instr->operands) {
      const int32_t operand_top = df_.FirstSlot(operand);
      if (operand_top < 0) continue;
      for (int32_t operand_id : df_.ValueSet(operand_top)) {
        if (alias_.BufferOf(operand_id).values.size() > 1) continue;
        if (!lr_.HasRange(operand_id) || range_end_[operand_id] != t) continue;
        if (!IsHeapValue(operand_id)) continue;
        auto it = std::find(frees.begin(), frees.end(), operand_id);
        if (it == frees.end()) continue;
        const HloValue& operand_value = df_.value(operand_id);
        const HloInstruction* defining = operand_value.instruction;
        if (std::find(instr->operands.begin(), instr->operands.end(), defining) ==
            instr->operands.end()) {
          continue;
        }
        if (!CanShareOperandBufferWithUser(df_, *defining, operand_value.slot, *instr, value.slot,
                                           sharing_memo_, options_.platform.platform)) {
          continue;
        }
        recorder_.Free(interval_of_value_[operand_id]);
        frees.erase(it);
        interval_of_value_[value.id] =
            recorder_.ShareWith(value.id, interval_of_value_[operand_id], size);
        range_end_[operand_id] = lr_.Range(value.id).end;
        return true;
      }
    }
    return false;
  }

  void PackHeap() {
    HeapPackOptions pack;
    pack.alignment = options_.platform.TempAlignment(active_space_);
    pack.buffer_rank = XlaValueOrder();
    packed_ = PackBestFit(recorder_.intervals(), pack);
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

  static int64_t AlignUp(int64_t value, int64_t alignment) {
    if (alignment <= 1) return value;
    return ir::SaturatingAdd(value, alignment - 1) / alignment * alignment;
  }

  // XLA's combined temp allocation of the default memory space (BufferAssignment::
  // CombineTempAllocations): the temp allocations placed end to end, each at the platform's
  // alignment, in the order std::partition leaves them when it moves them behind the others.
  // The allocations are, in the order XLA makes them: those of AssignBuffersForComputations (in
  // AssignToExistingAllocations' order; the tuple tables are temps), the heap, then one per
  // buffer of the thread-local computations (reducers, comparators). std::partition (libstdc++
  // and libc++ alike) swaps the first temp from the front with the last other allocation from
  // the back until the two meet, so where the heap lands among the tables depends on them all.
  void CombineTemp() {
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

  // Buffers of the computations XLA assigns thread-local allocations (embedded computations
  // that are not fusions: reducers, comparators, map functions): one allocation each.
  int64_t ThreadLocalAllocationCount() const {
    std::set<const ir::HloComputation*> fused;
    for (const ir::HloComputation* computation : module_.computations) {
      for (const HloInstruction* instr : computation->instructions) {
        if (instr->opcode == Opcode::kFusion) fused.insert(instr->Called("calls"));
      }
    }
    const std::function<int64_t(const ir::Shape&)> slots = [&](const ir::Shape& shape) {
      int64_t n = 1;
      for (const ir::Shape& element : shape.tuple_shapes()) n += slots(element);
      return n;
    };
    int64_t count = 0;
    for (const ir::HloComputation* computation : module_.computations) {
      if (df_.Context(computation) != CallContext::kEmbedded || fused.count(computation)) continue;
      for (const HloInstruction* instr : computation->instructions) {
        if (instr->opcode == Opcode::kBitcast || instr->opcode == Opcode::kGetTupleElement) {
          continue;  // they name their operand's buffer
        }
        count += instr->opcode == Opcode::kTuple ? 1 : slots(instr->shape);
      }
    }
    return count;
  }

  LiveBuffer Describe(int32_t value_id, int64_t size, const char* kind) const {
    const HloValue& value = df_.value(value_id);
    const HloInstruction& instr = *value.instruction;
    LiveBuffer live;
    live.size_bytes = size;
    live.instruction = std::string(instr.name);
    live.index = ShapeIndexToString(df_.SlotIndex(value.slot));
    live.opcode = std::string(instr.opcode_name());
    live.shape = df_.SlotShape(value.slot).ToString(/*print_layout=*/false);
    live.op_name = ir::CUnescape(instr.metadata().op_name);
    live.source = SourceOf(module_, instr);
    live.kind = kind;
    return live;
  }

  void ListLiveAtPeak() {
    std::vector<LiveBuffer> listing;
    const int64_t peak_tick = recorder_.peak_tick();
    if (peak_tick >= 0 && static_cast<size_t>(peak_tick) < tick_time_.size() &&
        tick_time_[static_cast<size_t>(peak_tick)] < lr_.EndTime()) {
      result_.peak_time = tick_time_[static_cast<size_t>(peak_tick)];
      const HloInstruction* at = lr_.sequence()[static_cast<size_t>(result_.peak_time)];
      result_.peak_instruction = std::string(at->name);
      result_.peak_opcode = std::string(at->opcode_name());
      // The value holding each occupied space at the peak tick: the latest one started.
      std::map<int32_t, int32_t> holder;  // canonical interval -> interval
      const auto& intervals = recorder_.intervals();
      for (size_t i = 0; i < intervals.size(); ++i) {
        const HeapInterval& interval = intervals[i];
        if (interval.start > peak_tick || (interval.end >= 0 && interval.end <= peak_tick)) {
          continue;
        }
        const int32_t canonical = recorder_.CanonicalOf(static_cast<int32_t>(i));
        auto [it, inserted] = holder.emplace(canonical, static_cast<int32_t>(i));
        if (!inserted && intervals[static_cast<size_t>(it->second)].start < interval.start) {
          it->second = static_cast<int32_t>(i);
        }
      }
      const auto values = static_cast<int32_t>(df_.values().size());
      for (const auto& [canonical, interval] : holder) {
        const int32_t id = intervals[static_cast<size_t>(interval)].buffer;
        listing.push_back(Describe(id >= values ? id - values : id,
                                   intervals[static_cast<size_t>(canonical)].size,
                                   id >= values ? "temp (recomputed)" : "temp"));
      }
    }
    for (const HloBuffer& buffer : alias_.buffers()) {
      if (options_.memory_space != 0) break;  // arguments and outputs are in the default memory
      const BufferKind kind = kind_[buffer.id];
      if (kind == BufferKind::kArgument) {
        int32_t param_value = buffer.values[0];
        for (int32_t id : buffer.values) {
          if (df_.value(id).instruction->opcode == Opcode::kParameter) param_value = id;
        }
        listing.push_back(Describe(param_value, BufferBytes(buffer),
                                   buffer.live_out ? "argument+output" : "argument"));
      } else if (kind == BufferKind::kOutput || kind == BufferKind::kTupleOutput) {
        listing.push_back(Describe(OutputHolder(buffer), BufferBytes(buffer), "output"));
      }
    }
    std::stable_sort(listing.begin(), listing.end(), [](const LiveBuffer& a, const LiveBuffer& b) {
      if (a.size_bytes != b.size_bytes) return a.size_bytes > b.size_bytes;
      return std::tie(a.instruction, a.index) < std::tie(b.instruction, b.index);
    });
    result_.live_at_peak_count = static_cast<int64_t>(listing.size());
    if (options_.live_at_peak_limit > 0 &&
        static_cast<int64_t>(listing.size()) > options_.live_at_peak_limit) {
      listing.resize(static_cast<size_t>(options_.live_at_peak_limit));
    }
    result_.live_at_peak = std::move(listing);
  }

  // The value an output buffer holds at the end: the one defined last.
  int32_t OutputHolder(const HloBuffer& buffer) const {
    int32_t best = buffer.values[0];
    for (int32_t id : buffer.values) {
      if (lr_.HasRange(id) &&
          (!lr_.HasRange(best) || lr_.Range(id).start > lr_.Range(best).start)) {
        best = id;
      }
    }
    return best;
  }

  void BuildTimeline() {
    ir::WideTotal total;
    total.Add(result_.argument_bytes);
    total.Add(result_.output_bytes);
    total.Subtract(result_.alias_bytes);
    total.Add(result_.tuple_table_bytes);
    const int64_t base = total.Value();
    const auto steps = static_cast<int64_t>(step_live_.size()) - 1;  // the last is the end
    if (steps <= 0) return;
    const int64_t points = std::max<int64_t>(1, options_.timeline_points);
    const int64_t stride = ir::CeilDiv(steps, points);
    for (int64_t begin = 0; begin < steps; begin += stride) {
      const int64_t end = std::min(steps, begin + stride);
      int64_t best = begin;
      for (int64_t t = begin; t < end; ++t) {
        if (step_live_[static_cast<size_t>(t)] > step_live_[static_cast<size_t>(best)]) best = t;
      }
      TimelinePoint point;
      point.time = best;
      point.instruction = std::string(lr_.sequence()[static_cast<size_t>(best)]->name);
      point.live_bytes = ir::SaturatingAdd(base, step_live_[static_cast<size_t>(best)]);
      result_.timeline.push_back(std::move(point));
    }
  }

  const ir::HloModule& module_;
  const MemoryAnalysisOptions& options_;
  const DataflowAnalysis& df_;
  mutable SharingRuleMemo sharing_memo_;  // a cache: const queries fill it
  const AliasAnalysis& alias_;
  const LiveRangeAnalysis& lr_;
  std::unique_ptr<ShardingSizes> sharding_;
  std::vector<BufferKind> kind_;
  HeapRecorder recorder_;
  std::vector<int64_t> range_end_;
  std::vector<int32_t> interval_of_value_;
  std::vector<int64_t> tick_time_;  // schedule position of each heap tick
  std::vector<int64_t> step_live_;  // live temp bytes after the allocations at each position
  HeapPackResult packed_;
  int64_t active_space_ = 0;              // the memory space SimulateHeap replays
  std::vector<int64_t> xla_value_order_;  // XlaValueOrder(), worked out once
  // The allocations AssignToExistingAllocations made, in XLA's order.
  struct CreatedAllocation {
    bool temp = false;  // a preallocated temp (a tuple table); the others are not combined
    int64_t bytes = 0;
    int32_t buffer = -1;  // -1: the heap
    int64_t space = 0;
  };
  std::vector<CreatedAllocation> created_;
  int64_t heap_base_ = 0;  // where the heap starts in the combined temp allocation
  PeakMemoryResult result_;
};

}  // namespace

int64_t PeakBytes(int64_t argument, int64_t output, int64_t alias, int64_t temp) {
  ir::WideTotal peak;
  peak.Add(argument);
  peak.Add(output);
  peak.Subtract(alias);
  peak.Add(temp);
  return peak.Value();
}

PeakMemoryResult AnalyzePeakMemory(ModuleAnalyses& analyses, const MemoryAnalysisOptions& options) {
  return PeakMemoryBuilder(analyses, options).Build();
}

PeakMemoryResult AnalyzePeakMemory(const ir::HloModule& module,
                                   const MemoryAnalysisOptions& options) {
  ModuleAnalyses analyses(module);
  return AnalyzePeakMemory(analyses, options);
}

}  // namespace spmdsim::passes
