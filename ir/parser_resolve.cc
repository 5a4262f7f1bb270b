// The HLO text parser, what waits for a scope to close: a computation's parameters, operands
// and users, the shapes of compact get-tuple-elements and XLA's async sugar; the module's calls.
#include <algorithm>

#include "ir/parser_internal.h"

namespace spmdsim::ir::parser_internal {

// Indexes the parameters by number. A number past the computation's instruction count cannot
// number this computation's parameters, and sizing the table by it would let one short line
// allocate megabytes.
void HloParser::ResolveParameters(HloComputation& computation) {
  const size_t count = computation.instructions.size();
  auto& params = computation.parameters;
  for (const auto& [instr, offset] : pending_parameters_) {
    const auto index = static_cast<size_t>(instr->parameter_number);
    if (index >= count) {
      throw ParseError{offset, "parameter number " + std::to_string(index) +
                                   " out of range: computation '" + std::string(computation.name) +
                                   "' has " + std::to_string(count) + " instructions"};
    }
    if (params.size() <= index) params.resize(index + 1, nullptr);
    if (params[index] != nullptr) throw ParseError{offset, "duplicate parameter number"};
    params[index] = instr;
  }
}

void HloParser::ResolveOperands(HloComputation& computation) {
  for (const PendingRef& ref : pending_refs_) {
    HloInstruction* const target = instructions_by_name_.Find(ref.name);
    if (target == nullptr) {
      throw ParseError{ref.offset, "'" + std::string(ref.name) + "' is not defined in '" +
                                       std::string(computation.name) + "'"};
    }
    if (ref.index == SIZE_MAX) {
      ref.instruction->mutable_extras().control_predecessors.push_back(target);
    } else {
      ref.instruction->operands[ref.index] = target;
    }
  }
  if (operand_pending_) {
    FillUsersFromOperands(computation);  // a name used before its definition (rare)
  } else {
    FillUsers(computation);
  }
}

// Users, each once, in the computation's order, into arrays allocated once at their exact size:
// AddInstruction counted them and kept the edges. In a computation of a million instructions
// those are long out of cache by now, and this touches each once (to give it its array)
// instead of three times.
void HloParser::FillUsers(HloComputation& computation) {
  const size_t count = computation.instructions.size();  // user_counts_ is filled in
  // One array holds the computation's users, each instruction's a run of it that starts at the
  // offset kept in last_user_ (free once the counts are done).
  uint32_t total = 0;
  for (size_t local = 0; local < count; ++local) {
    last_user_[local] = total;
    total += user_counts_[local];
  }
  HloInstruction** const users = module_->arena().AllocateArray<HloInstruction*>(total).data();
  constexpr size_t kAhead = 16;  // the instructions are written here, long out of cache
  for (size_t local = 0; local < count; ++local) {
    if (local + kAhead < count) {
      __builtin_prefetch(&computation.instructions[local + kAhead]->users, 1);
    }
    uint32_t& filled = user_counts_[local];
    if (filled > 0) computation.instructions[local]->users = {users + last_user_[local], filled};
    filled = 0;  // from here on: the users filled in so far
  }
  size_t edge = 0;
  for (size_t user = 0; user < count; ++user) {
    HloInstruction* const instr = computation.instructions[user];
    for (uint32_t k = operand_counts_[user]; k > 0; --k) {
      const uint32_t operand = operand_locals_[edge++];
      // Users are added instruction by instruction, so a repeated operand finds this
      // instruction already last in its user array.
      uint32_t& filled = user_counts_[operand];
      HloInstruction** const run = users + last_user_[operand];
      if (filled == 0 || run[filled - 1] != instr) run[filled++] = instr;
    }
  }
}

// The same from the instructions themselves, once every operand is resolved.
void HloParser::FillUsersFromOperands(HloComputation& computation) {
  // Instruction ids are consecutive within a computation.
  const int64_t first_id = computation.instructions.front()->id;
  user_counts_.assign(computation.instructions.size(), 0);
  last_user_.assign(computation.instructions.size(), kPendingLocal);
  for (HloInstruction* instr : computation.instructions) {
    const auto user = static_cast<uint32_t>(instr->id - first_id);
    for (HloInstruction* operand : instr->operands) {
      const auto local = static_cast<size_t>(operand->id - first_id);
      if (last_user_[local] != user) {
        last_user_[local] = user;
        ++user_counts_[local];
      }
    }
  }
  for (HloInstruction* instr : computation.instructions) {
    uint32_t& count = user_counts_[static_cast<size_t>(instr->id - first_id)];
    instr->users = module_->arena().AllocateArray<HloInstruction*>(count);
    count = 0;  // from here on: the users filled in so far
  }
  for (HloInstruction* instr : computation.instructions) {
    for (HloInstruction* operand : instr->operands) {
      // Users are added instruction by instruction, so a repeated operand finds this
      // instruction already last in its user array.
      uint32_t& filled = user_counts_[static_cast<size_t>(operand->id - first_id)];
      if (filled == 0 || operand->users[filled - 1] != instr) operand->users[filled++] = instr;
    }
  }
}

// The shapes of the compact operands' get-tuple-elements, in the order they were defined (an
// element of an element after its tuple).
void HloParser::ResolveCompactElementShapes() {
  for (const auto& [gte, offset] : compact_elements_) {
    const Shape& tuple = gte->operands[0]->shape;
    const auto index = static_cast<size_t>(gte->tuple_index);
    if (!tuple.IsTuple() || index >= tuple.tuple_shapes().size()) {
      throw ParseError{offset, "'%" + std::string(gte->name) + "': '%" +
                                   std::string(gte->operands[0]->name) + "' has no element " +
                                   std::to_string(index)};
    }
    gte->shape = ShapeRef(PooledCopy(&tuple.tuple_shapes()[index]));
  }
}

// An "X-start(a, b), attrs" becomes what XLA's parser makes of it: async-start(a, b),
// calls=%<name>.async_wrapped, where that computation's parameters stand for a and b and its
// root is X(params) with the start's attributes, shaped as element 1 of the start's result.
// The update and done after it call the same computation.
void HloParser::DesugarAsyncOps(HloModule& module) {
  for (const auto& [start, wrapped_opcode] : sugared_starts_) {
    const Shape& shape = start->shape;
    if (!shape.IsTuple() || shape.tuple_shapes().size() < 2) {
      throw ParseError{module.SourceOffset(start->name),
                       "'" + std::string(start->opcode_name()) +
                           "' must return a tuple ((operands...), result, ...)"};
    }
    HloComputation* wrapped = module.NewComputation();
    wrapped->name = ArenaString(std::string(start->name) + ".async_wrapped");
    wrapped->implicit = true;
    wrapped->offset = module.SourceOffset(start->name);
    std::vector<HloInstruction*> params;
    for (size_t i = 0; i < start->operands.size(); ++i) {
      HloInstruction* param = module_->NewInstruction();
      param->parent = wrapped;
      param->name = ArenaString("async_param." + std::to_string(i));
      param->opcode = Opcode::kParameter;
      param->parameter_number = static_cast<int32_t>(i);
      param->shape = start->operands[i]->shape;
      param->id = NextInstructionId();
      wrapped->instructions.push_back(param);
      wrapped->parameters.push_back(param);
      params.push_back(param);
    }
    HloInstruction* root = module_->NewInstruction();
    root->parent = wrapped;
    root->name = ArenaString(std::string(start->name) + ".async_op");
    root->opcode = wrapped_opcode;
    root->is_root = true;
    root->shape = ShapeRef(PooledCopy(&shape.tuple_shapes()[1]));
    root->attributes = start->attributes;
    root->set_metadata(&start->metadata());
    root->operands = module_->arena().AllocateArray<HloInstruction*>(params.size());
    std::copy(params.begin(), params.end(), root->operands.begin());
    root->id = NextInstructionId();
    InstructionExtras& from = start->mutable_extras();
    InstructionExtras& to = root->mutable_extras();
    // The wrapped op's own attributes move to it; the start keeps what describes the start.
    to.replica_groups = std::move(from.replica_groups);
    to.source_target_pairs = std::move(from.source_target_pairs);
    to.channel_id = std::exchange(from.channel_id, -1);
    to.use_global_device_ids = std::exchange(from.use_global_device_ids, false);
    to.custom_call_target = std::exchange(from.custom_call_target, {});
    to.backend_config = from.backend_config;
    to.called_computations = std::move(from.called_computations);
    from.called_computations.clear();
    for (CalledComputation& called : to.called_computations) {
      if (called.computation == nullptr) continue;  // resolved at the end of the module
      auto& callers = called.computation->callers;
      std::replace(callers.begin(), callers.end(), start, root);
    }
    // Only this computation's calls can name the start: scan those, not the module's.
    for (size_t i = computation_first_call_; i < pending_calls_.size(); ++i) {
      if (pending_calls_[i].instruction == start) pending_calls_[i].instruction = root;
    }
    wrapped->instructions.push_back(root);
    wrapped->root = root;
    for (HloInstruction* param : params) {
      param->users = module_->arena().AllocateArray<HloInstruction*>(1);
      param->users[0] = root;
    }
    from.called_computations.push_back({"calls", wrapped});
    wrapped->callers.push_back(start);
    module.computations.push_back(wrapped);
    // The update/done chain that follows the start calls the same computation.
    std::vector<HloInstruction*> chain{start};
    while (!chain.empty()) {
      HloInstruction* at = chain.back();
      chain.pop_back();
      for (HloInstruction* user : at->users) {
        if ((user->opcode == Opcode::kAsyncUpdate || user->opcode == Opcode::kAsyncDone) &&
            user->Called("calls") == nullptr) {
          user->mutable_extras().called_computations.push_back({"calls", wrapped});
          wrapped->callers.push_back(user);
          chain.push_back(user);
        }
      }
    }
  }
  sugared_starts_.clear();
}

void HloParser::ResolveCalls() {
  for (const PendingCall& call : pending_calls_) {
    HloComputation* const callee = computations_by_name_.Find(call.name);
    if (callee == nullptr) {
      throw ParseError{call.offset, "computation '" + std::string(call.name) + "' is not defined"};
    }
    call.instruction->mutable_extras().called_computations[call.index].computation = callee;
    auto& callers = callee->callers;
    if (callers.empty() || callers.back() != call.instruction) {
      callers.push_back(call.instruction);
    }
  }
}

const Shape* HloParser::PooledCopy(const Shape* element) {
  auto [it, added] = element_shapes_.try_emplace(element, nullptr);
  if (added) it->second = module_->AddShape(*element);
  return it->second;
}

std::string_view HloParser::ArenaString(const std::string& text) {
  const std::span<char> chars = module_->arena().AllocateArray<char>(text.size());
  std::copy(text.begin(), text.end(), chars.begin());
  return {chars.data(), chars.size()};
}

}  // namespace spmdsim::ir::parser_internal
