#include "passes/memory/buffer_sharing_rules.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <deque>
#include <optional>
#include <unordered_set>

namespace spmdsim::passes {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;

namespace {

// Reads "{1,2}" at `pos` into `index`; false on anything else.
bool ReadIndex(std::string_view text, size_t& pos, ShapeIndex& index) {
  while (pos < text.size() && text[pos] == ' ') ++pos;
  if (pos >= text.size() || text[pos] != '{') return false;
  ++pos;
  while (pos < text.size() && text[pos] != '}') {
    if (text[pos] == ',' || text[pos] == ' ') {
      ++pos;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(text[pos]))) return false;
    int64_t value = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      if (value > (INT64_MAX - 9) / 10) return false;
      value = value * 10 + (text[pos++] - '0');
    }
    index.push_back(value);
  }
  if (pos >= text.size()) return false;
  ++pos;
  return true;
}

// output_to_operand_aliasing={{0}: (1, {}), {1}: (0, {2})}
//   entry ::= index ':' '(' int ',' index ')'
std::vector<InPlacePair> ParseOutputToOperandAliasing(std::string_view text) {
  std::vector<InPlacePair> pairs;
  size_t pos = 0;
  while (pos < text.size() && text[pos] == ' ') ++pos;
  if (pos >= text.size() || text[pos] != '{') return pairs;
  ++pos;
  while (pos < text.size()) {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == ',')) ++pos;
    if (pos >= text.size() || text[pos] == '}') break;
    InPlacePair pair;
    if (!ReadIndex(text, pos, pair.output_index)) return {};
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == ':')) ++pos;
    if (pos >= text.size() || text[pos] != '(') return {};
    ++pos;
    int64_t number = 0;
    bool digits = false;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      if (number > (INT64_MAX - 9) / 10) return {};
      number = number * 10 + (text[pos++] - '0');
      digits = true;
    }
    if (!digits) return {};
    pair.operand_number = number;
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == ',')) ++pos;
    if (!ReadIndex(text, pos, pair.operand_index)) return {};
    while (pos < text.size() && text[pos] == ' ') ++pos;
    if (pos >= text.size() || text[pos] != ')') return {};
    ++pos;
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

// Follows tuple and get-tuple-element indirection backwards (XLA's FollowTupleIndirection).
std::pair<const HloInstruction*, ShapeIndex> FollowTupleIndirection(const HloInstruction* instr,
                                                                    ShapeIndex index) {
  while (instr->opcode == Opcode::kTuple && !index.empty()) {
    const auto element = static_cast<size_t>(index.front());
    if (element >= instr->operands.size()) break;
    instr = instr->operands[element];
    index.erase(index.begin());
  }
  while (instr->opcode == Opcode::kGetTupleElement && !instr->operands.empty()) {
    index.insert(index.begin(), instr->tuple_index);
    instr = instr->operands[0];
  }
  return {instr, index};
}

void ForEachLeafIndex(const ir::Shape& shape, ShapeIndex& index, std::vector<ShapeIndex>& leaves) {
  if (!shape.IsTuple()) {
    leaves.push_back(index);
    return;
  }
  for (size_t i = 0; i < shape.tuple_shapes().size(); ++i) {
    index.push_back(static_cast<int64_t>(i));
    ForEachLeafIndex(shape.tuple_shapes()[i], index, leaves);
    index.pop_back();
  }
}

