// The per-element bodies of every stage of the four dropout lowerings, as host-and-device inline
// functions: the CUDA kernels (cuda_backend.cu) call them from grid-stride loops and the CPU
// backend (cpu_backend.cc) from plain loops, so both backends compute the same bits by the same
// code. Each function writes element i (or pair j) of its stage's outputs and nothing else.
//
// A dropout site: bits of an activation of `global_elements` values, of which this device holds
// the row-major range [shard_offset, shard_offset + local_elements) (sharding along dim 0).
// mask[i] = uniform_f32(bits) < keep_prob; y[i] = mask[i] ? x[i] / keep_prob : 0 (flax dropout).
#pragma once

#include <cstdint>

#include "passes/rng/threefry_core.h"

namespace spmdsim::validate {

using threefry::Pair32;

// Everything a stage needs besides its buffers; plain data, copied to the device by value.
struct ElementParams {
  Pair32 key;
  uint64_t global_elements;  // n: elements of the whole (unsharded) activation
  uint64_t padded_words;     // replicated mode: n rounded up to even (JAX pads odd counts)
  uint64_t shard_offset;     // global index of this device's first element
  uint64_t local_elements;   // elements this device holds
  float keep_prob;
};

// The activation fed to every lowering: a fixed pattern of the global index, so that every
// backend and the CPU reference agree on it without copying it around.
SPMDSIM_HD inline float InputAt(uint64_t global_index) {
  return static_cast<float>(static_cast<int32_t>(global_index % 1021u) - 510) * 0.125f;
}

// Dropout of one element from its 32 random bits.
SPMDSIM_HD inline void DropoutElement(uint32_t bits, float x, float keep_prob, uint8_t* mask,
                                      float* y) {
  const bool keep = threefry::UniformF32FromBits(bits) < keep_prob;
  *mask = keep ? 1 : 0;
  *y = keep ? x / keep_prob : 0.0f;
}

// --- (a) replicated: global counters, global hash, then the local slice ----------------------

// counters[i] for i < padded_words: iota(n), plus one zero when n is odd.
SPMDSIM_HD inline void IotaReplicatedAt(const ElementParams& p, uint32_t* counters, uint64_t i) {
  counters[i] = i < p.global_elements ? static_cast<uint32_t>(i) : 0u;
}

// Pair j < padded_words / 2: hash (counters[j], counters[h + j]) into words[j] and words[h + j].
SPMDSIM_HD inline void HashReplicatedAt(const ElementParams& p, const uint32_t* counters,
                                        uint32_t* words, uint64_t j) {
  const uint64_t half = p.padded_words / 2;
  const Pair32 y = threefry::Threefry2x32(p.key, Pair32{counters[j], counters[half + j]});
  words[j] = y.w0;
  words[half + j] = y.w1;
}

// Local element i reads the global bits at shard_offset + i (the slice is a view, not a copy).
SPMDSIM_HD inline void DropoutFromWordsAt(const ElementParams& p, const uint32_t* words,
                                          const float* x, uint8_t* mask, float* y, uint64_t i) {
  DropoutElement(words[p.shard_offset + i], x[i], p.keep_prob, mask + i, y + i);
}

// --- (b) partitionable, materialized; (c) the custom-call form ---------------------------------

// iota_2x32_shape for the local shard: the global linear index as (high, low) words.
SPMDSIM_HD inline void Iota2x32At(const ElementParams& p, uint32_t* hi, uint32_t* lo, uint64_t i) {
  const Pair32 c = threefry::CounterOfIndex(p.shard_offset + i);
  hi[i] = c.w0;
  lo[i] = c.w1;
}

// (c) only: the key words broadcast to full-shape operands, as cu_threefry2x32 takes them.
SPMDSIM_HD inline void BroadcastKeyAt(const ElementParams& p, uint32_t* k0, uint32_t* k1,
                                      uint64_t i) {
  k0[i] = p.key.w0;
  k1[i] = p.key.w1;
}

// (b): the hash of materialized counters with the scalar key.
SPMDSIM_HD inline void HashAt(const ElementParams& p, const uint32_t* hi, const uint32_t* lo,
                              uint32_t* y0, uint32_t* y1, uint64_t i) {
  const Pair32 y = threefry::Threefry2x32(p.key, Pair32{hi[i], lo[i]});
  y0[i] = y.w0;
  y1[i] = y.w1;
}

// (c): the hash with every operand elementwise, keys included.
SPMDSIM_HD inline void HashKeyOperandsAt(const uint32_t* k0, const uint32_t* k1, const uint32_t* hi,
                                         const uint32_t* lo, uint32_t* y0, uint32_t* y1,
                                         uint64_t i) {
  const Pair32 y = threefry::Threefry2x32(Pair32{k0[i], k1[i]}, Pair32{hi[i], lo[i]});
  y0[i] = y.w0;
  y1[i] = y.w1;
}

// (b), (c): 32-bit bits are y0 ^ y1.
SPMDSIM_HD inline void DropoutFromPairAt(const ElementParams& p, const uint32_t* y0,
                                         const uint32_t* y1, const float* x, uint8_t* mask,
                                         float* y, uint64_t i) {
  DropoutElement(y0[i] ^ y1[i], x[i], p.keep_prob, mask + i, y + i);
}

// --- (d) fused: counter, hash and dropout in one pass, nothing materialized ---------------------

// bits_out, when not null, receives the bits for checking (a separate, unmeasured run).
SPMDSIM_HD inline void FusedDropoutAt(const ElementParams& p, const float* x, uint8_t* mask,
                                      float* y, uint32_t* bits_out, uint64_t i) {
  const uint32_t bits = threefry::PartitionableBits32At(p.key, p.shard_offset + i);
  if (bits_out != nullptr) bits_out[i] = bits;
  DropoutElement(bits, x[i], p.keep_prob, mask + i, y + i);
}

}  // namespace spmdsim::validate
