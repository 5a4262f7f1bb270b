#include "passes/rng/random_provenance.h"

#include <algorithm>
#include <deque>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "passes/rng/random_provenance_internal.h"
#include "passes/rng/rng_site_finder.h"
#include "passes/rng/rng_value_flow.h"

namespace spmdsim::passes {
namespace {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;

// What one element of a value holds while the analysis runs: flags that join by union.
constexpr uint8_t kBitsFlag = 1;
constexpr uint8_t kDerivedFlag = 2;
constexpr uint8_t kDataFlag = 4;  // other data (activations, parameters larger than a key)

struct Prov {
  uint8_t flags = 0;  // 0: neutral (constants, iotas, keys, scalars)
  int32_t source = -1;
  bool operator==(const Prov&) const = default;
  bool Random() const { return (flags & (kBitsFlag | kDerivedFlag)) != 0; }
};

// Integer arithmetic that keeps random bits random: the rounds of a hash, the shifts and ors
// that make a uniform's mantissa, a sum where the other operands are zeros (XLA's all-reduce
// form of an all-gather).
bool MixesBits(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAdd:
    case Opcode::kSubtract:
    case Opcode::kXor:
    case Opcode::kOr:
    case Opcode::kAnd:
    case Opcode::kNot:
    case Opcode::kNegate:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightLogical:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kMultiply:
    case Opcode::kConvert:
    case Opcode::kBitcastConvert:
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart:
    case Opcode::kAllReduceDone:
    case Opcode::kReduceScatter:
    case Opcode::kReduce:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kClamp:
      return true;
    default:
      return false;
  }
}

// The operands whose elements the op's output holds (moving ops); empty for ops that compute.
// Index operands (dynamic-slice starts, gather indices, select's predicate) are read, not moved.
bool MovedOperands(const HloInstruction& instr, std::vector<size_t>& moved,
                   std::vector<size_t>& read) {
  const size_t n = instr.operands.size();
  const auto all = [&] {
    for (size_t k = 0; k < n; ++k) moved.push_back(k);
  };
  const auto first_then_read = [&](size_t count) {
    for (size_t k = 0; k < n; ++k) (k < count ? moved : read).push_back(k);
  };
  switch (instr.opcode) {
    case Opcode::kCopy:
    case Opcode::kCopyStart:
    case Opcode::kCopyDone:
    case Opcode::kBitcast:
    case Opcode::kReshape:
    case Opcode::kDynamicReshape:
    case Opcode::kTranspose:
    case Opcode::kBroadcast:
    case Opcode::kSlice:
    case Opcode::kReverse:
    case Opcode::kConcatenate:
    case Opcode::kPad:
    case Opcode::kAllGather:
    case Opcode::kAllGatherStart:
    case Opcode::kAllGatherDone:
    case Opcode::kAllToAll:
    case Opcode::kCollectivePermute:
    case Opcode::kCollectivePermuteStart:
    case Opcode::kCollectivePermuteDone:
    case Opcode::kCollectiveBroadcast:
    case Opcode::kAsyncStart:
    case Opcode::kAsyncUpdate:
    case Opcode::kAsyncDone:
    case Opcode::kOptimizationBarrier:
    case Opcode::kDomain:
      all();
      return true;
    case Opcode::kAddDependency:
    case Opcode::kDynamicSlice:
    case Opcode::kGather:
      first_then_read(1);
      return true;
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kRaggedAllToAll:  // (input, output buffer, offsets and sizes...)
      first_then_read(2);
      return true;
    case Opcode::kSelect:
      read.push_back(0);
      for (size_t k = 1; k < n; ++k) moved.push_back(k);
      return true;
    default:
      return false;
  }
}

// Custom calls that move their operands' bits without computing on them: host offloading,
// sharding annotations, XLA:TPU's asynchronous collectives and its 64-bit emulation (a u64
// made of two u32 words and split back).
bool MovesBits(const HloInstruction& instr) {
  const std::string_view target = instr.custom_call_target();
  for (const std::string_view moving :
       {"MoveToHost", "MoveToDevice", "annotate_device_placement", "Sharding",
        "SPMDFullToShardShape", "SPMDShardToFullShape", "AsyncCollectiveStart",
        "AsyncCollectiveDone", "X64Combine", "X64SplitLow", "X64SplitHigh"}) {
    if (target == moving) return true;
  }
  return false;
}

}  // namespace

