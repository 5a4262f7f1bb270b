#include "passes/memory/sharding_sizes.h"

#include <algorithm>

#include "ir/checked_math.h"

namespace spmdsim::passes {

using ir::HloInstruction;
using ir::Opcode;
using ir::Sharding;

namespace {

// Number of array leaves before `index` in pre-order: the position of the leaf's sharding in a
// tuple sharding.
int64_t LeafOrdinal(const ir::Shape& shape, const ShapeIndex& index) {
  int64_t ordinal = 0;
  const ir::Shape* current = &shape;
  for (int64_t k : index) {
    if (!current->IsTuple()) return -1;
    for (int64_t i = 0; i < k; ++i) {
      std::vector<const ir::Shape*> stack = {&current->tuple_shapes()[static_cast<size_t>(i)]};
      while (!stack.empty()) {
        const ir::Shape* s = stack.back();
        stack.pop_back();
        if (!s->IsTuple()) {
          ++ordinal;
          continue;
        }
        for (const ir::Shape& element : s->tuple_shapes()) stack.push_back(&element);
      }
    }
    current = &current->tuple_shapes()[static_cast<size_t>(k)];
  }
  return ordinal;
}

std::vector<int64_t> TilesOf(const Sharding& sharding, const ir::Shape& shape) {
  if (sharding.kind != Sharding::Kind::kTiled) return {};
  std::vector<int64_t> tiles(shape.dims().size(), 1);
  bool split = false;
  for (size_t d = 0; d < tiles.size(); ++d) {
    tiles[d] = std::max<int64_t>(1, sharding.TilesAlong(d));
    split |= tiles[d] > 1;
  }
  return split ? tiles : std::vector<int64_t>{};
}

// The output tiles implied by the operands' split dimensions (see the header).
std::vector<int64_t> TilesFromOperands(
    const ir::Shape& shape,
    const std::vector<std::pair<const ir::Shape*, const std::vector<int64_t>*>>& operands,
    int64_t max_tiles) {
  const auto& dims = shape.dims();
  std::vector<int64_t> tiles(dims.size(), 1);
  int64_t product = 1;
  bool split = false;
  for (const auto& [operand_shape, operand_tiles] : operands) {
    for (size_t d = 0; d < operand_tiles->size(); ++d) {
      const int64_t t = (*operand_tiles)[d];
      if (t <= 1 || d >= operand_shape->dims().size()) continue;
      const int64_t size = operand_shape->dims()[d];
      int64_t target = -1;
      if (d < dims.size() && dims[d] == size) {
        target = static_cast<int64_t>(d);
      } else {
        for (size_t o = 0; o < dims.size(); ++o) {
          if (dims[o] == size && tiles[o] == 1) {
            target = static_cast<int64_t>(o);
            break;
          }
        }
      }
      if (target < 0 || tiles[static_cast<size_t>(target)] >= t) continue;
      const int64_t next = ir::SaturatingMul(product / tiles[static_cast<size_t>(target)], t);
      if (next > max_tiles) continue;
      product = next;
      tiles[static_cast<size_t>(target)] = t;
      split = true;
    }
  }
  return split ? tiles : std::vector<int64_t>{};
}

}  // namespace

ShardingSizes ShardingSizes::Compute(const DataflowAnalysis& dataflow,
                                     const std::vector<const HloInstruction*>& order) {
  ShardingSizes sizes;
  sizes.dataflow_ = &dataflow;
  size_t total = 0;
  for (const HloInstruction* instr : order) {
    const int32_t first = dataflow.FirstSlot(instr);
    if (first >= 0) total = std::max(total, static_cast<size_t>(first + dataflow.SlotCount(instr)));
  }
  sizes.tiles_.assign(total, {});
  const int64_t max_tiles = std::max<int64_t>(1, dataflow.module().num_partitions);
  static const std::vector<int64_t> kWhole;

  const auto at = [&](const HloInstruction* instr,
                      const ShapeIndex& index) -> const std::vector<int64_t>& {
    const int32_t slot = dataflow.SlotAt(instr, index);
    return slot >= 0 && static_cast<size_t>(slot) < sizes.tiles_.size()
               ? sizes.tiles_[static_cast<size_t>(slot)]
               : kWhole;
  };

  std::vector<bool> fixed(total, false);  // set by a sharding attribute
  const auto forward = [&]() {
    for (const HloInstruction* instr : order) {
      const int32_t first = dataflow.FirstSlot(instr);
      if (first < 0) continue;
      for (int32_t slot = first; slot < first + dataflow.SlotCount(instr); ++slot) {
        const ir::Shape& shape = dataflow.SlotShape(slot);
        if (!shape.IsArray() || fixed[static_cast<size_t>(slot)]) continue;
        const ShapeIndex index = dataflow.SlotIndex(slot);
        std::vector<int64_t> tiles;
        if (instr->sharding() != nullptr) {
          fixed[static_cast<size_t>(slot)] = true;
          const Sharding* sharding = instr->sharding();
          if (sharding->IsTuple()) {
            const int64_t ordinal = LeafOrdinal(instr->shape, index);
            sharding = ordinal >= 0 && static_cast<size_t>(ordinal) < sharding->tuple.size()
                           ? &sharding->tuple[static_cast<size_t>(ordinal)]
                           : nullptr;
          }
          if (sharding != nullptr) tiles = TilesOf(*sharding, shape);
        } else if (instr->opcode == Opcode::kGetTupleElement && !instr->operands.empty()) {
          ShapeIndex operand_index = {instr->tuple_index};
          operand_index.insert(operand_index.end(), index.begin(), index.end());
          tiles = at(instr->operands[0], operand_index);
        } else if (instr->opcode == Opcode::kTuple && !index.empty() &&
                   static_cast<size_t>(index[0]) < instr->operands.size()) {
          tiles = at(instr->operands[static_cast<size_t>(index[0])],
                     ShapeIndex(index.begin() + 1, index.end()));
        } else if (instr->opcode == Opcode::kParameter) {
          for (const HloInstruction* caller : instr->parent->callers) {
            if (caller->opcode == Opcode::kWhile && !caller->operands.empty()) {
              tiles = at(caller->operands[0], index);
            } else if (caller->opcode == Opcode::kCall &&
                       static_cast<size_t>(instr->parameter_number) < caller->operands.size()) {
              tiles = at(caller->operands[static_cast<size_t>(instr->parameter_number)], index);
            }
            if (!tiles.empty()) break;
          }
        } else if ((instr->opcode == Opcode::kWhile ||
                    instr->opcode == Opcode::kOptimizationBarrier) &&
                   !instr->operands.empty()) {
          tiles = at(instr->operands[0], index);
        } else {
          std::vector<std::pair<const ir::Shape*, const std::vector<int64_t>*>> operands;
          for (const HloInstruction* operand : instr->operands) {
            if (!operand->shape.IsArray()) continue;
            const std::vector<int64_t>& operand_tiles = at(operand, {});
            if (!operand_tiles.empty())
              operands.emplace_back(&operand->shape.get(), &operand_tiles);
          }
          tiles = TilesFromOperands(shape, operands, max_tiles);
        }
        if (!tiles.empty() || sizes.tiles_[static_cast<size_t>(slot)].empty()) {
          sizes.tiles_[static_cast<size_t>(slot)] = std::move(tiles);
        }
      }
    }
  };
  // Unannotated arrays that no operand splits take the split of their users (a mask broadcast
  // to the activations' shape), then splits flow forward again.
  const auto backward = [&]() {
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const HloInstruction* instr = *it;
      const int32_t slot = dataflow.FirstSlot(instr);
      if (slot < 0 || !instr->shape.IsArray() || fixed[static_cast<size_t>(slot)] ||
          !sizes.tiles_[static_cast<size_t>(slot)].empty()) {
        continue;
      }
      std::vector<std::pair<const ir::Shape*, const std::vector<int64_t>*>> users;
      for (const HloInstruction* user : instr->users) {
        if (!user->shape.IsArray()) continue;
        const std::vector<int64_t>& user_tiles = at(user, {});
        if (!user_tiles.empty()) users.emplace_back(&user->shape.get(), &user_tiles);
      }
      sizes.tiles_[static_cast<size_t>(slot)] = TilesFromOperands(instr->shape, users, max_tiles);
    }
  };
  forward();
  backward();
  forward();
  return sizes;
}

const std::vector<int64_t>& ShardingSizes::SlotTiles(int32_t slot) const {
  static const std::vector<int64_t> kWhole;
  return static_cast<size_t>(slot) < tiles_.size() ? tiles_[static_cast<size_t>(slot)] : kWhole;
}

int64_t ShardingSizes::SlotBytes(int32_t slot) const {
  const ir::Shape& shape = dataflow_->SlotShape(slot);
  const std::vector<int64_t>& tiles = SlotTiles(slot);
  if (!shape.IsArray() || tiles.empty()) return shape.ByteSize();
  ir::Shape piece = shape;
  auto& dims = piece.mutable_dims();
  for (size_t d = 0; d < dims.size() && d < tiles.size(); ++d) {
    dims[d] = ir::CeilDiv(dims[d], tiles[d]);
  }
  return piece.ByteSize();
}

}  // namespace spmdsim::passes
