#include "passes/memory/live_range_analysis.h"

#include <algorithm>
#include <tuple>

#include "ir/dataflow_graph.h"

namespace spmdsim::passes {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;

int64_t LiveRangeAnalysis::TimeOf(const HloInstruction* instruction) const {
  const auto id = static_cast<size_t>(instruction->id);
  return id < time_.size() ? time_[id] : -1;
}

class LiveRangeBuilder {
 public:
  LiveRangeBuilder(const DataflowAnalysis& dataflow, const AliasAnalysis& alias)
      : df_(dataflow), alias_(alias) {}

  LiveRangeAnalysis Build() {
    const ir::HloModule& module = df_.module();
    r_.scheduled_ = module.is_scheduled;
    r_.time_.assign(module.instruction_id_bound, -1);
    seen_.assign(module.instruction_id_bound, 0);
    r_.ranges_.assign(df_.values().size(), TimeBound{});
    r_.has_range_.assign(df_.values().size(), false);
    if (module.entry == nullptr) return std::move(r_);
    Flatten(module.entry, nullptr);
    ComputeRanges();
    NormalizeAliasedBuffers();
    return std::move(r_);
  }

 private:
  struct Span {
    int64_t start = 0;
    int64_t end = 0;  // one past the last instruction
  };

  // The computation's instructions in an order where operands and control predecessors come
  // first: the text order when it already is one (always, for XLA's dumps; `reordered` stays
  // empty), else the dependency order of ir/dataflow_graph.h (ties by text position; the text
  // order if there is a cycle).
  void Sequence(const HloComputation* computation, std::vector<const HloInstruction*>& reordered) {
    // Marks by instruction id of those seen so far. Never cleared: each computation is
    // sequenced once, and only marks of its own instructions are read.
    bool ordered = true;
    const auto seen = [&](const HloInstruction* instr) {
      return seen_[static_cast<size_t>(instr->id)] != 0;
    };
    for (const HloInstruction* instr : computation->instructions) {
      for (const HloInstruction* operand : instr->operands) {
        if (operand->parent == computation && !seen(operand)) ordered = false;
      }
      for (const HloInstruction* pred : instr->control_predecessors()) {
        if (pred->parent == computation && !seen(pred)) ordered = false;
      }
      seen_[static_cast<size_t>(instr->id)] = 1;
    }
    if (ordered) return;
    if (const auto order = ir::DependencyOrder(*computation)) {
      reordered.assign(order->begin(), order->end());
    }
  }

  // Recursive over calls; the parser bounds the depth (ir::kMaxCallNesting).
  void Flatten(const HloComputation* computation, const HloComputation* async_context) {
    if (spans_.count(computation)) return;
    if (async_context != nullptr) async_context_[computation] = async_context;
    const int64_t start = static_cast<int64_t>(r_.sequence_.size());
    spans_[computation] = Span{start, start};  // marks it as in progress
    std::vector<const HloInstruction*> reordered;
    Sequence(computation, reordered);
    const auto place = [&](const HloInstruction* instr) {
      switch (instr->opcode) {
        case Opcode::kCall:
        case Opcode::kConditional:
          for (const ir::CalledComputation& called : instr->called_computations()) {
            if (called.computation != nullptr) {
              Flatten(called.computation, async_context);
            }
          }
          break;
        case Opcode::kAsyncStart:
          if (const HloComputation* wrapped = instr->Called("calls")) {
            async_start_of_[wrapped] = instr;
            Flatten(wrapped, wrapped);
          }
          break;
        case Opcode::kWhile:
          if (const HloComputation* cond = instr->Called("condition")) {
            Flatten(cond, async_context);
          }
          if (const HloComputation* body = instr->Called("body")) {
            Flatten(body, async_context);
          }
          break;
        default:
          break;
      }
      r_.time_[static_cast<size_t>(instr->id)] = static_cast<int64_t>(r_.sequence_.size());
      r_.sequence_.push_back(instr);
    };
    if (reordered.empty()) {
      for (const HloInstruction* instr : computation->instructions) place(instr);
    } else {
      for (const HloInstruction* instr : reordered) place(instr);
    }
    spans_[computation] = Span{start, static_cast<int64_t>(r_.sequence_.size())};
  }

  // The async-done that ends the chain started by `start` (through async-updates), or nullptr.
  static const HloInstruction* AsyncDoneOf(const HloInstruction* start) {
    const HloInstruction* current = start;
    for (int guard = 0; guard < 64; ++guard) {
      const HloInstruction* next = nullptr;
      for (const HloInstruction* user : current->users) {
        if ((user->opcode == Opcode::kAsyncUpdate || user->opcode == Opcode::kAsyncDone) &&
            !user->operands.empty() && user->operands[0] == current) {
          next = user;
          break;
        }
      }
      if (next == nullptr) return nullptr;
      if (next->opcode == Opcode::kAsyncDone) return next;
      current = next;
    }
    return nullptr;
  }

  static bool IsRoot(const HloInstruction* instr) { return instr == instr->parent->root; }

  bool ParameterHasAlias(const HloInstruction* param, int32_t slot) const {
    return df_.InputOutputAliases().ParameterAliased(param->parameter_number, df_.SlotIndex(slot));
  }