class ProvenanceBuilder {
 public:
  explicit ProvenanceBuilder(const DataflowAnalysis& dataflow)
      : dataflow_(dataflow), module_(dataflow.module()) {}

  RandomProvenance Run() {
    RandomProvenance result;
    const size_t values = dataflow_.values().size();
    result.kind_.assign(values, RandomKind::kNone);
    result.source_.assign(values, -1);
    FindSources();
    if (sources_.empty()) return result;
    size_t slots = 0;
    for (const HloComputation* c : dataflow_.ControlFlowComputations()) {
      for (const HloInstruction* instr : c->instructions) {
        slots = std::max(
            slots, static_cast<size_t>(dataflow_.FirstSlot(instr) + dataflow_.SlotCount(instr)));
      }
    }
    slot_.assign(slots, Prov{});
    fused_.assign(module_.instruction_id_bound, Prov{});
    // Callers before callees, repeated until nothing changes (a loop's body reads what its own
    // root hands back).
    std::vector<const HloComputation*> order(dataflow_.ControlFlowComputations().rbegin(),
                                             dataflow_.ControlFlowComputations().rend());
    constexpr int kMaxPasses = 16;
    for (int pass = 0; pass < kMaxPasses; ++pass) {
      changed_ = false;
      for (const HloComputation* c : order) {
        for (const HloInstruction* instr : c->instructions) Evaluate(*instr);
      }
      if (!changed_) break;
    }
    // Bits leaving the step as more than a key are the program's random values.
    if (const HloComputation* entry = module_.entry; entry != nullptr && entry->root != nullptr) {
      const int32_t first = dataflow_.FirstSlot(entry->root);
      for (int32_t s = first; first >= 0 && s < first + dataflow_.SlotSpan(first); ++s) {
        const ir::Shape& shape = dataflow_.SlotShape(s);
        if (shape.IsArray() && shape.ElementCount() > kKeyElements) Escape(slot_[s]);
      }
    }
    for (const HloValue& value : dataflow_.values()) {
      const Prov& p = slot_[static_cast<size_t>(value.slot)];
      const auto id = static_cast<size_t>(value.id);
      if ((p.flags & kBitsFlag) != 0) {
        result.kind_[id] = RandomKind::kBits;
      } else if ((p.flags & kDerivedFlag) != 0) {
        result.kind_[id] = RandomKind::kDerived;
      }
      if (result.kind_[id] != RandomKind::kNone) result.source_[id] = Find(p.source);
    }
    FindCounters(result);
    // Each part of a hash answers for the whole draw.
    for (size_t i = 0; i < sources_.size(); ++i) {
      const int32_t draw = Find(static_cast<int32_t>(i));
      sources_[i].draw = draw;
      sources_[i].random = sources_[static_cast<size_t>(draw)].random;
    }
    for (const auto& [start, s] : starts_) result.starts_.emplace(start, Find(s));
    for (const auto& [holder, s] : hash_inputs_) {
      std::vector<int32_t>& draws = result.held_[holder];
      if (std::find(draws.begin(), draws.end(), Find(s)) == draws.end()) draws.push_back(Find(s));
    }
    result.sources_ = std::move(sources_);
    return result;
  }

 private:
  void FindSources() {
    FoundSources found = FindRandomSources(dataflow_);
    sources_ = std::move(found.sources);
    lanes_ = std::move(found.lanes);
    starts_ = std::move(found.starts);
    generators_ = std::move(found.generators);
    parent_.resize(sources_.size());
    for (size_t i = 0; i < parent_.size(); ++i) parent_[i] = static_cast<int32_t>(i);
    // Fusions that hold a source somewhere inside: the only ones whose bodies are walked
    // without random operands.
    for (const auto& [instr, s] : starts_) {
      for (const HloComputation* c = instr->parent; c != nullptr && c->IsFusionComputation();) {
        if (!holds_source_.insert(c).second) break;
        const HloComputation* up = nullptr;
        for (const HloInstruction* caller : c->callers) up = caller->parent;
        c = up;
      }
    }
  }

