#include "passes/memory/platform_profile.h"

#include <algorithm>
#include <cctype>

#include "ir/checked_math.h"

namespace spmdsim::passes {
namespace {

constexpr int64_t kTpuSmem = 2;
// XLA:TPU allocates every buffer outside SMEM in whole 512-byte units (a scalar's T(128) tile is
// 512 B; a two-element tuple's table is 512 B).
constexpr int64_t kTpuAllocationUnit = 512;

int64_t RoundUp(int64_t value, int64_t unit) {
  return unit <= 1 ? value : ir::SaturatingMul(ir::CeilDiv(value, unit), unit);
}

// An untiled TPU array outside SMEM is laid out in T(8,128) tiles all the same (its
// buffer-assignment sizes say so: f32[32,64]{0,1:S(1)} takes 32 KiB, a thread-local u32[] 4 KiB).
int64_t TpuArrayBytes(const ir::Shape& shape) {
  const ir::Layout& layout = shape.layout();
  if (!layout.tiles.empty() || layout.memory_space == kTpuSmem) return shape.ByteSize();
  ir::Layout tiled = layout;
  if (tiled.minor_to_major.size() != shape.dims().size()) {
    tiled.minor_to_major.clear();
    for (int64_t d = shape.rank() - 1; d >= 0; --d) tiled.minor_to_major.push_back(d);
  }
  tiled.tiles = {ir::Tile{{8, 128}}};
  ir::Shape padded = shape;
  padded.set_layout(std::move(tiled));
  return padded.ByteSize();
}

}  // namespace

std::string_view PlatformName(Platform platform) {
  switch (platform) {
    case Platform::kGpu:
      return "gpu";
    case Platform::kTpu:
      return "tpu";
    case Platform::kCpu:
      break;
  }
  return "cpu";
}

std::optional<Platform> ParsePlatform(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "cpu") return Platform::kCpu;
  if (lower == "gpu") return Platform::kGpu;
  if (lower == "tpu") return Platform::kTpu;
  return std::nullopt;
}

PlatformProfile PlatformProfile::For(Platform platform, std::string decided_by) {
  PlatformProfile profile;
  profile.platform = platform;
  if (!decided_by.empty()) profile.decided_by = std::move(decided_by);
  return profile;
}

int64_t PlatformProfile::TempAlignment(int64_t space) const {
  switch (platform) {
    case Platform::kCpu:
      return 64;
    case Platform::kGpu:
      return 256;
    case Platform::kTpu:
      break;
  }
  switch (space) {
    case 0:
      return 16384;
    case 1:
      return 4096;
    case kTpuSmem:
      return 4;
    default:
      return kTpuAllocationUnit;
  }
}

bool PlatformProfile::PacksInDefinitionOrder(int64_t space) const {
  return platform == Platform::kTpu && space == 0;
}

int64_t PlatformProfile::BufferBytes(const ir::Shape& shape) const {
  if (platform != Platform::kTpu) return shape.ByteSize();
  if (shape.IsTuple()) {
    const auto elements = static_cast<int64_t>(shape.tuple_shapes().size());
    return RoundUp(std::max<int64_t>(1, 4 * elements), tpu_tuple_table_unit);
  }
  if (!shape.IsArray()) return 0;
  const int64_t bytes = TpuArrayBytes(shape);
  return shape.layout().memory_space == kTpuSmem ? bytes : RoundUp(bytes, kTpuAllocationUnit);
}

int64_t PlatformProfile::MemorySpaceOf(const ir::Shape& shape) const {
  if (!shape.IsArray() || !shape.HasLayout()) return 0;
  return shape.layout().memory_space;
}

std::string PlatformProfile::MemorySpaceName(int64_t space) const {
  if (space == 0) return platform == Platform::kTpu ? "HBM" : "device";
  if (space == 5) return "host";
  if (platform == Platform::kTpu) {
    if (space == 1) return "VMEM";
    if (space == kTpuSmem) return "SMEM";
  }
  if (platform == Platform::kGpu) {
    // xla/service/gpu/gpu_memory_space_assignment.h's MemorySpaceColor.
    if (space == 1) return "collective";
    if (space == 2) return "temp";
  }
  return "S(" + std::to_string(space) + ")";
}

}  // namespace spmdsim::passes