  int64_t LastUsageTime(const HloValue& value) const {
    int64_t end = -1;
    for (const HloUse& use : value.uses) {
      const HloInstruction* used = use.user;
      if (used->opcode == Opcode::kCall) continue;
      if (used->opcode == Opcode::kWhile) {
        const HloComputation* body = used->Called("body");
        if (body == nullptr || body->parameters.empty() || body->parameters[0] == nullptr) {
          continue;
        }
        used = body->parameters[0];
      }
      const int64_t t = r_.TimeOf(used);
      if (t >= 0) end = std::max(end, t);
    }
    return end;
  }

  void ComputeRanges() {
    const ir::HloModule& module = df_.module();
    // The values each instruction defines, by instruction id, in one flat array (ids ascend).
    std::vector<uint32_t> defined_begin(r_.time_.size() + 1, 0);
    for (const HloValue& value : df_.values()) {
      ++defined_begin[static_cast<size_t>(value.instruction->id) + 1];
    }
    for (size_t i = 1; i < defined_begin.size(); ++i) defined_begin[i] += defined_begin[i - 1];
    std::vector<int32_t> defined(df_.values().size());
    {
      std::vector<uint32_t> filled(defined_begin.begin(), defined_begin.end() - 1);
      for (const HloValue& value : df_.values()) {
        defined[filled[static_cast<size_t>(value.instruction->id)]++] = value.id;
      }
    }
    for (const HloInstruction* instr : r_.sequence_) {
      const int64_t time = r_.time_[static_cast<size_t>(instr->id)];
      const HloComputation* computation = instr->parent;
      const Span& span = spans_[computation];
      int64_t start = instr->opcode == Opcode::kParameter ? span.start : time;
      int64_t definition_end = IsRoot(instr) ? span.end : time;
      auto context = async_context_.find(computation);
      if (context != async_context_.end()) {
        auto start_it = async_start_of_.find(context->second);
        if (start_it != async_start_of_.end()) {
          if (const HloInstruction* done = AsyncDoneOf(start_it->second)) {
            definition_end = std::max(definition_end, r_.TimeOf(done));
          }
          // A value computed by the wrapped computation exists once the async-start runs (XLA's
          // live-range files start it there, though the wrapped instructions are flattened
          // before the start).
          if (instr->opcode != Opcode::kParameter) {
            start = std::max(start, r_.TimeOf(start_it->second));
            definition_end = std::max(definition_end, start);
          }
        }
      }
      const auto id_of = static_cast<size_t>(instr->id);
      for (uint32_t k = defined_begin[id_of]; k < defined_begin[id_of + 1]; ++k) {
        const int32_t id = defined[k];
        const HloValue& value = df_.value(id);
        int64_t end = definition_end;
        for (size_t p = 1; p < value.positions.size(); ++p) {
          const HloInstruction* at = df_.SlotInstruction(value.positions[p]);
          int64_t t = -1;
          if (IsRoot(at)) {
            auto it = spans_.find(at->parent);
            if (it == spans_.end()) continue;
            t = it->second.end;
          } else {
            t = r_.TimeOf(at);
            if (t < 0) continue;
          }
          end = std::max(end, t);
        }
        if (instr->opcode == Opcode::kParameter && computation == module.entry &&
            !ParameterHasAlias(instr, value.slot)) {
          end = r_.EndTime();
        } else {
          end = std::max(end, LastUsageTime(value));
        }
        r_.ranges_[id] = TimeBound{start, std::max(start, end)};
        r_.has_range_[id] = true;
      }
    }
  }

  void NormalizeAliasedBuffers() {
    for (const HloBuffer& buffer : alias_.buffers()) {
      if (buffer.values.size() < 2) continue;
      std::vector<int32_t> ids;
      for (int32_t id : buffer.values) {
        if (r_.has_range_[id]) ids.push_back(id);
      }
      std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
        const TimeBound& ra = r_.ranges_[a];
        const TimeBound& rb = r_.ranges_[b];
        return std::tie(ra.start, ra.end, a) < std::tie(rb.start, rb.end, b);
      });
      for (size_t i = 0; i + 1 < ids.size(); ++i) {
        TimeBound& first = r_.ranges_[ids[i]];
        TimeBound& second = r_.ranges_[ids[i + 1]];
        second.end = std::max(first.end, second.end);
        first.end = std::min(first.end, second.start);
      }
    }
  }

  const DataflowAnalysis& df_;
  const AliasAnalysis& alias_;
  LiveRangeAnalysis r_;
  std::vector<uint8_t> seen_;  // Sequence's marks, by instruction id
  std::unordered_map<const HloComputation*, Span> spans_;
  std::unordered_map<const HloComputation*, const HloComputation*> async_context_;
  std::unordered_map<const HloComputation*, const HloInstruction*> async_start_of_;
};

LiveRangeAnalysis LiveRangeAnalysis::Run(const DataflowAnalysis& dataflow,
                                         const AliasAnalysis& alias, const LiveRangeOptions&) {
  return LiveRangeBuilder(dataflow, alias).Build();
}

}  // namespace spmdsim::passes
