// Every random-number site of a module: where the bits are made, in which counter mode, what they
// cost each device (buffers, collectives), what they would cost under another mode, and findings.
//
// A site is anchored on the instruction that hashes or generates:
//   threefry-rolled       a `while` with trip count 5 whose state is (s32[], X0, X1, ks..., u32[4]
//                         rotations, u32[4] rotations): one group of 4 rounds per iteration
//                         (XLA:CPU; testdata/README.md "Format notes")
//   threefry-expanded     the 20 rounds unrolled: a chain of 20 rotations by the constants
//                         13,15,26,6,17,29,16,24, followed through fusions by dataflow
//                         (passes/rng/threefry_hashes.h): one site per draw, anchored on the fusion
//                         holding its last rounds ("fusion:hashN" when one fusion hashes several
//                         draws; copies of a hash in several consumer fusions are one site), or
//                         unfused elementwise ops whose op_name contains "threefry2x32". A fusion
//                         whose output is not random (the consumer fused in) materializes no
//                         bits; its lanes give the shape, its iotas the mode.
//   (before optimizations) a `call` to JAX's threefry2x32 function (4 u32 operands, a pair out)
//                         of any of the three kinds above, one site per call chain from the
//                         entry, named by the chain's op_names.
//   threefry-custom-call  custom_call_target cu_threefry2x32[_ffi] / hip_threefry2x32[_ffi]
//   rng-bit-generator     the opcode, or XLA:CPU's expansion into a `call` to %rng.N
//   rng                   the opcode
// Shards: the distinct counter offsets the devices compute from partition-id (evaluated per device,
// passes/sharding/partition_offsets.h), else a constant table indexed by partition-id.
// Mode: partitionable when the counters come from per-dimension u64 iotas (iota_2x32_shape);
// replicated when they come from a flat iota split in halves (u32/s32 iota, then slices or
// collective-permutes, and all-gathers of the hash outputs); rbg for rng-bit-generator; unknown
// otherwise (e.g. fold_in, whose counters are constants and the same in both modes).
//
// The site's instructions are the anchor, its loop body, and the values of its computation that
// are derived only from keys, counters and constants ("random-only": constants, iotas,
// partition-id, small u32 entry parameters, and what is computed from them alone) whose op_name
// lies in the site's scope (the anchor's op_name up to the JAX function that drew the bits, e.g.
// ".../block_0/att_dropout"). Each instruction belongs to the site with the longest such scope.
// Its buffers are the module buffers (passes/memory/buffer_alias_analysis.h) holding those values;
// its collectives the collectives among its instructions
// (passes/collectives/collective_analysis.h).
//
// Assumes an after-optimizations (partitioned) module for per-device figures; a module that is
// not partitioned yet gets global figures and a note.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/hlo.h"
#include "passes/collectives/collective_analysis.h"
#include "passes/finding_kinds.h"
#include "passes/memory/platform_profile.h"
#include "passes/module_analyses.h"
#include "passes/module_facts.h"
#include "passes/rng/rng_site_kinds.h"
#include "passes/rng/rng_whatif.h"