std::vector<InPlacePair> FusionInPlacePairs(const HloInstruction& fusion, SharingRuleMemo& memo) {
  std::vector<InPlacePair> pairs;
  const HloComputation* fused = fusion.Called("calls");
  if (fused == nullptr || fused->root == nullptr) return pairs;
  std::vector<ShapeIndex> leaves;
  ShapeIndex scratch;
  ForEachLeafIndex(fusion.shape, scratch, leaves);
  for (const ShapeIndex& leaf : leaves) {
    auto [source, source_index] = FollowTupleIndirection(fused->root, leaf);
    const HloInstruction* input = nullptr;
    ShapeIndex input_index;
    for (const InPlacePair& pair : InPlaceInputOutputPairs(*source, memo)) {
      if (pair.output_index != source_index) continue;
      if (static_cast<size_t>(pair.operand_number) >= source->operands.size()) continue;
      input = source->operands[static_cast<size_t>(pair.operand_number)];
      input_index = pair.operand_index;
      std::tie(input, input_index) = FollowTupleIndirection(input, input_index);
      if (input->opcode == Opcode::kFusion) {
        for (const InPlacePair& nested : InPlaceInputOutputPairs(*input, memo)) {
          if (nested.output_index != input_index) continue;
          if (static_cast<size_t>(nested.operand_number) >= input->operands.size()) continue;
          input_index = nested.operand_index;
          input = input->operands[static_cast<size_t>(nested.operand_number)];
          std::tie(input, input_index) = FollowTupleIndirection(input, input_index);
        }
      }
    }
    if (input != nullptr && input->opcode == Opcode::kBitcast && !input->operands.empty()) {
      input = input->operands[0];
    }
    if (input != nullptr && input->opcode == Opcode::kParameter) {
      pairs.push_back(InPlacePair{input->parameter_number, input_index, leaf});
    }
  }
  for (InPlacePair& pair :
       ParseOutputToOperandAliasing(fusion.FindAttribute("output_to_operand_aliasing"))) {
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

const HloInstruction* FusedParameter(const HloInstruction& fusion, int64_t operand_number) {
  const HloComputation* fused = fusion.Called("calls");
  if (fused == nullptr || operand_number < 0 ||
      static_cast<size_t>(operand_number) >= fused->parameters.size()) {
    return nullptr;
  }
  return fused->parameters[static_cast<size_t>(operand_number)];
}

// Every transitive use of `instr` inside its computation is elementwise or a tuple.
bool AreTransitiveUsesElementwiseOrTuple(const HloInstruction* instr, SharingRuleMemo& memo) {
  std::unordered_set<const HloInstruction*> visited;
  std::vector<const HloInstruction*> stack = {instr};
  while (!stack.empty()) {
    const HloInstruction* current = stack.back();
    stack.pop_back();
    visited.insert(current);
    for (const HloInstruction* user : current->users) {
      for (size_t i = 0; i < user->operands.size(); ++i) {
        if (user->operands[i] != current) continue;
        if (!IsElementwiseOnOperand(*user, static_cast<int64_t>(i), memo) &&
            user->opcode != Opcode::kTuple) {
          return false;
        }
      }
      if (!visited.count(user)) stack.push_back(user);
    }
  }
  return true;
}

}  // namespace

std::string_view FusionKind(const HloInstruction& instruction) {
  return instruction.FindAttribute("kind");
}

namespace {

std::vector<InPlacePair> ComputeInPlacePairs(const HloInstruction& instruction,
                                             SharingRuleMemo& memo) {
  switch (instruction.opcode) {
    case Opcode::kDynamicUpdateSlice:
      return {InPlacePair{0, {}, {}}};
    case Opcode::kScatter: {
      // scatter(operands..., indices, updates...): n operands, 1 indices, n updates.
      const auto n = static_cast<int64_t>((instruction.operands.size() - 1) / 2);
      if (n <= 1) return {InPlacePair{0, {}, {}}};
      std::vector<InPlacePair> pairs;
      for (int64_t i = 0; i < n; ++i) pairs.push_back(InPlacePair{i, {}, {i}});
      return pairs;
    }
    case Opcode::kAllReduceStart: {
      if (instruction.operands.size() == 1) return {InPlacePair{0, {}, {}}};
      std::vector<InPlacePair> pairs;
      for (size_t i = 0; i < instruction.operands.size(); ++i) {
        pairs.push_back(InPlacePair{static_cast<int64_t>(i), {}, {static_cast<int64_t>(i)}});
      }
      return pairs;
    }
    case Opcode::kCollectivePermute:
    case Opcode::kCollectivePermuteStart: {
      if (instruction.operands.size() != 4) return {};
      const ShapeIndex out =
          instruction.opcode == Opcode::kCollectivePermute ? ShapeIndex{} : ShapeIndex{1};
      std::vector<InPlacePair> pairs = {InPlacePair{1, {}, out}};
      const ir::Shape& buffer = instruction.operands[1]->shape;
      if (buffer.IsTuple()) {
        for (size_t i = 0; i < buffer.tuple_shapes().size(); ++i) {
          ShapeIndex element_out = out;
          element_out.push_back(static_cast<int64_t>(i));
          pairs.push_back(InPlacePair{1, {static_cast<int64_t>(i)}, element_out});
        }
      }
      return pairs;
    }
    case Opcode::kCustomCall:
    case Opcode::kAsyncStart:  // e.g. an async all-reduce writing into its operand: {{1}: (0, {})}
      return ParseOutputToOperandAliasing(instruction.FindAttribute("output_to_operand_aliasing"));
    case Opcode::kFusion:
      return FusionInPlacePairs(instruction, memo);
    case Opcode::kSetDimensionSize:
      return {InPlacePair{0, {}, {}}};
    case Opcode::kRaggedAllToAll:
      return {InPlacePair{1, {}, {}}};
    default:
      return {};
  }
}

}  // namespace

const std::vector<InPlacePair>& InPlaceInputOutputPairs(const HloInstruction& instruction,
                                                        SharingRuleMemo& memo) {
  if (const auto it = memo.in_place.find(&instruction); it != memo.in_place.end()) {
    return it->second;
  }
  std::vector<InPlacePair> pairs = ComputeInPlacePairs(instruction, memo);
  // Most instructions write nothing in place and answer in O(1): one shared empty answer spares
  // them a memo entry each (a million on a flat graph). A fusion's answer walks its body, so it
  // is kept even when empty. Kept answers stay where they are (an unordered_map's elements do):
  // callers iterate the returned vector while the recursion adds entries.
  static const std::vector<InPlacePair> kNone;
  if (pairs.empty() && instruction.opcode != Opcode::kFusion) return kNone;
  return memo.in_place.insert_or_assign(&instruction, std::move(pairs)).first->second;
}

std::vector<InPlacePair> InPlaceInputOutputPairs(const HloInstruction& instruction) {
  SharingRuleMemo memo;
  return ComputeInPlacePairs(instruction, memo);
}

namespace {

bool IsElementwise(const HloInstruction& instruction, SharingRuleMemo& memo) {
  if (instruction.opcode == Opcode::kDynamicUpdateSlice) return false;
  if (instruction.opcode == Opcode::kBitcastConvert && !instruction.operands.empty() &&
      ir::PrimitiveTypeBitWidth(instruction.shape.element_type()) !=
          ir::PrimitiveTypeBitWidth(instruction.operands[0]->shape.element_type())) {
    return false;
  }
  if (instruction.opcode == Opcode::kFusion) {
    const HloComputation* fused = instruction.Called("calls");
    if (fused == nullptr) return false;
    if (const auto it = memo.fused_elementwise.find(fused); it != memo.fused_elementwise.end()) {
      return it->second;
    }
    bool elementwise = true;
    for (const HloInstruction* inner : fused->instructions) {
      if (inner->opcode != Opcode::kParameter && !IsElementwise(*inner, memo)) {
        elementwise = false;
        break;
      }
    }
    memo.fused_elementwise.emplace(fused, elementwise);
    return elementwise;
  }
  return ir::IsElementwiseOpcode(instruction.opcode);
}

// Every instruction between the fused parameter and the root is elementwise on it.
bool FusedParameterUsesAreElementwise(const HloInstruction* param, SharingRuleMemo& memo) {
  std::deque<const HloInstruction*> worklist = {param};
  std::unordered_set<const HloInstruction*> visited = {param};
  while (!worklist.empty()) {
    const HloInstruction* operand = worklist.front();
    worklist.pop_front();
    for (const HloInstruction* user : operand->users) {
      if (visited.count(user)) continue;
      bool elementwise = IsElementwise(*user, memo);
      if (!elementwise) {
        elementwise = true;
        for (size_t i = 0; i < user->operands.size(); ++i) {
          if (user->operands[i] == operand &&
              !IsElementwiseOnOperand(*user, static_cast<int64_t>(i), memo)) {
            elementwise = false;
          }
        }
      }
      if (!elementwise) return false;
      worklist.push_back(user);
      visited.insert(user);
    }
  }
  return true;
}

}  // namespace

bool IsElementwiseOnOperand(const HloInstruction& instruction, int64_t operand_number,
                            SharingRuleMemo& memo) {
  if (instruction.opcode == Opcode::kDynamicUpdateSlice) return operand_number == 0;
  if (instruction.opcode != Opcode::kFusion) return IsElementwise(instruction, memo);
  // A fusion is elementwise on an operand when every instruction between the fused parameter
  // and the root is elementwise on it.
  const HloInstruction* param = FusedParameter(instruction, operand_number);
  if (param == nullptr) return false;
  const auto key = std::make_pair(param->parent, operand_number);
  if (const auto it = memo.fused_elementwise_on_parameter.find(key);
      it != memo.fused_elementwise_on_parameter.end()) {
    return it->second;
  }
  const bool elementwise = FusedParameterUsesAreElementwise(param, memo);
  memo.fused_elementwise_on_parameter.emplace(key, elementwise);
  return elementwise;
}

bool IsElementwiseOnOperand(const HloInstruction& instruction, int64_t operand_number) {
  SharingRuleMemo memo;
  return IsElementwiseOnOperand(instruction, operand_number, memo);
}

namespace {

const HloInstruction* SkipBitcast(const HloInstruction* instr) {
  return instr->opcode == Opcode::kBitcast && !instr->operands.empty() ? instr->operands[0] : instr;
}

// The reduction a reduction-emitter fusion computes first (HloFusionAnalysis::FindHeroReduction):
// a reduce among the fusion's outputs, seen through bitcasts and elementwise epilogues of one
// operand; null when the fusion is not a reduction.
const HloInstruction* HeroReduction(const HloComputation& fused) {
  std::vector<const HloInstruction*> roots;
  if (fused.root->opcode == Opcode::kTuple) {
    roots.assign(fused.root->operands.begin(), fused.root->operands.end());
  } else {
    roots.push_back(fused.root);
  }
  for (const HloInstruction* root : roots) {
    const HloInstruction* at = root;
    while (at->opcode != Opcode::kReduce && at->operands.size() == 1 &&
           (at->opcode == Opcode::kBitcast || ir::IsElementwiseOpcode(at->opcode))) {
      at = at->operands[0];
    }
    if (at->opcode == Opcode::kReduce) return at;
  }
  return nullptr;
}

int64_t FirstOperandIndex(const HloInstruction& user, const HloInstruction* operand) {
  for (size_t i = 0; i < user.operands.size(); ++i) {
    if (user.operands[i] == operand) return static_cast<int64_t>(i);
  }
  return -1;
}

// The number after `key` in a backend config's JSON ("1", 1, 1.5); 0 when absent or unreadable.
double JsonNumberAfter(std::string_view config, std::string_view key) {
  const size_t at = config.find(key);
  if (at == std::string_view::npos) return 0.0;
  std::string number;
  for (char c : config.substr(at + key.size())) {
    if (c == '"' || c == ' ') continue;
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != 'e' &&
        c != 'E' && c != '+') {
      break;
    }
    number += c;
  }
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  return end != nullptr && *end == '\0' && !number.empty() ? value : 0.0;
}

bool IsEffectiveScalar(const ir::Shape& shape) {
  return shape.IsArray() && shape.ElementCount() == 1;
}

// xla/service/gpu/buffer_sharing.cc FusionCanShareBufferHint: the fused parameter reaches the
// output through elementwise operations and bitcasts only, in the output's iteration order.
bool GpuFusionPathAllowsSharing(const HloInstruction& fusion, int64_t operand_number,
                                const ShapeIndex& user_index, SharingRuleMemo& memo) {
  const HloComputation* fused = fusion.Called("calls");
  const HloInstruction* param = FusedParameter(fusion, operand_number);
  if (fused == nullptr || fused->root == nullptr || param == nullptr) return false;
  const HloInstruction* output = fused->root;
  const bool multi_output = output->opcode == Opcode::kTuple;
  if (multi_output) {
    if (user_index.empty() || user_index[0] < 0 ||
        static_cast<size_t>(user_index[0]) >= output->operands.size()) {
      return false;
    }
    output = output->operands[static_cast<size_t>(user_index[0])];
  }
  const HloInstruction* non_bitcast_root = SkipBitcast(output);
  const HloInstruction* hero = HeroReduction(*fused);
  std::deque<const HloInstruction*> queue = {param};
  std::unordered_set<const HloInstruction*> visited = {param};
  bool found_path_to_output = false;
  while (!queue.empty()) {
    const HloInstruction* current = queue.front();
    queue.pop_front();
    if (current == output) found_path_to_output = true;
    if (current == hero) continue;  // the reduction is computed before the outputs are written
    for (const HloInstruction* hlo : current->users) {
      if (visited.insert(hlo).second) queue.push_back(hlo);
      const int64_t at = FirstOperandIndex(*hlo, current);
      if (hlo == non_bitcast_root && hlo->opcode == Opcode::kScatter) {
        const auto inputs =
            static_cast<int64_t>(hlo->shape.IsTuple() ? hlo->shape.tuple_shapes().size() : 1);
        if (at < inputs && std::count(hlo->operands.begin(), hlo->operands.end(), current) == 1) {
          continue;
        }
      }
      if (non_bitcast_root->opcode == Opcode::kDynamicUpdateSlice &&
          hlo->opcode == Opcode::kDynamicSlice && non_bitcast_root->operands.size() >= 2 &&
          !hlo->operands.empty() && non_bitcast_root->operands[0] == hlo->operands[0] &&
          hlo->shape == non_bitcast_root->operands[1]->shape) {
        // The same slice read and written is safe; different slices might overlap.
        if (!IsEffectiveScalar(hlo->shape) ||
            !IsEffectiveScalar(non_bitcast_root->operands[1]->shape)) {
          for (size_t i = 1; i < hlo->operands.size(); ++i) {
            if (i + 1 >= non_bitcast_root->operands.size() ||
                hlo->operands[i] != non_bitcast_root->operands[i + 1]) {
              return false;
            }
          }
        }
      } else if ((!IsElementwiseOnOperand(*hlo, at, memo) || hlo->opcode == Opcode::kCopy) &&
                 hlo->opcode != Opcode::kBitcast && hlo->opcode != Opcode::kTuple && hlo != hero) {
        if (hlo != non_bitcast_root || hlo->opcode != Opcode::kDynamicUpdateSlice || at != 1) {
          return false;
        }
      }
    }
  }
  if (multi_output && !IsElementwise(*non_bitcast_root, memo)) {
    for (const HloInstruction* other : fused->root->operands) {
      if (other != output && visited.count(other) != 0) return false;
    }
  }
  return found_path_to_output;
}

// A collective whose output i may take operand i's buffer (a single operand: the whole output).
bool WritesOutputOverOperand(const HloInstruction& operand, const HloInstruction& user,
                             const ShapeIndex& user_index) {
  return user.operands.size() == 1 ||
         (user_index.size() == 1 && user_index[0] >= 0 &&
          static_cast<size_t>(user_index[0]) < user.operands.size() &&
          user.operands[static_cast<size_t>(user_index[0])] == &operand);
}

// XLA:GPU's CanShareBufferHint; nullopt where it leaves the decision to the default rules.
std::optional<bool> GpuSharingHint(const DataflowAnalysis& dataflow, const HloInstruction& operand,
                                   const HloInstruction& user, int32_t user_slot,
                                   SharingRuleMemo& memo) {
  const ShapeIndex user_index = dataflow.SlotIndex(user_slot);
  switch (user.opcode) {
    case Opcode::kAllReduce:
    case Opcode::kCollectiveBroadcast:
      return WritesOutputOverOperand(operand, user, user_index);
    case Opcode::kCustomCall: {
      const std::string_view target = user.custom_call_target();
      if (target == "__cublas$lt$matmul") {
        // gemm_backend_config's beta: the bias is accumulated into, so it may be overwritten.
        return JsonNumberAfter(user.backend_config(), "\"beta\":") != 0.0 &&
               user.operands.size() > 2 && user.operands[2] == &operand;
      }
      if (target == "__cusolver$cholesky") return user_index.size() == 1 && user_index[0] == 0;
      return false;
    }
    case Opcode::kFusion: {
      const ir::Shape& operand_shape = operand.shape;
      const ir::Shape& user_shape = dataflow.SlotShape(user_slot);
      if (!(operand_shape == user_shape)) {
        if (!operand_shape.IsArray() || !user_shape.IsArray()) return false;
        if (operand_shape.ElementCount() != user_shape.ElementCount()) return false;
        if (ir::PrimitiveTypeBitWidth(operand_shape.element_type()) !=
            ir::PrimitiveTypeBitWidth(user_shape.element_type())) {
          return false;
        }
      }
      const int64_t operand_number = memo.operand_numbers.First(user, &operand);
      const auto key = std::make_tuple(&user, operand_number, user_index);
      if (const auto it = memo.gpu_fusion_hint.find(key); it != memo.gpu_fusion_hint.end()) {
        return it->second;
      }
      const bool allowed = GpuFusionPathAllowsSharing(user, operand_number, user_index, memo);
      memo.gpu_fusion_hint.emplace(key, allowed);
      return allowed;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

bool CanShareOperandBufferWithUser(const DataflowAnalysis& dataflow, const HloInstruction& operand,
                                   int32_t operand_slot, const HloInstruction& user,
                                   int32_t user_slot, SharingRuleMemo& memo, Platform platform) {
  if (operand.opcode == Opcode::kConstant) return false;
  const ir::Shape& operand_shape = dataflow.SlotShape(operand_slot);
  const ir::Shape& user_shape = dataflow.SlotShape(user_slot);
  const bool shapes_equal = operand_shape == user_shape;
  const ShapeIndex user_index = dataflow.SlotIndex(user_slot);
  if (shapes_equal) {
    // In-place operations must share.
    const int32_t operand_value = dataflow.UniqueValueAt(operand_slot);
    const ShapeIndex operand_index = dataflow.SlotIndex(operand_slot);
    for (const InPlacePair& pair : InPlaceInputOutputPairs(user, memo)) {
      if (pair.output_index != user_index || operand_value < 0) continue;
      if (static_cast<size_t>(pair.operand_number) >= user.operands.size()) continue;
      const HloInstruction* paired = user.operands[static_cast<size_t>(pair.operand_number)];
      const int32_t paired_slot = dataflow.SlotAt(paired, pair.operand_index);
      for (const HloUse& use : dataflow.value(operand_value).uses) {
        if (use.user == &user && use.operand_number == pair.operand_number &&
            use.operand_slot == paired_slot) {
          return true;
        }
      }
    }
  }
  if (platform == Platform::kGpu) {
    if (const std::optional<bool> hint = GpuSharingHint(dataflow, operand, user, user_slot, memo)) {
      return *hint;
    }
  }
  if (platform == Platform::kTpu && user.opcode == Opcode::kAllReduce) {
    // XLA:TPU reduces in place too: its assignments put an all-reduce in its dying operand's
    // buffer (libtpu's hint is not public; this is what its buffer-assignment files show).
    return WritesOutputOverOperand(operand, user, user_index);
  }
  if (!shapes_equal) return false;
  const int64_t operand_number = memo.operand_numbers.First(user, &operand);
  if (user.opcode == Opcode::kFusion) {
    const std::string_view kind = FusionKind(user);
    const HloInstruction* param = FusedParameter(user, operand_number);
    if (kind == "kLoop" || kind == "kInput") {
      return param != nullptr && AreTransitiveUsesElementwiseOrTuple(param, memo);
    }
    if (kind == "kOutput") {
      const HloComputation* fused = user.Called("calls");
      const HloInstruction* root = fused != nullptr ? fused->root : nullptr;
      if (root == nullptr || root->opcode != Opcode::kAdd || param == nullptr) return false;
      int64_t matched = -1;
      for (size_t i = 0; i < root->operands.size(); ++i) {
        const Opcode op = root->operands[i]->opcode;
        if (op == Opcode::kConvolution || op == Opcode::kDot) {
          matched = static_cast<int64_t>(i);
          break;
        }
      }
      if (matched < 0) return false;
      const int64_t other = matched == 0 ? 1 : 0;
      // Exactly one use of the parameter: the root's other add operand.
      int64_t uses = 0;
      bool is_other = false;
      for (const HloInstruction* param_user : param->users) {
        for (size_t i = 0; i < param_user->operands.size(); ++i) {
          if (param_user->operands[i] != param) continue;
          ++uses;
          is_other = param_user == root && static_cast<int64_t>(i) == other;
        }
      }
      return uses == 1 && is_other;
    }
  }
  if (user.opcode == Opcode::kWhile || user.opcode == Opcode::kConditional) return true;
  if (user.opcode == Opcode::kDynamicUpdateSlice || user.opcode == Opcode::kScatter ||
      user.opcode == Opcode::kTriangularSolve || user.opcode == Opcode::kSetDimensionSize) {
    const int64_t wanted = user.opcode == Opcode::kTriangularSolve ? 1 : 0;
    int64_t count = 0;
    int64_t at = -1;
    for (size_t i = 0; i < user.operands.size(); ++i) {
      if (user.operands[i] == &operand) {
        ++count;
        at = static_cast<int64_t>(i);
      }
    }
    return count == 1 && at == wanted;
  }
  if (user.opcode == Opcode::kSort) {
    if (operand.users.size() != 1) return false;
    if (user.operands.size() == 1) return true;
    if (user_index.empty()) return false;
    int64_t count = 0;
    int64_t at = -1;
    for (size_t i = 0; i < user.operands.size(); ++i) {
      if (user.operands[i] == &operand) {
        ++count;
        at = static_cast<int64_t>(i);
      }
    }
    return count == 1 && user_index[0] == at;
  }
  if (user.opcode == Opcode::kCall) {
    const int32_t value_id = dataflow.UniqueValueAt(operand_slot);
    if (value_id < 0 || dataflow.value(value_id).instruction != &operand) return false;
    const auto& uses = dataflow.value(value_id).uses;
    const HloComputation* callee = user.Called("to_apply");
    const HloInstruction* callee_root = callee != nullptr ? callee->root : nullptr;
    bool caller_use = false;
    bool elementwise_callee_use = false;
    for (const HloUse& use : uses) {
      if (use.user == &user) caller_use = true;
      if (use.user == callee_root &&
          IsElementwiseOnOperand(*callee_root, use.operand_number, memo)) {
        elementwise_callee_use = true;
      }
    }
    return uses.size() == 2 && caller_use && elementwise_callee_use;
  }
  return operand_number >= 0 && IsElementwiseOnOperand(user, operand_number, memo);
}

std::optional<std::vector<const HloInstruction*>> OperandsThatMayShare(
    const DataflowAnalysis& dataflow, const HloInstruction& user, int32_t user_slot,
    SharingRuleMemo& memo, Platform platform) {
  // Each case follows a return of CanShareOperandBufferWithUser, in its order.
  const ShapeIndex user_index = dataflow.SlotIndex(user_slot);
  std::vector<const HloInstruction*> may;
  const auto name = [&](const HloInstruction* operand) {
    if (std::find(may.begin(), may.end(), operand) == may.end()) may.push_back(operand);
  };
  for (const InPlacePair& pair : InPlaceInputOutputPairs(user, memo)) {
    if (pair.output_index != user_index) continue;
    if (static_cast<size_t>(pair.operand_number) >= user.operands.size()) continue;
    const HloInstruction* paired = user.operands[static_cast<size_t>(pair.operand_number)];
    const int32_t paired_slot = dataflow.SlotAt(paired, pair.operand_index);
    if (paired_slot < 0) continue;
    // The values used there, offered at any operand holding them (the rule asks about the
    // value unique at the offered slot).
    for (int32_t id : dataflow.ValueSet(paired_slot)) {
      for (int32_t slot : dataflow.value(id).positions) {
        const HloInstruction* at = dataflow.SlotInstruction(slot);
        if (memo.operand_numbers.First(user, at) >= 0) name(at);
      }
    }
  }
  const auto operand_at = [&](int64_t number) {
    if (number >= 0 && static_cast<size_t>(number) < user.operands.size()) {
      name(user.operands[static_cast<size_t>(number)]);
    }
  };
  const auto written_over = [&] {  // WritesOutputOverOperand
    if (user.operands.size() == 1) {
      operand_at(0);
    } else if (user_index.size() == 1) {
      operand_at(user_index[0]);
    }
  };
  if (platform == Platform::kGpu) {
    switch (user.opcode) {
      case Opcode::kAllReduce:
      case Opcode::kCollectiveBroadcast:
        written_over();
        return may;
      case Opcode::kCustomCall: {
        const std::string_view target = user.custom_call_target();
        if (target == "__cublas$lt$matmul") operand_at(2);
        if (target == "__cusolver$cholesky" && user_index.size() == 1 && user_index[0] == 0) {
          return std::nullopt;
        }
        return may;
      }
      case Opcode::kFusion:
        return std::nullopt;
      default:
        break;
    }
  }
  if (platform == Platform::kTpu && user.opcode == Opcode::kAllReduce) {
    written_over();
    return may;
  }
  switch (user.opcode) {
    case Opcode::kFusion:
    case Opcode::kWhile:
    case Opcode::kConditional:
    case Opcode::kCall:
      return std::nullopt;
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kScatter:
    case Opcode::kSetDimensionSize:
      operand_at(0);
      return may;
    case Opcode::kTriangularSolve:
      operand_at(1);
      return may;
    case Opcode::kSort:
      if (user.operands.size() == 1) {
        operand_at(0);
      } else if (!user_index.empty()) {
        operand_at(user_index[0]);
      }
      return may;
    default:
      // IsElementwiseOnOperand: the same answer for every operand of an unfused instruction.
      if (IsElementwise(user, memo)) return std::nullopt;
      return may;
  }
}

}  // namespace spmdsim::passes