  // The values a draw's hash reads that are computed from neither data nor bits
  // (random_provenance_counters.cc).
  void FindCounters(RandomProvenance& result) {
    const auto walk = [&](int32_t slot, int32_t s) {
      // Counters are neither data nor bits; the walk goes on through the key the hash adds into
      // them (another draw's bits that are not random values).
      const Prov& p = slot_[static_cast<size_t>(slot)];
      if (p.flags == 0) return CounterWalk::kCounters;
      const int32_t t = Find(p.source);
      const bool key = p.flags == kBitsFlag && t != Find(s) && t >= 0 &&
                       !sources_[static_cast<size_t>(t)].random;
      return key ? CounterWalk::kThrough : CounterWalk::kStop;
    };
    std::unordered_set<const HloInstruction*> holders;
    for (const auto& [holder, s] : hash_inputs_) holders.insert(holder);
    const auto is_hash = [&](const HloInstruction* instr) { return holders.count(instr) != 0; };
    // The draws of random values first: a key derivation fused beside the draw it keys reads
    // the same counters' neighbours, and a value is the first walk's.
    for (const bool random : {true, false}) {
      for (const auto& [top, s] : hash_inputs_) {
        if (sources_[static_cast<size_t>(Find(s))].random != random) continue;
        FindDrawCounters(dataflow_, *top, Find(s), walk, is_hash, result.kind_, result.source_);
      }
    }
  }

  // Which of two bits sources a value mixing both belongs to: the draw that took the other's
  // bits as its key (a hash's rounds add the key schedule into the lanes), else the later one.
  int32_t Pick(int32_t a, int32_t b) const {
    const int32_t known = Hashing(a, b);
    return known != kUnrelated ? known : std::max(Find(a), Find(b));
  }

  // Integer arithmetic on the bits of two draws: a key mixed into the draw that hashes it, or
  // two parts of one hash (replicated mode's halves, added into one array), which are united.
  int32_t Mix(int32_t a, int32_t b) {
    const int32_t known = Hashing(a, b);
    if (known != kUnrelated) return known;
    Unite(a, b);
    return Find(a);
  }

  // The draw of two that the other's bits key (or the one there is); kUnrelated for two draws
  // neither of which keys the other.
  static constexpr int32_t kUnrelated = -2;
  int32_t Hashing(int32_t a, int32_t b) const {
    a = Find(a);
    b = Find(b);
    if (a < 0 || a == b) return b;
    if (b < 0) return a;
    if (absorbed_.count({a, b}) != 0) return b;
    if (absorbed_.count({b, a}) != 0) return a;
    return kUnrelated;
  }

  void Escape(const Prov& p) {
    if (current_ != nullptr && p.source >= 0) {
      // Inside a generator's expansion, what it computes from its state is its own work.
      const auto generator = generators_.find(current_->parent);
      if (generator != generators_.end() && Find(generator->second) != Find(p.source)) {
        absorbed_.insert({Find(p.source), Find(generator->second)});
        return;
      }
    }
    const int32_t source = Find(p.source);
    if (source >= 0 && p.Random() && !sources_[static_cast<size_t>(source)].random) {
      sources_[static_cast<size_t>(source)].random = true;
      changed_ = true;
    }
  }

  // A hash starting at `instr` (source `s`) reads `operands`: bits of other draws there are its
  // key.
  Prov Start(int32_t s, const std::vector<Prov>& operands) {
    s = Find(s);
    if (top_ != nullptr) AddHashInput(top_, s);
    for (const Prov& p : operands) {
      const int32_t t = Find(p.source);
      if (t < 0 || t == s) continue;
      if ((p.flags & kBitsFlag) == 0) {
        Escape(p);  // derived values hashed again
      } else if (lanes_[static_cast<size_t>(t)] > 0 &&
                 lanes_[static_cast<size_t>(t)] == lanes_[static_cast<size_t>(s)]) {
        // The rounds go on in the lanes of the same size: another part of the same hash.
        Unite(t, s);
        s = Find(s);
      } else {
        absorbed_.insert({t, s});  // a key
      }
    }
    return Prov{kBitsFlag, s};
  }

