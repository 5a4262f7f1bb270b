// The rules of one platform's buffer assignment that the memory figures depend on. XLA:CPU and
// XLA:GPU run the same BufferAssigner (xla/service/buffer_assignment.cc) with their own
// constants; XLA:TPU's compiler lives in libtpu, whose sources are not public, so its rules are
// the ones its buffer-assignment files show (each checked against every TPU dump of the corpus
// and against probe compiles, see docs/MEMORY.md).
//
//                          CPU      GPU      TPU
//   temp offset alignment  64       256      16 KiB in HBM, 4 KiB in VMEM (S(1)), 512 B in S(6),
//                                            4 B in SMEM (S(2))
//   tuple pointer table    8 B per element    4 B per element, rounded up to 512 B
//   buffer sizes           as the shape       padded to whole tiles; a buffer is a multiple of
//                                            512 B (SMEM: as the shape); an untiled array
//                                            outside SMEM takes T(8,128)
//   tuple tables           own allocations (is_tuple), appended after the heap, each aligned
//   memory spaces          one (0)           S(n) is its own heap: 0 HBM, 1 VMEM, 2 SMEM, ...
//   heap packing order     spatial or        HBM: best fit in order of definition, a buffer
//                          temporal, the     held from its first value to its last, eviction
//                          smaller heap      copies last (docs/MEMORY.md: every HBM offset of
//                                            every TPU assignment in the corpus is placed so)
//   temps in argument and  yes, where live ranges allow
//   output allocations                       no
//
// GPU: kXlaAllocatedBufferAlignBytes (xla/service/gpu/gpu_constants.h, 256) is the color
// alignment gpu_compiler.cc gives BufferAssigner::Run; CPU: cpu_compiler.cc's memory_alignment,
// cpu_function_runtime::MinAlign() (64).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ir/shape.h"

namespace spmdsim::passes {

enum class Platform : uint8_t { kCpu, kGpu, kTpu };

// "cpu", "gpu", "tpu".
std::string_view PlatformName(Platform platform);
// "cpu"/"gpu"/"tpu" (any case); nullopt otherwise.
std::optional<Platform> ParsePlatform(std::string_view text);

struct PlatformProfile {
  Platform platform = Platform::kCpu;
  // How the platform was decided, in words for the output ("file name", "--platform", ...).
  std::string decided_by = "default (no platform named)";
  // XLA:TPU: the unit its tuple tables are rounded up to. 512 B on a v5e; libtpu's buffer
  // assignments for v5p and v6e give tables of 2 to 8 elements 32 B and of 10 elements 64 B
  // (python/tests' deviceless compiles), so 32 B there: set where the dump names the
  // generation (analyzer/model/module_platform.h), 512 B otherwise.
  int64_t tpu_tuple_table_unit = 512;

  static PlatformProfile For(Platform platform, std::string decided_by = {});

  // Offset alignment of the values in memory space `space`'s temp allocation.
  int64_t TempAlignment(int64_t space) const;
  // Whether memory space `space`'s heap places its buffers in the order they are defined, each
  // in the smallest free gap, rather than as XLA's BufferAssigner does (both of
  // GlobalDecreasingSizeBestFitHeap's sorts, the smaller heap kept).
  bool PacksInDefinitionOrder(int64_t space) const;
  // Bytes XLA allocates for one buffer of this (array or tuple) shape, without its leaves.
  int64_t BufferBytes(const ir::Shape& shape) const;
  // A temporary may take the space of a donated argument's or an output's allocation where their
  // live ranges do not overlap (BufferAssigner::AssignSingleHloBuffer on CPU and GPU). XLA:TPU's
  // allocations of arguments and outputs hold only their own values.
  bool ReusesArgumentAndOutputAllocations() const { return platform != Platform::kTpu; }
  // The memory space a value of this shape lives in (its layout's S(n); 0 for tuples).
  int64_t MemorySpaceOf(const ir::Shape& shape) const;
  // "HBM", "VMEM", "SMEM", "host", or "S(n)" for a memory space of this platform.
  std::string MemorySpaceName(int64_t space) const;
};

}  // namespace spmdsim::passes
