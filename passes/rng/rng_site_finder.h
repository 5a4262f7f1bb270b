// Internal to passes/rng/: the state and steps of the RNG site finder, shared by the files that
// implement it (recognising sites, their members and mode, their buffers and consumers, the
// findings), and by the random provenance (random_provenance*.cc) for the loop-state and
// collective helpers. Nothing else includes this; the API is rng_site_analysis.h.
#pragma once

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/checked_math.h"
#include "passes/memory/buffer_dataflow_analysis.h"
#include "passes/module_analyses.h"
#include "passes/rng/philox_expansion.h"
#include "passes/rng/rng_site_analysis.h"
#include "passes/rng/threefry_hashes.h"

namespace spmdsim::passes::rng_internal {

using ir::HloComputation;
using ir::HloInstruction;
using ir::Opcode;
using ir::PrimitiveType;
using ir::SaturatingAdd;

// Depth limit for the backward walks over operands (hostile input must not overflow the stack).
constexpr int kMaxWalkDepth = 256;
// Instructions one site's walk for hoisted members visits at most.
constexpr size_t kMaxHoistedWalk = 4096;
// Instructions one site's walk down from its hash (what it computes from the bits) visits at
// most. A member past it counts as computed before the hash, which drops it only when its
// op_name also lies in JAX's key derivation (IsKeyDerivationOpName).
constexpr size_t kMaxDownstreamWalk = 4096;
// Values this small are keys, key schedules and rotation vectors, not random tensors.
constexpr int64_t kKeySizedElements = 16;
// Rotations an unrolled hash performs (20 rounds).
constexpr int kUnrolledShifts = kThreefryRounds;

// ---- Helpers of the recognisers (rng_site_recognition.cc) ----------------------------------

bool StartsWith(std::string_view s, std::string_view prefix);

bool IsU32Array(const ir::Shape& shape);

// (s32[], X0, X1, ks0, ks1, ks2, u32[4], u32[4]): the state of XLA:CPU's rolled threefry loop;
// JAX 0.4 lowers threefry itself to such a loop with two s32[] counters. Returns how many s32[]
// counters lead the state (1 or 2), 0 when the shape is not such a state.
int ThreefryLoopCounters(const ir::Shape& shape);
bool IsThreefryLoopState(const ir::Shape& shape);

// The integers of a constant array payload "{0, 0, 1, 1}".
std::vector<int64_t> ArrayConstant(const HloInstruction* instr);

// Number of shift-lefts by a threefry rotation constant inside a computation and its callees,
// and how many distinct rotation amounts they use.
std::pair<int, int> RotationShifts(const HloComputation* computation);

// The shape of the hash lanes inside a fused threefry: the widest shift-left by a rotation
// constant; nullptr when there is none.
const ir::Shape* HashLaneShape(const HloComputation* computation);

bool ContainsOpcode(const HloComputation* computation, Opcode opcode);

// The operands of `fusion` whose fused parameters the hash ending at `rotation` reads, directly
// or not, through fusions nested in its body (XLA:TPU nests the hash's loop fusion in an output
// fusion); empty when the rotation is not inside `fusion`.
std::vector<const HloInstruction*> FusedHashInputs(const HloInstruction& fusion,
                                                   const HloInstruction* rotation);

std::string ShapeText(const ir::Shape& shape);

// JAX's threefry2x32 as its own computation, the form modules take before XLA inlines calls:
// (u32[] key0, u32[] key1, u32[...] x0, u32[...] x1) -> (u32[...], u32[...]). Returns the site
// kind its body implies (a cu_/hip_threefry2x32 custom call, XLA:CPU's rolled loop, or the 20
// rounds unrolled), or "" for any other computation.
std::optional<SiteKind> ThreefryFunctionKind(const HloComputation* computation);

// What an instruction's value comes from: its operands, or for an element of a control-flow
// computation's parameter, that element of each caller's operand (loop-invariant values hoisted
// out of a loop are found this way).
std::vector<const HloInstruction*> Producers(const HloInstruction* instr);

// The computation a site's results are used in: the anchor's, or, when the anchor is the root of
// a wrapper call (XLA:CPU's xla_cpu_small_call, one caller), the computation of that call.
const HloComputation* HomeComputation(const HloInstruction* anchor);

// The tuple a loop starts from. XLA:CPU wraps a small loop in a call (xla_cpu_small_call) whose
// one parameter is the loop's initial tuple: that is then the call's operand.
const HloInstruction* LoopInitTuple(const HloInstruction* operand);

// The role of a site's buffer whose first value `instr` defines, in XLA Label's words
// (rng_buffer_sources.cc).
SiteBufferRole BufferRole(const HloInstruction* instr, const HloInstruction* anchor,
                          const HloComputation* home);

// The operand whose values a collective's output at `index` holds; null for anything else.
const HloInstruction* MovedOperand(const HloInstruction& instr, const ShapeIndex& index);

// Computed from constants alone: every input, followed back through broadcasts, copies,
// bitcasts, reshapes, converts and fusions (a fusion's output depends only on its operands), is
// a constant, within kMaxConstantWalk instructions. Such a value holds no other computation's
// data.
constexpr size_t kMaxConstantWalk = 64;
bool FromConstantsOnly(const HloInstruction* instr);

std::string_view LastComponent(std::string_view op_name);

// "jit(_uniform)" -> "uniform"; empty when the component is not a jit(_name).
// "bernoulli" for "jit(_bernoulli)", also under JAX's transformation wrappers
// ("jvp(jit(_bernoulli))", "transpose(jvp(jit(_bernoulli)))") as call sites are named before
// optimizations.
std::string_view JaxRandomFunction(std::string_view component);

// What one random site is made of while it is being analysed.
struct SiteWork {
  RngSite site;
  // site.mode was set by the recognizer (rbg, rng); else the counters decide it.
  bool mode_decided = false;
  const HloInstruction* anchor = nullptr;
  // Where the site's bits are handed over: the anchor's computation, or the one that calls the
  // wrapper XLA:CPU put the anchor in (HomeComputation).
  const HloComputation* home = nullptr;
  std::vector<const HloInstruction*> counters;  // counter inputs of the hash
  std::vector<const HloInstruction*> keys;      // key inputs
  std::unordered_set<const HloInstruction*> members;
  // Reached through calls from the entry (a module before optimizations): the callee's buffers
  // are shared by every call, so its bytes come from the what-if of its mode instead.
  bool via_calls = false;
  // Members computed before the backward pass starts and read after (key residuals).
  std::set<const HloInstruction*> crossing;
  // A fusion hashing several draws (passes/rng/threefry_hashes.h) is the anchor of a site per hash;
  // each site owns the fusion's outputs computed from its hash.
  bool shares_anchor = false;
  const ir::Shape* lanes = nullptr;  // the hash's lanes, when known
  // The counters' device offsets read a constant table XLA printed as "{...}": the shard count
  // is not derived from the dump.
  bool offsets_elided = false;
  // The site runs in a loop whose loop-invariant counters XLA hoists out of it
  // (HoistsLoopInvariantCollectives): they cross into the loop as its state.
  bool counters_hoisted = false;
  // XLA:TPU would fuse the hash in partitionable mode, keeping its counter pieces once per
  // computation and local shape (TpuPartitionableCounterBytes).
  bool tpu_fused_counters = false;
  // Partitionable: the devices replicated mode's flat hash of the same draw would be split over
  // (HashShards); 0 where the counters do not tell.
  int64_t hash_shards = 0;
  // A hash fused into the anchor: its last rotation (ThreefryDraw::last_rotation).
  const HloInstruction* rotation = nullptr;
  std::vector<int64_t> outputs;  // shares_anchor: the fusion outputs it owns
  // shares_anchor: per owned output, the fusion parameters it reads.
  std::vector<std::vector<int64_t>> output_parameters;
  // Other fusions holding rounds of the hash (its first rounds; copies of its last rounds).
  std::vector<const HloInstruction*> holders;
  // rng-bit-generator expanded by XLA into Philox arithmetic inside the anchor fusion.
  std::optional<PhiloxExpansion> philox;
  // Consumers outside the site completing a dropout with its bits (DescribeConsumers).
  std::vector<const HloInstruction*> dropout_readers;
};

class RngSiteFinder {
 public:
  RngSiteFinder(ModuleAnalyses& analyses, const RngSiteOptions& options)
      : module_(analyses.module()), analyses_(analyses), options_(options) {}

