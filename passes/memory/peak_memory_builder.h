// Internal to passes/memory/: the state and steps of the peak-memory analysis (XLA's buffer
// assignment replayed), shared by the files that implement it: memory_allocations.cc (which
// allocation each buffer takes), memory_heap_packing.cc (the heap, the combined temp allocation,
// other memory spaces) and memory_analysis.cc (the run, the peak, the listing, the curve).
// Nothing outside those files includes this; the API is memory_analysis.h.
#pragma once

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
#include "passes/memory/memory_analysis.h"
#include "passes/memory/sharding_sizes.h"

namespace spmdsim::passes::memory_internal {

using ir::HloInstruction;
using ir::Opcode;

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

// "file.py:123" of an instruction: its metadata's source, else its stack frame's.
std::string SourceOf(const ir::HloModule& module, const HloInstruction& instr);

class PeakMemoryBuilder {
 public:
  PeakMemoryBuilder(ModuleAnalyses& analyses, const MemoryAnalysisOptions& options)
      : analyses_(analyses),
        module_(analyses.module()),
        options_(options),
        df_(analyses.Dataflow()),
        alias_(analyses.Alias()),
        lr_(analyses.LiveRanges()) {
    if (options_.per_device_from_shardings) {
      sharding_ = std::make_unique<ShardingSizes>(ShardingSizes::Compute(df_, lr_.sequence()));
    }
  }

  PeakMemoryResult Build();

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
  std::set<int64_t> OtherMemorySpaces() const;

  // Packs the temporaries of memory space `space` into their own heap and records its size.
  void SimulateOtherSpace(int64_t space);
  int64_t ValueBytes(int32_t value_id) const { return SlotBytes(df_.value(value_id).slot); }
  // A buffer's size: its largest value's. Worked out once per buffer (ClassifyAndAssign) and
  // kept with the assignment: the passes ask it per value, and a loop's buffer holds many.
  int64_t BufferBytes(const HloBuffer& buffer) const {
    return (*buffer_bytes_)[static_cast<size_t>(buffer.id)];
  }
  std::vector<int64_t> ComputeBufferBytes() const;

  void ClassifyBuffers();

  // ClassifyBuffers and AssignToExistingAllocations, or what an earlier run on the same analyses
  // with the same platform and sizes decided (ModuleAnalyses::MemoryAssignment): they depend on
  // neither the memory space reported nor the recompute what-if.
  void ClassifyAndAssign();
  // Applies options_.resized_values to the buffer sizes of this run (not the kept assignment).
  void ResizeValues();
  struct KeptAssignment;

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
    bool unranged = false;  // holds a value without a live range: nothing else goes in
    int32_t index = -1;     // in the order made
    // Where its values are live; kept only for an allocation others may reuse (not readonly).
    AllocationTimeline timeline;
  };

  void AddValues(Allocation& allocation, std::span<const int32_t> ids) const;
  // The values in every allocation by the times they start and end, while assigning.
  ValueTouchIndex* touching_ = nullptr;

  // XLA's HloComputation::MakeInstructionPostOrder: depth-first from each instruction without
  // users, control predecessors first, then operands in order.
  // Positions by instruction id (-1: not placed yet), with the walk's scratch marks.
  struct PostOrderPositions {
    explicit PostOrderPositions(size_t id_bound);
    int64_t At(const HloInstruction* instr) const { return at[static_cast<size_t>(instr->id)]; }
    std::vector<int64_t> at;
    std::vector<uint8_t> state;  // 1 visiting, 2 done
    std::vector<int32_t> owner;  // the number of the computation walked (-1: none)
  };
  // Numbers `computation`'s instructions from `next` on and records them as computation
  // `number`'s; once per computation per `positions`.
  static void AppendPostOrder(const ir::HloComputation* computation, int32_t number,
                              PostOrderPositions& positions, int64_t& next);

  // By instruction id: its number in its computation's MakeInstructionPostOrder, from 0 in
  // each control-flow computation (-1 in the others). The two orders below lay whole
  // computations one after another in different orders, so they share this walk.
  const std::vector<int64_t>& LocalPostOrder();
  // By instruction id: `order`'s computations' instructions numbered one computation after the
  // other, each in post order (-1 for the others); `next` ends as their count.
  std::vector<int64_t> PostOrderPositionsIn(const std::vector<const ir::HloComputation*>& order,
                                            int64_t& next);

  // Control-flow computations callers first (the reverse of a post order of the call graph in
  // which callees are visited in instruction order, a while's body before its condition).
  std::vector<const ir::HloComputation*> CallersFirst() const;

  // Each value's rank in the order XLA's dataflow analysis creates HloValues (their ids, which
  // break the heap's ties): computations in the module's order (XLA prints them in
  // MakeComputationPostOrder's order, callees first), each one's instructions in
  // MakeInstructionPostOrder's, the values of one instruction by shape index; the phis come after
  // them all, as XLA makes them while propagating. Intervals of recomputed copies (ids past the
  // values) rank as the value they copy.
  const std::vector<int64_t>& XlaValueOrder();

  // The buffers in the order XLA's buffer assigner takes them, each with its size.
  struct SizedBuffer {
    int32_t id;
    int64_t bytes;
  };
  std::vector<SizedBuffer> AssignmentOrder();

  // May `user_id`'s value take over `operand_id`'s space where one ends as the other starts?
  bool CanShareAsOperand(int32_t user_id, int32_t operand_id) const;