namespace spmdsim::passes {

struct RngSiteOptions {
  // Collectives of the module, when the caller already has them; nullptr = computed here.
  const CollectiveResult* collectives = nullptr;
  // Smallest loop trip count of a rolled threefry: XLA:CPU rolls 5 groups of 4 rounds.
  int64_t rolled_trip_count = 5;
  // How far XLA got with the module, from its file name (passes/module_facts.h).
  StageHint stage = StageHint::kUnknown;
  // The platform that compiled the module, when known: the what-if follows its lowerings
  // (XLA:GPU expands rng-bit-generator into Philox fused with its consumers).
  std::optional<Platform> platform;
  // How the XLA that compiled the module concatenates replicated threefry's halves along their
  // sharded dimension (the user names its JAX release): the replicated what-if follows it.
  ConcatLowering concat = ConcatLowering::kAllGather;
  // The draws of the same program before optimizations (global shapes: nothing is partitioned
  // yet), by the op_name of their call site, which XLA keeps through its passes. A site whose
  // device offsets cannot be read (the dump elides their table) takes its global size from the
  // draw whose op_name is the longest '/'-prefix of its own.
  struct UnpartitionedDraw {
    std::string op_name;
    int64_t global_elements = 0;
  };
  std::vector<UnpartitionedDraw> unpartitioned_draws;
};

// A buffer a site materializes, in the words of XLA's OOM listing.
struct RngSiteBuffer {
  std::string value;   // "name{index}" of the buffer's first site value
  std::string opcode;  // XLA Label
  std::string shape;   // without layout
  SiteBufferRole role = SiteBufferRole::kDerived;
  std::string op_name;
  int64_t bytes = 0;
  // Every value the buffer holds in turn (a loop's init, state and result), as XLA names them.
  std::vector<std::string> values;
  // A value of it is computed before the backward pass starts and read after.
  bool held_across = false;
};

struct RngSiteCollective {
  std::string instruction;
  ir::CollectiveKind kind = ir::CollectiveKind::kNone;
  std::string shape;
  // The collective's operands that move this site's values, of operand_count: a collective XLA
  // combined from several sites' collectives is shared by them, and bytes and wire are this
  // site's part of it (in proportion to its operands' bytes).
  int64_t operands = 1;
  int64_t operand_count = 1;
  int64_t bytes = 0;                  // B of collective_analysis.h, one execution
  int64_t wire_bytes_per_device = 0;  // with loop multipliers
};

struct RngSite {
  std::string name;         // the anchor instruction
  std::string computation;  // where the anchor sits
  SiteKind kind = SiteKind::kThreefryRolled;
  SiteMode mode = SiteMode::kUnknown;
  std::string algorithm;  // rng-bit-generator's algorithm=..., or "expanded call %rng.N"
  SitePurpose purpose = SitePurpose::kBits;
  std::string draws;  // the JAX functions, outermost first: "bernoulli/uniform"
  SitePhase phase = SitePhase::kOther;
  std::vector<int64_t> shape;  // the random tensor, per device
  std::string dtype;           // its element type ("u32")
  int64_t local_elements = 0;
  int64_t global_elements = 0;  // over the whole mesh
  int64_t shards = 1;           // devices the tensor is split over (global / local)
  // False when the device offsets read a constant table the dump elides ("{...}"): shards and
  // global_elements are then not derived from them (partitionable: each partition taken as its
  // own slice, an upper bound; replicated: the lanes one device hashes, a lower bound).
  bool shards_known = true;
  // Shards and global size taken from the program before optimizations (the offsets elided).
  bool shards_from_unpartitioned = false;
  std::string op_name;  // the anchor's
  std::string scope;    // op_name prefix that defines the site
  std::string source;   // "file.py:76"
  // The draw's call stack, innermost first ("path/file.py:76"), where the dump's stack-frame
  // table gives it: the frame in the user's own code tells draws of one library line apart.
  std::vector<std::string> call_stack;
  std::vector<std::string>
      consumers;  // "dropout (mask and select) in select_add_fusion.3 (forward)"
  // Instructions outside the site that read its bits (dropouts, fusions computing from them);
  // not other sites' members, which read only what the sites share (a key, the partition id).
  int64_t consumer_count = 0;
  std::vector<RngSiteBuffer> buffers;  // largest first
  int64_t materialized_bytes = 0;      // sum of buffers
  int64_t counter_bytes = 0;           // of which counters and loop state
  int64_t bits_bytes = 0;              // of which hash outputs gathered / concatenated / sliced
  std::vector<RngSiteCollective> collectives;
  int64_t wire_bytes_per_device = 0;  // per step
  bool key_depends_on_partition = false;
  std::string key_dependency;  // the instruction the key depends on (partition-id.N)
  int64_t instruction_count = 0;
  RngWhatIf whatif;  // per device, for the dump's mesh
};

// A finding about one site (or the module), in the JSON schema's shape.
struct RngFinding {
  FindingKind kind = FindingKind::kRngKeyResidual;       // names and SARIF ids: finding_kinds.h
  FindingSeverity severity = FindingSeverity::kWarning;  // the kind's (finding_kinds.h)
  int64_t bytes = 0;
  int64_t saving_bytes = 0;
  std::string site;  // anchor instruction
  std::string op_name;
  std::string source;
  std::string message;
  std::vector<std::string> values;  // rng-key-residual: the values held across, "name{}"
};

// Whether a module's noise is tied to the global tensor or independent per device, by the bits
// sites' keys. A key shared by all devices, hashed by threefry in either mode, gives each element
// of the global random tensor the same bits on any mesh (the mode changes the bits, the mesh does
// not); a key derived from the device's position (partition-id, an axis index in shard_map) gives
// each device its own noise, which changes with the device count; rng-bit-generator's bits are
// not guaranteed stable across backends or shardings.
struct RngNoise {
  int64_t shared_key_sites = 0;      // threefry with a key every device shares
  int64_t per_device_key_sites = 0;  // a key from the device's position
  int64_t rbg_sites = 0;             // rng-bit-generator, shared key
};

struct RngSiteTotals {
  int64_t sites = 0;
  int64_t bits_sites = 0;  // sites with purpose kBits
  int64_t materialized_bytes = 0;
  int64_t wire_bytes_per_device = 0;
  RngWhatIf whatif;
  RngNoise noise;  // over the bits sites
};

// What recomputing every rng-key-residual from the key would do to the peak
// (passes/rng/rng_remat_saving.h fills it; `ran` stays false until it has).
struct RngRematWhatIf {
  bool ran = false;
  int64_t peak_bytes = 0;             // as compiled
  int64_t peak_bytes_recomputed = 0;  // with the residuals recomputed where the backward reads them
  int64_t saving_bytes = 0;
  int64_t buffers = 0;  // residual buffers the what-if moved
  std::string peak_instruction_recomputed;
};

struct RngSiteResult {
  int64_t num_partitions = 1;
  bool partitioned = true;     // false: a module before SPMD partitioning (global shapes)
  std::vector<RngSite> sites;  // schedule (text) order of anchors
  RngSiteTotals totals;
  std::vector<RngFinding> findings;
  std::vector<std::string> notes;
  // Scheduled modules: per computation holding both passes, the instruction where its backward
  // pass starts (the first backward instruction that reads a forward result, directly or not),
  // the boundary rng-key-residual values are held across.
  std::map<std::string, std::string> backward_start;
  RngRematWhatIf remat;
};

// With the module's shared analyses (passes/module_analyses.h), or with a module alone.
RngSiteResult AnalyzeRngSites(ModuleAnalyses& analyses, const RngSiteOptions& options = {});

// The draws of `before`, the same program before optimizations (shapes still global), for
// RngSiteOptions::unpartitioned_draws.
std::vector<RngSiteOptions::UnpartitionedDraw> UnpartitionedDraws(const ir::HloModule& before);

// A site the module before optimizations can size: its offsets could not be read, and it is
// partitionable (its counters are the global row-major index of the same tensor there) or
// replicated (every device draws the whole global tensor there, as its halves show).
bool SizableFromSource(const RngSite& site);
// Whether some site is (SizesFromSource would help, and is worth loading that module for).
bool SomeSitesSizableFromSource(const RngSiteResult& result);

// `result` (AnalyzeRngSites of `analyses` with `options`) analysed again with the draws of
// `before`, the same module before optimizations, when some site's offsets cannot be read.
void SizesFromSource(ModuleAnalyses& analyses, RngSiteOptions options, const ir::HloModule& before,
                     RngSiteResult& result);
RngSiteResult AnalyzeRngSites(const ir::HloModule& module, const RngSiteOptions& options = {});

// The site's scope: op_name without the trailing "/while" (or "/threefry2x32",
// "/rng_bit_generator", ...) and without the trailing jit(_uniform)-style JAX random functions,
// keeping at least one component below the outermost jit(...).
std::string RngScope(std::string_view op_name);

// "forward" for op_names under jvp(...) only, "backward" under transpose(jvp(...)), else "other".
SitePhase RngPhase(std::string_view op_name);

}  // namespace spmdsim::passes
