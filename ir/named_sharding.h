// Named-mesh shardings, as XLA prints a NamedSharding (JAX 0.12's before-optimizations dumps,
// Shardy's export), turned into the tile assignment the rest of spmdsim reads.
//
//   {mesh['data'=8], [{'data'}, {}]}                 dim 0 over 'data', dim 1 whole
//   {mesh['data'=2,'model'=2], [{}, {'model'}]}      unused axes replicate ('data' here)
//   {mesh['a'=2,'b'=4], [{'b', 'a'}]}                 several axes on one dim, major first
//   {mesh['x'=8], [{'x':(2)4}]}                       sub-axis: 'x' seen as [2,4,1], the 4
//   {mesh['a'=4], device_ids=([2,2]T(1,0)), [{'a'}]}  mesh devices in another order
//   {mesh['a'=2,'b'=2], [{'a'}], replicated={'b'}, unreduced={...}, manual={...}}
//   {mesh['data'=8], replicated}   {mesh[], replicated}   {maximal_mesh[device_id=5]}
//   {mesh[...], unreduced}   {mesh[...], manual}   '?' (open dimension) inside a dim's braces
//
// The tile dims are the per-dimension shard counts, then a manual dim, an unreduced dim and a
// replicated dim for the mesh axes (or parts of axes) no dimension uses, as XLA's conversion to
// its tile-assignment form orders them; the device list is the mesh's device array transposed
// into that order.
#pragma once

#include "ir/sharding.h"
#include "ir/token_reader.h"

namespace spmdsim::ir {

// Parses from the token after the sharding's '{' (the 'mesh' or 'maximal_mesh' keyword) up to,
// not including, its '}'. Fills `s` as the equivalent tile assignment, with `s.named` holding the
// text as written.
void ParseNamedShardingBody(TokenReader& reader, Sharding& s);

}  // namespace spmdsim::ir