  int32_t Find(int32_t s) const {
    if (s < 0) return s;
    while (parent_[static_cast<size_t>(s)] != s) s = parent_[static_cast<size_t>(s)];
    return s;
  }
  void Unite(int32_t a, int32_t b) {
    a = Find(a);
    b = Find(b);
    if (a == b) return;
    const int32_t keep = std::min(a, b);
    const int32_t gone = std::max(a, b);
    parent_[static_cast<size_t>(gone)] = keep;
    sources_[static_cast<size_t>(keep)].random |= sources_[static_cast<size_t>(gone)].random;
    changed_ = true;
  }

  Prov Join(const Prov& a, const Prov& b) const {
    Prov out{static_cast<uint8_t>(a.flags | b.flags), -1};
    out.source = a.Random() && b.Random() ? Pick(a.source, b.source)
                 : a.Random()             ? a.source
                                          : b.source;
    if (!out.Random()) out.source = -1;
    return out;
  }

  // An op that computes its output from `operands`.
  Prov Compute(const HloInstruction& instr, const std::vector<Prov>& operands) {
    uint8_t any = 0;
    int32_t bits_source = -1;
    int32_t random_source = -1;
    for (const Prov& p : operands) {
      any |= p.flags;
      if ((p.flags & kBitsFlag) != 0) bits_source = Mix(bits_source, p.source);
      if (p.Random()) random_source = Pick(random_source, p.source);
    }
    const bool integer = instr.shape.IsArray() && ir::IsIntegralType(instr.shape.element_type());
    if ((any & kBitsFlag) != 0 && integer && MixesBits(instr.opcode)) {
      return Prov{kBitsFlag, bits_source};
    }
    if ((any & (kBitsFlag | kDerivedFlag)) == 0) {
      return Prov{static_cast<uint8_t>(any & kDataFlag), -1};
    }
    for (const Prov& p : operands) Escape(p);
    if ((any & kDataFlag) != 0) return Prov{kDataFlag, -1};
    return Prov{kDerivedFlag, random_source};
  }

  Prov Move(const std::vector<Prov>& moved, const std::vector<Prov>& read) {
    Prov out;
    for (const Prov& p : read) {
      if (p.Random()) Escape(p);  // random indices or predicates pick data
    }
    // Bits of two draws moved into one array (the two lanes of a hash concatenated, each
    // computed in a fusion of its own) are one draw's.
    int32_t bits = -1;
    for (const Prov& p : moved) {
      if ((p.flags & kBitsFlag) != 0) bits = Mix(bits, p.source);
    }
    for (const Prov& p : moved) out = Join(out, p);
    if (bits >= 0) out.source = Find(bits);
    for (const Prov& p : read) out.flags |= p.flags & kDataFlag;
    // Data moved beside bits (a concatenate of both): the buffer holds both; it is counted as
    // random only where no data is moved with the bits.
    if ((out.flags & kDataFlag) != 0 && out.Random()) {
      bool moved_data = false;
      for (const Prov& p : moved) moved_data |= (p.flags & kDataFlag) != 0;
      if (moved_data) {
        out.flags = kDataFlag;
        out.source = -1;
      } else {
        out.flags &= static_cast<uint8_t>(~kDataFlag);
      }
    }
    return out;
  }

  // ---- Slots of control-flow computations -------------------------------------------------

  Prov Whole(const HloInstruction* instr) const {
    const int32_t first = dataflow_.FirstSlot(instr);
    if (first < 0) return Prov{};
    Prov out;
    for (int32_t s = first; s < first + dataflow_.SlotSpan(first); ++s) {
      out = Join(out, slot_[static_cast<size_t>(s)]);
    }
    return out;
  }

  void Set(int32_t slot, const Prov& p) {
    Prov& at = slot_[static_cast<size_t>(slot)];
    const Prov joined = Join(at, p);
    if (!(joined == at)) {
      at = joined;
      changed_ = true;
    }
  }

