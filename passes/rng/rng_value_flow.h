// Where a site's values flow: the instructions that only hand values on (reshapes, copies,
// moving collectives), the readers that compute from them past those, and the masks and selects
// a dropout makes of them. Shared by the site finder's shapes, consumers and buffers.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/hlo.h"

namespace spmdsim::passes::rng_internal {

using ReaderList = std::vector<std::pair<const ir::HloInstruction*, const ir::HloInstruction*>>;

// all-gather, collective-permute, all-to-all: the values arrive elsewhere unchanged.
bool IsMovingCollective(ir::Opcode opcode);
// The start of an async pair moving values (all-gather-start, collective-permute-start, or an
// async-start wrapping a moving collective).
bool IsCollectiveStart(const ir::HloInstruction& instr);
// A fusion that only moves data (slices, bitcasts, concatenations of its parameters).
bool MovesDataOnly(const ir::HloInstruction& instr);
// Where the values a collective moves are read: the users of the part of its result that holds
// operand `operand`, through its done, get-tuple-elements, bitcasts, copies and data-moving
// fusions.
void ReadersPastCollective(const ir::HloInstruction& collective, int64_t operand,
                           std::vector<const ir::HloInstruction*>& out);
// Whether `instr` hands its operand's values on without computing from them.
bool HandsValuesOn(const ir::HloInstruction& instr);
// The instructions that compute from what `reader` reads, past those that only hand values on,
// each with the first collective the values went through (or null); `stop` ends the walk.
void ComputingReaders(const ir::HloInstruction* reader, const ir::HloInstruction* via,
                      const std::function<bool(const ir::HloInstruction*)>& stop, ReaderList& out);
// ComputingReaders of `reader` reading `value`, through the collective `reader` may be.
void ComputingReadersOf(const ir::HloInstruction* value, const ir::HloInstruction* reader,
                        const std::function<bool(const ir::HloInstruction*)>& stop,
                        ReaderList& out);
// Whether `instr` holds a mask computed by a compare, handed on through copies and reshapes.
bool ComputesMask(const ir::HloInstruction& instr);
// A consumer computing a mask (pred) that a later instruction selects with.
bool SelectsWithMask(const ir::HloInstruction& mask);
// Whether `value` is one of `members` or handed on from one.
bool FromSite(const ir::HloInstruction* value,
              const std::unordered_set<const ir::HloInstruction*>& members);
// The largest select in the fusion `consumer` whose predicate a compare of values from the
// operands `from_site` marks computes: the dropout's, of the random tensor's shape. Null: none.
const ir::Shape* DropoutSelectShape(
    const ir::HloInstruction& consumer,
    const std::function<bool(const ir::HloInstruction*)>& from_site);

}  // namespace spmdsim::passes::rng_internal
