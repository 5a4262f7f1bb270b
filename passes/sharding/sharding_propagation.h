// A simplified sharding propagation over a module that is not partitioned yet (an XLA
// before_optimizations dump): what the SPMD partitioner will have to communicate.
//
// Forward only, deterministic and conservative. Shardings start at the entry parameters (their
// `sharding=` attribute, which Shardy also writes) and flow through every instruction by the
// rules of passes/sharding/sharding_rules.h. Called computations are walked once per call site with
// the caller's shardings, as if inlined (XLA inlines calls before partitioning); a while body is
// walked with the loop's initial shardings and, if its result comes back sharded differently,
// once more with the common part of both. An instruction with its own `sharding=` attribute
// (Shardy's output constraints, a with_sharding_constraint) takes that sharding, resharding its
// value when the propagated one differs. shard_map regions (`xla.sdy.GlobalToLocalShape` ...
// `xla.sdy.LocalToGlobalShape`) are manual: nothing inside is partitioned, their collectives are
// taken as written.
//
// What it reports are needs, not collectives (passes/collectives/collective_prediction.h turns them
// into those): partial sums (a dot or reduction over a split dimension), reshards, collectives
// written in the module, and replicated-threefry generations. The last: JAX's non-partitionable
// threefry hashes a flat `iota(n)` counter split in halves (REFERENCE §2), computed replicated
// until the bits meet a value split over the mesh; XLA's propagation then splits the whole
// generation along that value's sharding and redistributes the halves. A need records the
// generation's n and the consumer's sharding.
//
// An instruction whose sharding cannot be decided is kUnknown, and everything it feeds; those
// raise no needs (counted in `unknown_instructions`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/hlo.h"
#include "ir/limits.h"
#include "passes/sharding/mesh_sharding.h"

namespace spmdsim::passes {

struct ShardingPropagationOptions {
  // Nesting of calls and loops walked; deeper calls produce kUnknown. The parser already bounds
  // nesting at ir::kMaxCallNesting, so by default every call is entered.
  int max_call_depth = ir::kMaxCallNesting;
  // Instructions walked in all (call sites count separately, so a call tree can multiply the
  // module's size); past this, calls are not entered and their results are kUnknown. The seed
  // model's step walks ~25k.
  int64_t max_instructions_walked = 20'000'000;
  // Communication needs recorded in all (each a predicted collective, kept with its dependency
  // set, so memory grows with their square); past this, calls are not entered. A call DAG whose
  // every path reaches a collective would otherwise record one per path (tens of GB).
  int64_t max_needs = 1 << 13;
};

struct CommunicationNeed {
  enum class Kind : uint8_t {
    kPartialSum,          // the result of `instruction` is a partial sum over `axes`
    kReshard,             // the value `shape` changes sharding `from` -> `to` before `instruction`
    kReplicatedThreefry,  // a replicated threefry generation of `rng_counters` meets `sharding`
    kExplicit,            // a collective written in the module (inside shard_map)
  };
  Kind kind = Kind::kPartialSum;
  const ir::HloInstruction* instruction = nullptr;
  std::string rule;  // what raised it: "dot", "reduce", "scatter", "constraint", "reshape", ...
  ir::Shape shape;   // global shape of the value concerned (an array)
  ArraySharding sharding;    // kPartialSum: of the result; kReplicatedThreefry: of the consumer
  ArraySharding from, to;    // kReshard
  std::vector<int> axes;     // kPartialSum: the axes summed over
  int64_t rng_counters = 0;  // kReplicatedThreefry: n of iota(n)
  const ir::HloInstruction* rng_iota = nullptr;  // kReplicatedThreefry: the counter iota
  int64_t multiplier = 1;  // runs per step: trip counts of the enclosing loops
  bool multiplier_known = true;
  int32_t loop = -1;  // the enclosing while-body walk (-1: straight-line code of the step)
  std::vector<int32_t> depends_on;  // earlier needs whose results flow into this one
  std::string op_name;  // the instruction's op_name, prefixed with its call sites' (as inlined)
  std::string source;   // file:line of the instruction or, failing that, of its call site
};

struct ShardingPropagationResult {
  DeviceMesh mesh;
  std::vector<CommunicationNeed> needs;
  int64_t instructions_walked = 0;  // with call sites counted separately
  int64_t unknown_instructions = 0;
  std::vector<std::string> notes;
  // The entry computation's shardings, in text order (name -> Shardy-style text), for tests and
  // for users who want to see what the propagation decided.
  std::vector<std::pair<std::string, std::string>> entry_shardings;
};

ShardingPropagationResult PropagateShardings(const ir::HloModule& module,
                                             const ShardingPropagationOptions& options = {});

}  // namespace spmdsim::passes