  // Joins the subtree at `from` into the subtree at `to` (same shapes, slot for slot).
  void CopyTree(int32_t from, int32_t to) {
    if (from < 0 || to < 0) return;
    const int32_t n = std::min(dataflow_.SlotSpan(from), dataflow_.SlotSpan(to));
    for (int32_t k = 0; k < n; ++k) Set(to + k, slot_[static_cast<size_t>(from + k)]);
  }

  void SetAll(const HloInstruction& instr, const Prov& p) {
    const int32_t first = dataflow_.FirstSlot(&instr);
    for (int32_t s = first; first >= 0 && s < first + dataflow_.SlotSpan(first); ++s) {
      if (dataflow_.SlotShape(s).IsArray()) Set(s, p);
    }
  }

  void Evaluate(const HloInstruction& instr) {
    const int32_t out = dataflow_.FirstSlot(&instr);
    if (out < 0) return;
    current_ = &instr;
    if (starts_.count(&instr) != 0) AddHashInput(&instr, starts_.at(&instr));
    const auto operand_slot = [&](size_t k) { return dataflow_.FirstSlot(instr.operands[k]); };
    switch (instr.opcode) {
      case Opcode::kParameter:
        if (instr.parent == module_.entry) {
          for (int32_t s = out; s < out + dataflow_.SlotSpan(out); ++s) {
            const ir::Shape& shape = dataflow_.SlotShape(s);
            if (shape.IsArray() && shape.ElementCount() > kKeyElements) Set(s, Prov{kDataFlag});
          }
        }
        return;  // others: set by their callers
      case Opcode::kGetTupleElement:
        if (!instr.operands.empty() && instr.tuple_index >= 0) {
          CopyTree(dataflow_.ChildSlot(operand_slot(0), instr.tuple_index), out);
        }
        return;
      case Opcode::kTuple:
        for (size_t k = 0; k < instr.operands.size(); ++k) {
          CopyTree(operand_slot(k), dataflow_.ChildSlot(out, static_cast<int64_t>(k)));
        }
        return;
      case Opcode::kWhile: {
        const HloComputation* body = instr.Called("body");
        const HloComputation* condition = instr.Called("condition");
        if (instr.operands.empty()) return;
        const int32_t init = operand_slot(0);
        if (const auto start = starts_.find(&instr); start != starts_.end()) {
          // A rolled threefry: its lanes are the bits; the rest of its state is the key's.
          const int lanes = rng_internal::ThreefryLoopCounters(instr.shape);
          const Prov bits = Start(start->second, {Whole(instr.operands[0])});
          for (int k = 0; k < 2; ++k) Set(dataflow_.ChildSlot(out, lanes + k), bits);
          // Its body computes the rounds on the same state buffers.
          for (const HloComputation* c : {body, condition}) {
            if (c == nullptr || c->parameters.empty() || c->parameters[0] == nullptr) continue;
            CopyTree(out, dataflow_.FirstSlot(c->parameters[0]));
          }
          return;
        }
        CopyTree(init, out);
        if (body != nullptr && body->root != nullptr) {
          CopyTree(dataflow_.FirstSlot(body->root), out);
        }
        for (const HloComputation* c : {body, condition}) {
          if (c == nullptr || c->parameters.empty() || c->parameters[0] == nullptr) continue;
          CopyTree(out, dataflow_.FirstSlot(c->parameters[0]));
        }
        return;
      }
      case Opcode::kCall: {
        const HloComputation* c = instr.Called("to_apply");
        if (c == nullptr) return;
        for (size_t p = 0; p < c->parameters.size() && p < instr.operands.size(); ++p) {
          if (c->parameters[p] != nullptr) {
            CopyTree(operand_slot(p), dataflow_.FirstSlot(c->parameters[p]));
          }
        }
        if (c->root != nullptr) CopyTree(dataflow_.FirstSlot(c->root), out);
        return;
      }
      case Opcode::kConditional: {
        const auto& called = instr.called_computations();
        for (size_t b = 0; b < called.size(); ++b) {
          const HloComputation* c = called[b].computation;
          if (c == nullptr) continue;
          if (!c->parameters.empty() && c->parameters[0] != nullptr &&
              b + 1 < instr.operands.size()) {
            CopyTree(operand_slot(b + 1), dataflow_.FirstSlot(c->parameters[0]));
          }
          if (c->root != nullptr) CopyTree(dataflow_.FirstSlot(c->root), out);
        }
        return;
      }
      case Opcode::kAsyncStart:
        if (const HloComputation* wrapped = instr.Called("calls"); wrapped != nullptr) {
          // ((operands...), outputs, context): the wrapped computation reads the operands as
          // its parameters and hands back its root.
          for (size_t k = 0; k < instr.operands.size(); ++k) {
            CopyTree(operand_slot(k), dataflow_.SlotAt(&instr, {0, static_cast<int64_t>(k)}));
            if (k < wrapped->parameters.size() && wrapped->parameters[k] != nullptr) {
              CopyTree(operand_slot(k), dataflow_.FirstSlot(wrapped->parameters[k]));
            }
          }
          if (wrapped->root != nullptr) {
            CopyTree(dataflow_.FirstSlot(wrapped->root), dataflow_.SlotAt(&instr, {1}));
          }
          return;
        }
        break;
      case Opcode::kAsyncUpdate:
        if (!instr.operands.empty()) CopyTree(operand_slot(0), out);
        return;
      case Opcode::kAsyncDone:
        if (!instr.operands.empty() && instr.operands[0]->opcode == Opcode::kAsyncStart) {
          CopyTree(dataflow_.SlotAt(instr.operands[0], {1}), out);
          return;
        }
        break;
      case Opcode::kRngBitGenerator: {
        // (new state, bits): the state is the next key.
        std::vector<Prov> operands;
        for (const HloInstruction* operand : instr.operands) operands.push_back(Whole(operand));
        const Prov bits = Result(instr, operands);
        // XLA:TPU's form whose state output is gone returns the bits alone.
        const int32_t child = instr.shape.IsTuple() ? dataflow_.ChildSlot(out, 1) : out;
        if (child >= 0) Set(child, bits);
        return;
      }
      default:
        break;
    }
    // A collective moving several arrays (XLA's combiners make them), or its start and done:
    // each output element holds the operand it moves.
    if (instr.shape.IsTuple() &&
        (rng_internal::IsMovingCollective(instr.opcode) || rng_internal::IsCollectiveStart(instr) ||
         instr.opcode == Opcode::kAllGatherDone ||
         instr.opcode == Opcode::kCollectivePermuteDone)) {
      bool all = true;
      for (int32_t s = out; s < out + dataflow_.SlotSpan(out); ++s) {
        if (!dataflow_.SlotShape(s).IsArray()) continue;
        ShapeIndex index = dataflow_.SlotIndex(s);
        const HloInstruction* moved = nullptr;
        if (rng_internal::IsCollectiveStart(instr) && index.size() == 2 && index[0] == 0) {
          moved = index[1] < static_cast<int64_t>(instr.operands.size())
                      ? instr.operands[static_cast<size_t>(index[1])]
                      : nullptr;
        } else {
          moved = rng_internal::MovedOperand(instr, index);
        }
        if (moved == nullptr) {
          all = false;
          continue;
        }
        Set(s, Whole(moved));
      }
      if (all) return;
    }
    // Scratch kept across instructions (a million of them: no allocation each).
    std::vector<Prov>& operands = evaluate_operands_;
    operands.clear();
    for (const HloInstruction* operand : instr.operands) operands.push_back(Whole(operand));
    if (instr.opcode == Opcode::kFusion) {
      top_ = &instr;
      const std::vector<Prov> outputs = Fused(instr, operands);
      top_ = nullptr;
      if (!instr.shape.IsTuple()) {
        if (!outputs.empty()) Set(out, outputs[0]);
        return;
      }
      for (size_t k = 0; k < outputs.size(); ++k) {
        const int32_t child = dataflow_.ChildSlot(out, static_cast<int64_t>(k));
        if (child >= 0) Set(child, outputs[k]);
      }
      return;
    }
    SetAll(instr, Result(instr, operands));
  }

