// The counters a draw's hash reads (RandomKind::kCounters), walking up from the control-flow
// instruction where the hash starts: computed from constants, iotas and the device's position
// alone, through the key the hash adds into them.
#include <algorithm>
#include <set>

#include "passes/rng/random_provenance_internal.h"
#include "passes/rng/rng_site_finder.h"
#include "passes/rng/threefry_hashes.h"

namespace spmdsim::passes {

using ir::HloInstruction;
using ir::Opcode;

void FindDrawCounters(const DataflowAnalysis& dataflow, const HloInstruction& top, int32_t s,
                      const std::function<CounterWalk(int32_t slot, int32_t source)>& walk,
                      const std::function<bool(const HloInstruction*)>& is_hash,
                      std::vector<RandomKind>& kind, std::vector<int32_t>& source) {
  // rng-bit-generator reads no counters but its state: the key the draw prepares for it (JAX's
  // rbg lowering slices the key words, combines them into the u64 state, and XLA's partitioner
  // adds the shard's offset), back to the key derivation that made the key.
  const bool generator_state = top.opcode == Opcode::kRngBitGenerator;
  constexpr size_t kMaxWalk = 1 << 14;
  // Slot ranges [first, first + span) to walk up from.
  std::vector<std::pair<int32_t, int32_t>> pending;
  const auto push = [&](const HloInstruction* instr) {
    const int32_t first = dataflow.FirstSlot(instr);
    if (first >= 0) pending.emplace_back(first, dataflow.SlotSpan(first));
  };
  if (top.opcode == Opcode::kWhile) {
    // The rolled loop's counters are its two lanes; the rest of its state is the key schedule
    // and the rotation amounts.
    const int lanes = rng_internal::ThreefryLoopCounters(top.shape);
    const int32_t init = top.operands.empty() ? -1 : dataflow.FirstSlot(top.operands[0]);
    for (int k = 0; k < 2 && init >= 0; ++k) {
      const int32_t lane = dataflow.ChildSlot(init, lanes + k);
      if (lane >= 0) pending.emplace_back(lane, dataflow.SlotSpan(lane));
    }
  } else if (generator_state) {
    if (!top.operands.empty()) push(top.operands[0]);
  } else if (top.opcode == Opcode::kRng) {
    return;  // its operands are the distribution's bounds
  } else if (top.opcode == Opcode::kCustomCall) {
    // cu_threefry2x32(k0, k1, x0, x1): JAX's GPU kernel lowering broadcasts the key words to the
    // counters' shape; those arrays are the draw's inputs as much as the counters (the scalar
    // key words themselves are not counted).
    for (const HloInstruction* operand : top.operands) push(operand);
  } else {
    // The key enters a fused hash through its key schedule (ThreefryKeyOperands).
    const std::vector<const HloInstruction*> keys = top.opcode == Opcode::kFusion
                                                        ? ThreefryKeyOperands(&top)
                                                        : std::vector<const HloInstruction*>{};
    for (const HloInstruction* operand : top.operands) {
      if (std::find(keys.begin(), keys.end(), operand) == keys.end()) push(operand);
    }
  }
  size_t walked = 0;
  std::set<int32_t> seen;
  while (!pending.empty() && ++walked < kMaxWalk) {
    const auto [first, span] = pending.back();
    pending.pop_back();
    for (int32_t slot = first; slot < first + span; ++slot) {
      const ir::Shape& shape = dataflow.SlotShape(slot);
      // A predicate over counters (iota_2x32_shape's carry into the high word) is part of them.
      if (!shape.IsArray() || (!ir::IsIntegralType(shape.element_type()) &&
                               shape.element_type() != ir::PrimitiveType::kPred)) {
        continue;
      }
      // Counters are integer arrays; a scalar (an offset read from a table by the device's
      // position, a key word) is walked through, not counted.
      const bool scalar = shape.ElementCount() <= 1;
      const CounterWalk how = walk(slot, s);
      if (how == CounterWalk::kStop) continue;
      for (const int32_t id : dataflow.ValueSet(slot)) {
        const auto v = static_cast<size_t>(id);
        if (!seen.insert(id).second) continue;
        // The hash's input state: counters with the key schedule added (bits of the key's
        // draw, larger than a key), the lanes XLA:CPU's rolled loop starts from.
        const HloValue& value = dataflow.value(id);
        const HloInstruction* def = value.instruction;
        if (generator_state && is_hash(def)) continue;  // the key derivation itself
        const bool keyed_counters = how == CounterWalk::kThrough &&
                                    (shape.ElementCount() > kKeyElements || generator_state) &&
                                    kind[v] == RandomKind::kBits;
        if ((how == CounterWalk::kCounters && !scalar && kind[v] == RandomKind::kNone) ||
            keyed_counters) {
          kind[v] = RandomKind::kCounters;
          source[v] = s;
        }
        if (value.is_phi || def->opcode == Opcode::kParameter) continue;
        if (def->shape.IsTuple()) {
          if (const HloInstruction* moved =
                  rng_internal::MovedOperand(*def, dataflow.SlotIndex(value.slot))) {
            push(moved);
          } else if (def->opcode == Opcode::kFusion) {
            // An output a multi-output fusion computes from counters alone (XLA:GPU converts
            // iota_2x32_shape's strides into both counter words in one fusion): what it reads.
            const std::vector<std::vector<int64_t>> reads = RootParameters(def->Called("calls"));
            const ShapeIndex index = dataflow.SlotIndex(value.slot);
            std::vector<const HloInstruction*> read;
            bool counters_only =
                index.size() == 1 && index[0] >= 0 && static_cast<size_t>(index[0]) < reads.size();
            for (size_t k = 0; counters_only && k < reads[static_cast<size_t>(index[0])].size();
                 ++k) {
              const int64_t p = reads[static_cast<size_t>(index[0])][k];
              const HloInstruction* operand =
                  p >= 0 && static_cast<size_t>(p) < def->operands.size()
                      ? def->operands[static_cast<size_t>(p)]
                      : nullptr;
              const int32_t read_slot = operand != nullptr ? dataflow.FirstSlot(operand) : -1;
              // Arrays larger than a key, computed from neither data nor bits (not the step's
              // key words, which the hash's key schedule reads); for a generator, its state's
              // key words.
              const CounterWalk how_read = read_slot >= 0 ? walk(read_slot, s) : CounterWalk::kStop;
              counters_only =
                  read_slot >= 0 && operand->opcode != Opcode::kParameter &&
                  dataflow.SlotShape(read_slot).IsArray() &&
                  (generator_state ? how_read != CounterWalk::kStop
                                   : dataflow.SlotShape(read_slot).ElementCount() > kKeyElements &&
                                         how_read == CounterWalk::kCounters);
              read.push_back(operand);
            }
            if (counters_only) {
              for (const HloInstruction* operand : read) push(operand);
            }
          }
          continue;
        }
        for (const HloInstruction* operand : def->operands) push(operand);
      }
    }
  }
}

}  // namespace spmdsim::passes