  RngSiteResult Run();

 private:
  void FindAnchors();
  // `own_op_name`: the hash's op_name when it differs from the anchor's (a fused hash).
  void AddSite(const HloInstruction* anchor, SiteKind kind, const std::string& context = "",
               const HloInstruction* context_call = nullptr, std::string_view own_op_name = {});
  // A site per draw hashed in a fusion (one draw: the fusion's site, named after its hash).
  void AddDrawSites(const std::vector<const ThreefryDraw*>& draws);
  // Whether `user` reads what the site hands over from `member` (a site sharing its anchor reads
  // only its own outputs of it).
  bool ReadsSiteValue(const SiteWork& work, const HloInstruction* member,
                      const HloInstruction* user) const;
  void KeepConnectedMembers();
  void FindHoistedProducers();
  void AssignByDataflow(const std::vector<int>& sites,
                        const std::vector<const HloInstruction*>& candidates);
  std::vector<std::vector<const HloInstruction*>> CallChains(const HloComputation* computation);
  bool RandomOnly(const HloInstruction* instr, int depth = 0);
  bool RandomOnlyElement(const HloInstruction* tuple, int64_t index, int depth);
  SiteMode CounterMode(const SiteWork& work);
  int64_t PartitionShards(SiteWork& work);
  // Sets work.offsets_elided when the offsets read a table the dump does not print.
  int64_t EvaluatedShards(SiteWork& work);
  int64_t TableShards(const SiteWork& work);
  // How many ways XLA's partitioner splits replicated mode's flat hash of a partitionable site's
  // draw: the tiles of the tensor's major dimensions the reshape to the flat counters keeps
  // (rng_hash_shards.cc); 0 where its counters' strides are not read.
  int64_t HashShards(const SiteWork& work) const;
  // Replicated mode's global counter count: the partitioned iota(n) its counters come from; 0
  // (and work.offsets_elided set) when that iota's offsets read a table the dump left out.
  int64_t ReplicatedCounterElements(SiteWork& work);
  // The partition-id or replica-id the values of `key` are computed from, if any: by dataflow,
  // element by element through tuples, calls and loops (a loop carrying the key beside
  // per-device state does not make the key per-device).
  // `derived_keys_only` (rng-bit-generator): XLA's partitioner gives each shard of a sharded
  // generator its own stream by adding the shard's offset (a table read by partition-id) into
  // the state; that is the generator's partitioning, not the user's key. The walk then follows
  // the key's own bits back, and a value computed from the device's position counts only where a
  // key derivation (split, fold_in: a hash) takes it in.
  const HloInstruction* PartitionDependency(const DataflowAnalysis& dataflow,
                                            const HloInstruction* key,
                                            bool derived_keys_only = false);
  void CollectMembers();
  void DescribeShapes(SiteWork& work);
  // A site whose offsets cannot be read: its global size from the unpartitioned program's draw.
  void SizeFromUnpartitionedDraw(RngSite& site);
  void DescribeConsumers(SiteWork& work);
  // Replicated mode and unpartitioned hash calls: the device's tensor is the shape its dropouts
  // select in.
  void DescribeDropoutTensor(SiteWork& work);
  // `live_ranges` is null for a module without a schedule.
  void MeasureBuffers(const DataflowAnalysis& dataflow, const AliasAnalysis& alias,
                      const LiveRangeAnalysis* live_ranges);
  // The site whose members (or what XLA hoisted out of its loop, or a collective moving them)
  // define `value`; -1 for none. For modules whose draws the provenance does not see.
  int MemberSite(const DataflowAnalysis& dataflow, const HloValue& value);
  // A collective among a site's instructions is the site's; one elsewhere (XLA combines the
  // collectives of several sites into one variadic op) is shared among the sites whose values its
  // operands hold, in proportion to those operands' bytes.
  void AttachCollectives(const DataflowAnalysis& dataflow);
  // `owner` and the other sites of its multi-draw fusion whose hash reads `instr`'s values.
  std::vector<int> SitesReading(int owner, const HloInstruction* instr);
  void Findings(RngSiteResult& result);
  // The site's geometry for the what-if (passes/rng/rng_whatif.h), on the platform and with the
  // concatenation lowering the options name.
  RngGeometry GeometryOf(const SiteWork& work) const;
  // False for a fused hash whose fusion also holds the consumer (its output is not random).
  bool BitsLeave(const SiteWork& work) {
    if (work.anchor->opcode != Opcode::kFusion) return true;
    if (!work.shares_anchor) return RandomOnly(work.anchor);
    for (const int64_t output : work.outputs) {
      if (OutputIsRandom(work, output)) return true;
    }
    return false;
  }
  // A site sharing its anchor: whether the fusion output it owns is computed from random-only
  // operands.
  bool OutputIsRandom(const SiteWork& work, int64_t output) {
    for (size_t i = 0; i < work.outputs.size() && i < work.output_parameters.size(); ++i) {
      if (work.outputs[i] != output) continue;
      for (const int64_t p : work.output_parameters[i]) {
        if (p >= 0 && p < static_cast<int64_t>(work.anchor->operands.size()) &&
            !RandomOnly(work.anchor->operands[p])) {
          return false;
        }
      }
      return true;
    }
    return false;
  }
  // Whether the site's values reach nothing but other sites (as their keys) and the module's
  // outputs (the next step's key): a hash that derives keys, whatever its op_name says (JAX's
  // rbg splits its keys with threefry under a bare vmap()).
  bool FeedsOnlyKeys(const SiteWork& work, int self);
  void FindBackwardStarts();
  bool CrossesIntoBackward(const HloInstruction* member, const HloInstruction* user) const;

