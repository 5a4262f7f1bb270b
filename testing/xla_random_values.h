// The random values of a compile as XLA's own files name them, for the corpus tests of the RNG
// analyses (an oracle that does not use spmdsim's definition of random bits): every value of
// XLA's buffer assignment whose instruction's op_name lies in the scope of one of jax.random's
// drawing functions ("jit(_uniform)", "jit(_bernoulli)", ..., "random_bits") and not in its key
// derivation (split, fold_in), and every collective moving such a value. Constants (in constant
// allocations for the whole program) and scalars (key words, loop bounds, a reduce's init: no
// random tensor, whatever XLA:TPU pads them to) are left out.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dump/xla_memory_files.h"
#include "ir/hlo.h"

namespace spmdsim::testing {

// Whether a name-stack component is a jax.random drawing function, under JAX's transformation
// wrappers ("jvp(jit(_bernoulli))").
bool IsDrawComponent(std::string_view component);
// jax.random.split and fold_in ("jit(_threefry_split)", "random_split", "jit(_fold_in)"); a
// bare "split" is jnp.split (replicated mode splits its flat counters in halves).
bool IsKeyComponent(std::string_view component);
// The op_name XLA gives a value at `index` ("{1}") of `instr`: a multi-output fusion's element
// is named by the fused instruction computing it.
// An element of a while is named by what its body computes there; a copy or bitcast without
// metadata (XLA's copy insertion) by what it copies.
std::string_view OpNameOf(const ir::HloInstruction& instr, std::string_view index, int depth = 0);
// A collective whose element at `index` moves a value in a draw's scope.
bool MovesRandomValue(const ir::HloInstruction& instr, std::string_view index);
// Some component draws and none derives keys.
bool InDrawScope(std::string_view op_name);

// XLA's random values of `module`, by value name ("name{index}") with XLA's size of each.
std::map<std::string, int64_t> XlaRandomValues(const ir::HloModule& module,
                                               const dump::XlaBufferAssignment& assignment);

// The bytes of the buffers holding one of `random` (XlaRandomValues): `buffers` lists each
// buffer's values by name (the caller groups them, e.g. by the alias analysis), each buffer
// counted once at the largest size XLA gives its values.
int64_t XlaRandomBytes(const std::map<std::string, int64_t>& random,
                       const std::vector<std::vector<std::string>>& buffers);

}  // namespace spmdsim::testing