  // The output of an array-producing instruction (or every leaf of a tuple one) from its
  // operands, in a control-flow or a fused computation.
  Prov Result(const HloInstruction& instr, const std::vector<Prov>& operands) {
    if (const auto start = starts_.find(&instr); start != starts_.end()) {
      if (instr.opcode == Opcode::kRngBitGenerator) {
        Start(start->second, operands);
        return Prov{kBitsFlag, start->second};  // the new state is small: a key-sized output
      }
      return Start(start->second, operands);
    }
    switch (instr.opcode) {
      case Opcode::kConstant:
      case Opcode::kIota:
      case Opcode::kPartitionId:
      case Opcode::kReplicaId:
      case Opcode::kRngGetAndUpdateState:
      case Opcode::kAfterAll:
      case Opcode::kGetDimensionSize:
        return Prov{};
      case Opcode::kInfeed:
      case Opcode::kRecv:
      case Opcode::kRecvDone:
      case Opcode::kParameter:
        return Prov{kDataFlag};
      case Opcode::kCustomCall:
        if (MovesBits(instr)) return Move(operands, {});
        if (instr.custom_call_target() == "AllocateBuffer") return Prov{};
        for (const Prov& p : operands) Escape(p);
        return Prov{kDataFlag};
      default:
        break;
    }
    moved_k_.clear();
    read_k_.clear();
    if (MovedOperands(instr, moved_k_, read_k_)) {
      moved_.clear();
      read_.clear();
      for (const size_t k : moved_k_) moved_.push_back(operands[k]);
      for (const size_t k : read_k_) read_.push_back(operands[k]);
      return Move(moved_, read_);
    }
    return Compute(instr, operands);
  }

