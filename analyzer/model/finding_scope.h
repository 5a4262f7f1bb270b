// Which dropout a finding is about, in the user's words: the site's op_name scope without JAX's
// transformation wrappers, e.g. "_transformer/block_3/mlp_dropout" for
// "jit(train_step)/transpose(jvp(TransformerModel))/_transformer/block_3/mlp_dropout/jit(_bernoulli)/
// jit(_uniform)/while". Text views print it beside the instruction name and the source line, which
// are the same for every dropout of one Python line.
#pragma once

#include <string>
#include <string_view>

namespace spmdsim::analyzer {

// The scope, or "" when the op_name has none: the components after the last JAX transformation
// (written `name(...)`: jit, jvp, transpose, vmap, ...; module and named_scope names never have
// parentheses), without jax.checkpoint's "checkpoint" and "rematted_computation" entries.
std::string FindingScope(std::string_view op_name);

}  // namespace spmdsim::analyzer
