#include "passes/timeline/step_timeline.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace spmdsim::passes {
namespace {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;

bool IsFree(Opcode opcode) {
  switch (opcode) {
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kGetTupleElement:
    case Opcode::kTuple:
    case Opcode::kBitcast:
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
    case Opcode::kAfterAll:
    case Opcode::kAddDependency:
    case Opcode::kOptimizationBarrier:
    case Opcode::kDomain:
      return true;
    default:
      return false;
  }
}

bool IsDone(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAllGatherDone:
    case Opcode::kAllReduceDone:
    case Opcode::kCollectivePermuteDone:
    case Opcode::kAsyncDone:
    case Opcode::kCopyDone:
    case Opcode::kRecvDone:
    case Opcode::kSendDone:
      return true;
    default:
      return false;
  }
}

bool IsAsyncStart(Opcode opcode) {
  return opcode == Opcode::kAllGatherStart || opcode == Opcode::kAllReduceStart ||
         opcode == Opcode::kCollectivePermuteStart || opcode == Opcode::kAsyncStart;
}

int64_t ToNs(double us) {
  const double ns = std::round(us * 1000.0);
  if (!(ns > 0)) return 0;
  return ns >= static_cast<double>(kMaxStepNs) ? kMaxStepNs : static_cast<int64_t>(ns);
}

int64_t Add(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return INT64_MAX / 2;
  return std::min(sum, INT64_MAX / 2);
}

// The callees a control-flow instruction runs in place, in flattened-schedule order.
std::vector<const HloComputation*> InPlaceCallees(const HloInstruction& instr) {
  std::vector<const HloComputation*> out;
  if (instr.opcode == Opcode::kWhile) {
    if (const HloComputation* cond = instr.Called("condition")) out.push_back(cond);
    if (const HloComputation* body = instr.Called("body")) out.push_back(body);
  } else if (instr.opcode == Opcode::kCall || instr.opcode == Opcode::kConditional) {
    for (const ir::CalledComputation& called : instr.called_computations()) {
      if (called.computation != nullptr) out.push_back(called.computation);
    }
  }
  return out;
}

class StepSimulator {
 public:
  StepSimulator(const CollectiveResult& collectives, const StepTimelineOptions& options)
      : options_(options) {
    for (const CollectiveOp& op : collectives.ops) collectives_[op.start] = &op;
    min_ns_ = std::max<int64_t>(ToNs(options.min_slice_us), 1);
  }

  StepTimeline Run(const ir::HloModule& module) {
    if (module.entry != nullptr) Walk(module.entry);
    timeline_.step_ns = clock_;
    return std::move(timeline_);
  }

 private:
  // Recursive over calls; the parser bounds the depth (ir::kMaxCallNesting).
  void Walk(const HloComputation* computation) {
    if (!walked_.insert(computation).second) return;
    for (const HloInstruction* instr : computation->instructions) Step(*instr);
  }

  void Step(const HloInstruction& instr) {
    const std::vector<const HloComputation*> callees = InPlaceCallees(instr);
    if (!callees.empty()) {
      const int64_t start = clock_;
      const size_t slot = timeline_.slices.size();
      timeline_.slices.push_back({});
      for (const HloComputation* callee : callees) Walk(callee);
      clock_ = std::max(clock_, Add(start, min_ns_));
      StepSlice& slice = timeline_.slices[slot];
      slice.instruction = &instr;
      slice.kind = StepSliceKind::kControlFlow;
      slice.start_ns = start;
      slice.duration_ns = clock_ - start;
      timeline_.position_ns[instr.name] = clock_;
      return;
    }
    timeline_.position_ns[instr.name] = clock_;
    if (IsDone(instr.opcode)) {
      // Wait for the collective this ends: through async-updates back to its start.
      const HloInstruction* start = instr.operands.empty() ? nullptr : instr.operands[0];
      for (int guard = 0; start != nullptr && guard < 64; ++guard) {
        if (auto it = pending_.find(start); it != pending_.end()) {
          clock_ = std::max(clock_, it->second);
          break;
        }
        if (start->opcode != Opcode::kAsyncUpdate || start->operands.empty()) break;
        start = start->operands[0];
      }
      return;
    }
    if (auto it = collectives_.find(&instr); it != collectives_.end()) {
      const CollectiveOp& op = *it->second;
      const int64_t start = std::max(clock_, collectives_free_);
      const int64_t duration = op.est_time_us > 0 ? ToNs(op.est_time_us) : min_ns_;
      collectives_free_ = Add(start, duration);
      StepSlice slice;
      slice.instruction = &instr;
      slice.kind = StepSliceKind::kCollective;
      slice.start_ns = start;
      slice.duration_ns = collectives_free_ - start;
      slice.collective = &op;
      slice.asynchronous = IsAsyncStart(instr.opcode);
      timeline_.slices.push_back(slice);
      if (slice.asynchronous) {
        pending_[&instr] = collectives_free_;
      } else {
        clock_ = collectives_free_;
      }
      return;
    }
    if (IsFree(instr.opcode)) return;
    const double bytes = static_cast<double>(std::max<int64_t>(instr.shape.LeafBytes(), 0));
    // GB/s = 1e3 bytes per microsecond.
    const double us =
        options_.compute_bandwidth_GBps > 0 ? bytes / (options_.compute_bandwidth_GBps * 1e3) : 0.0;
    StepSlice slice;
    slice.instruction = &instr;
    slice.kind = StepSliceKind::kCompute;
    slice.start_ns = clock_;
    slice.duration_ns = std::max(ToNs(us), min_ns_);
    timeline_.slices.push_back(slice);
    clock_ = Add(clock_, slice.duration_ns);
  }

  const StepTimelineOptions& options_;
  int64_t min_ns_ = 1000;
  int64_t clock_ = 0;             // the compute track
  int64_t collectives_free_ = 0;  // when the collectives track is free again
  std::unordered_map<const HloInstruction*, const CollectiveOp*> collectives_;
  std::unordered_map<const HloInstruction*, int64_t> pending_;  // async start -> its end
  std::unordered_set<const HloComputation*> walked_;
  StepTimeline timeline_;
};

}  // namespace

StepTimeline SimulateStep(const ir::HloModule& module, const CollectiveResult& collectives,
                          const StepTimelineOptions& options) {
  StepTimeline timeline = StepSimulator(collectives, options).Run(module);
  timeline.options = options;
  return timeline;
}

}  // namespace spmdsim::passes