  // ---- Fused computations ---------------------------------------------------------------

  std::vector<Prov> Fused(const HloInstruction& fusion, const std::vector<Prov>& operands) {
    const HloComputation* body = fusion.Called("calls");
    bool random = false;
    uint8_t any = 0;
    for (const Prov& p : operands) {
      random |= p.Random();
      any |= p.flags;
    }
    const size_t outputs = fusion.shape.IsTuple() ? fusion.shape.tuple_shapes().size() : 1;
    if (body == nullptr || (!random && holds_source_.count(body) == 0)) {
      return std::vector<Prov>(outputs, Prov{static_cast<uint8_t>(any & kDataFlag), -1});
    }
    return Body(body, operands, 0);
  }

  std::vector<Prov> Body(const HloComputation* body, const std::vector<Prov>& parameters,
                         int depth) {
    constexpr int kMaxFusionNesting = 64;
    const size_t outputs = body->root != nullptr && body->root->shape.IsTuple()
                               ? body->root->shape.tuple_shapes().size()
                               : 1;
    if (depth > kMaxFusionNesting) return std::vector<Prov>(outputs, Prov{kDataFlag, -1});
    std::unordered_map<const HloInstruction*, std::vector<Prov>> tuples;
    const auto of = [&](const HloInstruction* operand) -> Prov {
      if (operand->shape.IsTuple()) {
        Prov out;
        const auto found = tuples.find(operand);
        if (found != tuples.end()) {
          for (const Prov& p : found->second) out = Join(out, p);
        }
        return out;
      }
      return fused_[static_cast<size_t>(operand->id)];
    };
    for (const HloInstruction* instr : body->instructions) {
      current_ = instr;
      // One scratch vector per depth, made before any is referenced (a deque keeps the
      // outer levels' references valid while a nested body adds its level).
      while (body_operands_.size() <= static_cast<size_t>(depth)) body_operands_.emplace_back();
      std::vector<Prov>& operands = body_operands_[static_cast<size_t>(depth)];
      operands.clear();
      for (const HloInstruction* operand : instr->operands) operands.push_back(of(operand));
      Prov result;
      if (instr->opcode == Opcode::kParameter) {
        const auto p = static_cast<size_t>(instr->parameter_number);
        result = p < parameters.size() ? parameters[p] : Prov{kDataFlag};
        if (instr->shape.IsTuple()) {
          tuples[instr] = std::vector<Prov>(instr->shape.tuple_shapes().size(), result);
          continue;
        }
      } else if (instr->opcode == Opcode::kTuple) {
        std::vector<Prov>& parts = tuples[instr];
        parts = operands;
        continue;
      } else if (instr->opcode == Opcode::kGetTupleElement && !instr->operands.empty()) {
        const auto found = tuples.find(instr->operands[0]);
        result = found != tuples.end() && instr->tuple_index >= 0 &&
                         static_cast<size_t>(instr->tuple_index) < found->second.size()
                     ? found->second[static_cast<size_t>(instr->tuple_index)]
                     : of(instr->operands[0]);
      } else if (instr->opcode == Opcode::kFusion && instr->Called("calls") != nullptr) {
        std::vector<Prov> parts = Body(instr->Called("calls"), operands, depth + 1);
        if (instr->shape.IsTuple()) {
          tuples[instr] = std::move(parts);
          continue;
        }
        result = parts.empty() ? Prov{} : parts[0];
      } else {
        result = Result(*instr, operands);
        if (instr->shape.IsTuple()) {
          tuples[instr] = std::vector<Prov>(instr->shape.tuple_shapes().size(), result);
          continue;
        }
      }
      fused_[static_cast<size_t>(instr->id)] = result;
    }
    std::vector<Prov> roots;
    const HloInstruction* root = body->root;
    if (root == nullptr) return roots;
    if (root->shape.IsTuple()) {
      const auto found = tuples.find(root);
      if (found != tuples.end()) roots = found->second;
      roots.resize(outputs);
    } else {
      roots.push_back(of(root));
    }
    return roots;
  }