  const ir::HloModule& module_;
  ModuleAnalyses& analyses_;  // the dataflow and buffers, shared with the other analyses
  const RngSiteOptions& options_;
  std::vector<SiteWork> sites_;
  std::unordered_map<const HloInstruction*, bool> random_only_;
  std::unordered_map<const HloInstruction*, int> site_of_;  // member -> site index
  // What XLA hoisted out of a site's loop and passes in (FindHoistedProducers) -> site index.
  std::unordered_map<const HloInstruction*, int> hoisted_of_;
  // The wrapper calls XLA:CPU put sites in (xla_cpu_small_call), to the site each wraps.
  std::unordered_map<const HloInstruction*, int> wrapper_of_;
  std::unordered_map<const HloComputation*, std::vector<const HloInstruction*>> callers_;
  // Fusions that anchor several sites: per output, the owning site (-1: none).
  std::unordered_map<const HloInstruction*, std::vector<int>> shared_anchors_;
  // Scheduled modules: the position (in its computation) of each instruction, and per
  // computation the instruction where its backward pass starts.
  std::unordered_map<const HloInstruction*, int64_t> position_;
  std::unordered_map<const HloComputation*, const HloInstruction*> backward_start_;
  // Dataflow values a site computes (its members' outputs), by value id.
  std::unordered_map<int32_t, int> value_site_;
  // PartitionDependency's marks by value id: a value is seen in the current walk when its mark
  // is the walk's number (one array for every walk, not a set each).
  std::vector<uint32_t> dependency_seen_;
  // What earlier walks learnt of a (value, state), by 2 x value id + state: unknown, clean (no
  // partition dependency behind it), or a hit (dependency_hit_ says which instruction).
  static constexpr uint8_t kDependencyUnknown = 0;
  static constexpr uint8_t kDependencyClean = 1;
  static constexpr uint8_t kDependencyHit = 2;
  std::vector<uint8_t> dependency_known_;
  std::vector<const HloInstruction*> dependency_hit_;
  bool partitioned_ = true;  // the module is past SPMD partitioning (RngSiteResult::partitioned)
  uint32_t dependency_walk_ = 0;
};

}  // namespace spmdsim::passes::rng_internal
