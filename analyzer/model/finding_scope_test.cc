// FindingScope on op_names as JAX writes them (taken from the corpus' dumps and the seed's OOM
// listing).
#include "analyzer/model/finding_scope.h"

#include <catch2/catch.hpp>

namespace spmdsim::analyzer {
namespace {

TEST_CASE("FindingScope keeps the user's scopes and drops JAX's transformations") {
  CHECK(FindingScope("jit(train_step)/jvp(TransformerModel)/_transformer/block_0/mlp_dropout/"
                     "jit(_bernoulli)/jit(_uniform)/while") == "_transformer/block_0/mlp_dropout");
  CHECK(FindingScope("jit(train_step)/transpose(jvp(TransformerModel))/_transformer/block_3/"
                     "att_dropout/jit(_bernoulli)/jit(_uniform)/while") ==
        "_transformer/block_3/att_dropout");
  // The seed's listing: pjit(...) and a threefry2x32 leaf.
  CHECK(FindingScope("pjit(training_step)/jit(main)/jvp(TransformerModel)/_transformer/block_11/"
                     "mlp_dropout/threefry2x32") == "_transformer/block_11/mlp_dropout");
  // Under remat (the seed-size dump's rng-key-residual findings).
  CHECK(FindingScope("jit(train_step)/transpose(jvp(TransformerModel))/_transformer/block_0/"
                     "jvp(TransformerModel)/_transformer/block_0/checkpoint/rematted_computation/"
                     "mlp_dropout/jit(_bernoulli)/jit(_uniform)/while") ==
        "_transformer/block_0/mlp_dropout");
  // A transformation with a slash inside its parentheses is one component.
  CHECK(FindingScope("jit(f)/vmap(a/b)/layer/dropout/while") == "layer/dropout");
  CHECK(FindingScope("") == "");
  CHECK(FindingScope("jit(f)/jit(_uniform)/while") == "");
}

}  // namespace
}  // namespace spmdsim::analyzer
