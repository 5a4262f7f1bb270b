// Whether a program is already rematerialized, from the names XLA keeps: JAX's jax.checkpoint
// (jax.remat) puts the recomputed forward under a "checkpoint/rematted_computation" op_name scope
// (older JAX: "remat(...)", "checkpoint(...)"), and XLA's own rematerialization pass names the
// instructions it clones "<name>.remat", "<name>.remat2", "fusion.9.remat.1".
//
//   jit(train_step)/transpose(jvp(Model))/block_1/checkpoint/rematted_computation/mlp/dot_general
//   fusion.1265.remat3
//
// passes/rng/rng_site_analysis.cc uses the same "rematted_computation" scope to tell a remat
// recomputation from the backward pass proper.
#pragma once

#include <string>
#include <string_view>

#include "ir/hlo.h"

namespace spmdsim::passes {

// An op_name under jax.checkpoint / jax.remat: a scope component "checkpoint", "remat" or
// "rematted_computation", or a "checkpoint(...)" / "remat(...)" transform.
bool OpNameIsRematerialized(std::string_view op_name);

// An instruction name XLA's rematerialization pass gave a clone (".remat" then digits, a '.',
// or the end).
bool InstructionNameIsRematerialized(std::string_view name);

struct RematEvidence {
  bool found = false;
  std::string kind;         // "jax.checkpoint" | "XLA rematerialization"
  std::string instruction;  // the first instruction that shows it
  std::string op_name;
};

// The first instruction of the module (computations in text order) that is rematerialized.
RematEvidence FindRemat(const ir::HloModule& module);

}  // namespace spmdsim::passes