  const DataflowAnalysis& dataflow_;
  const ir::HloModule& module_;
  std::vector<RandomSource> sources_;
  // Instructions where a draw's bits start (its rotations, the custom call, ...) -> source.
  std::unordered_map<const HloInstruction*, int32_t> starts_;
  std::set<const HloComputation*> holds_source_;
  std::set<std::pair<int32_t, int32_t>> absorbed_;  // (key's draw, the draw hashing it)
  std::vector<int32_t> parent_;  // union-find over the sources: the parts of one hash
  std::vector<int64_t> lanes_;   // per source: its unrolled hash's lane elements, else -1
  // Control-flow instructions where a draw's hash starts (the fusion holding its rotations, the
  // rolled loop, the custom call), with the draw.
  // In the order first met (deterministic, unlike pointers).
  std::vector<std::pair<const HloInstruction*, int32_t>> hash_inputs_;
  std::set<std::pair<const HloInstruction*, int32_t>> hash_input_set_;
  void AddHashInput(const HloInstruction* top, int32_t s) {
    if (hash_input_set_.insert({top, s}).second) hash_inputs_.emplace_back(top, s);
  }
  const HloInstruction* top_ = nullptr;      // the control-flow fusion whose body is evaluated
  const HloInstruction* current_ = nullptr;  // the instruction being evaluated
  // Scratch reused across instructions: Evaluate's operands, Result's moved and read operands,
  // and the fused bodies' operands by nesting depth.
  std::vector<Prov> evaluate_operands_;
  std::vector<size_t> moved_k_;
  std::vector<size_t> read_k_;
  std::vector<Prov> moved_;
  std::vector<Prov> read_;
  std::deque<std::vector<Prov>> body_operands_;
  // Computations of a Philox expansion (rng-bit-generator's rounds) -> its source.
  std::unordered_map<const HloComputation*, int32_t> generators_;
  std::vector<Prov> slot_;   // by slot
  std::vector<Prov> fused_;  // by instruction id, for fused bodies
  bool changed_ = false;
};

RandomProvenance RandomProvenance::Run(const DataflowAnalysis& dataflow) {
  return ProvenanceBuilder(dataflow).Run();
}

int32_t RandomProvenance::DrawStartingAt(const ir::HloInstruction* start) const {
  const auto found = starts_.find(start);
  return found == starts_.end() ? -1 : found->second;
}

std::vector<int32_t> RandomProvenance::DrawsHeldBy(const ir::HloInstruction* holder) const {
  const auto found = held_.find(holder);
  return found == held_.end() ? std::vector<int32_t>{} : found->second;
}

std::string_view RandomKindName(RandomKind kind) {
  switch (kind) {
    case RandomKind::kNone:
      return "none";
    case RandomKind::kBits:
      return "bits";
    case RandomKind::kDerived:
      return "derived";
    case RandomKind::kCounters:
      return "counters";
  }
  return "none";
}

}  // namespace spmdsim::passes