  bool Interferes(int32_t new_id, int32_t assigned_id) const;

  // `space`: the buffer's memory space (BufferSpace).
  bool MaybeAssign(Allocation& allocation, const HloBuffer& buffer, int64_t bytes, int64_t space);

  // The registration numbers (highest first) of the registered allocations holding a value that
  // `value_id` may follow where the two touch, by the operands the sharing rules name for it
  // (OperandsThatMayShare); nullopt where the rules name none in particular.
  std::optional<std::vector<int32_t>> RegisteredHoldingShareable(
      int32_t value_id, const std::vector<int32_t>& allocation_of_buffer,
      const std::vector<int32_t>& registration_of) const;

  // By buffer id, worked out in one pass in buffer order (the assignment visits buffers in size
  // order, and following each one's values, instructions, operands and value sets there is a
  // chain of cache misses): the buffers whose allocations the buffer is offered first, in the
  // order offered (for each of its top-level non-tuple values, the buffers of the values at
  // each operand's top slot), as buffers[begin[id], begin[id + 1]); and its memory space.
  struct OperandCandidates {
    std::vector<size_t> begin;
    std::vector<int32_t> buffers;
    std::vector<int64_t> space;
  };
  OperandCandidates OperandCandidatesOf() const;

  bool ParameterValueHasAlias(const HloValue& value) const;

  void AssignToExistingAllocations();

  bool IsHeapValue(int32_t value_id) const {
    const int32_t buffer = alias_.BufferIdOf(value_id);
    return kind_[buffer] == BufferKind::kTemp && lr_.HasRange(value_id) &&
           BufferSpace(alias_.buffers()[buffer]) == active_space_;
  }

  // Replays the schedule as XLA's HeapSimulator::RunComputation does: at each position, the
  // values defined there are allocated (or share an aliased value's or a dying operand's
  // space), then the values whose live range ends there are freed.
  void SimulateHeap();

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
  std::map<int32_t, BufferSplit> RecomputeSplits();

  // XLA's HeapSimulator offers a value defined at t the dying buffers of its instruction's
  // operands, in operand order, and takes the first CanShareOperandBufferWithUser accepts.
  bool TryShareOperand(const HloValue& value, int64_t t, int64_t size);
  // A user with at most this many operands offers them all without an index (a bound on the
  // cost of a scan, not on the answer).
  static constexpr size_t kNarrowUser = 16;

  // The operand values offered to an instruction's outputs, in the order they are offered
  // (each once), and their positions in that order by defining instruction; kept for the last
  // instruction asked about, whose outputs are allocated one after another.
  struct OperandOffers {
    const ir::HloInstruction* user = nullptr;
    std::vector<int32_t> values;
    std::unordered_map<const ir::HloInstruction*, std::vector<uint32_t>> by_defining;
  };
  const OperandOffers& OffersOf(const ir::HloInstruction& user);

  // How memory space `space`'s heap is packed: its alignment, XLA's value order for ties, and
  // the platform's packing order.
  HeapPackOptions PackOptions(int64_t space);
  void PackHeap();

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
  void CombineTemp();

  // Buffers of the computations XLA assigns thread-local allocations (embedded computations
  // that are not fusions: reducers, comparators, map functions): one allocation each.
  int64_t ThreadLocalAllocationCount() const;

  LiveBuffer Describe(int32_t value_id, int64_t size, LiveBufferKind kind) const;

  void ListLiveAtPeak();

  // The argument and output buffers, as listed at the peak (none outside the default memory).
  std::vector<LiveBuffer> WholeProgramBuffers() const;

  // The value an output buffer holds at the end: the one defined last.
  int32_t OutputHolder(const HloBuffer& buffer) const;

  void BuildTimeline();

  // With options_.record_lifetimes: every listed buffer's stay over the schedule
  // (PeakMemoryResult::lifetimes) and the schedule's instruction names (buffer_lifetimes.cc).
  void RecordLifetimes();

  ModuleAnalyses& analyses_;
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
  // By value id, while the heap is simulated: the value is in the list of those freed at the
  // current position (TryShareOperand asks it for each operand of a wide instruction).
  std::vector<bool> freed_now_;
  OperandOffers offers_;
  std::vector<uint32_t> picked_offers_;  // TryShareOperand's scratch
  std::vector<int32_t> interval_of_value_;
  std::vector<int64_t> tick_time_;  // schedule position of each heap tick
  std::vector<int64_t> step_live_;  // live temp bytes after the allocations at each position
  // The recorder's tick count when step_live_ was taken at each position: an interval is live
  // there when it started before that tick and was not freed before it.
  std::vector<int64_t> snapshot_tick_;
  HeapPackResult packed_;
  int64_t active_space_ = 0;  // the memory space SimulateHeap replays
  // XlaValueOrder(), worked out once per module: shared with the later runs on the same
  // analyses through the kept assignment (it depends on the dataflow alone).
  std::shared_ptr<const std::vector<int64_t>> xla_value_order_;
  std::shared_ptr<const std::vector<int64_t>> buffer_bytes_;  // by buffer id
  std::vector<int64_t> local_post_order_;                     // LocalPostOrder(), worked out once
  // By instruction id, the number of its computation among those LocalPostOrder walked (-1
  // for the others), and each walked computation's number.
  std::vector<int32_t> walked_computation_;
  std::unordered_map<const ir::HloComputation*, int32_t> walked_number_;
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

}  // namespace spmdsim::passes::memory_internal
