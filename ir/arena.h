// Arena: bump allocation of small arrays of trivially destructible values (an instruction's
// operands, users and attributes) in large blocks, all freed with the arena. A large module holds
// over a million such arrays: a heap block each would cost a header and rounding up to 16 bytes,
// and a std::vector a capacity word on top, about twice the payload in all.
//
// Move-only; never frees or moves an array before the arena itself goes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <vector>

namespace spmdsim::ir {

class Arena {
 public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  Arena(Arena&&) noexcept = default;
  Arena& operator=(Arena&&) noexcept = default;

  // `count` value-initialised Ts (nulls, zeros); an empty span for 0.
  template <typename T>
  std::span<T> AllocateArray(size_t count) {
    static_assert(std::is_trivially_destructible_v<T>, "the arena runs no destructors");
    if (count == 0) return {};
    if (count > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    T* first = static_cast<T*>(Allocate(sizeof(T) * count, alignof(T)));
    std::uninitialized_value_construct_n(first, count);
    return {first, count};
  }

 private:
  // Blocks grow with the module: the first is small (a module of a few instructions must not
  // reserve a megabyte: 10,000 small modules of a dump folder took 12 GB of address space), each
  // next one twice the last, up to a size the heap serves apart from small objects (returned to
  // the system when the module goes) and whose unused end is cheap. The arena's unused bytes
  // stay under its used ones plus the first block.
  static constexpr size_t kFirstBlockBytes = size_t{1} << 12;
  static constexpr size_t kLargestBlockBytes = size_t{1} << 20;

  void* Allocate(size_t bytes, size_t align) {
    auto at = reinterpret_cast<uintptr_t>(next_);
    const uintptr_t aligned = (at + align - 1) & ~(uintptr_t{align} - 1);
    if (next_ == nullptr || aligned - at + bytes > left_) {
      const size_t block = next_block_;
      next_block_ = next_block_ * 2 > kLargestBlockBytes ? kLargestBlockBytes : next_block_ * 2;
      const size_t size = bytes + align > block ? bytes + align : block;
      blocks_.push_back(std::make_unique_for_overwrite<std::byte[]>(size));
      next_ = blocks_.back().get();
      left_ = size;
      return Allocate(bytes, align);
    }
    left_ -= aligned - at + bytes;
    next_ = reinterpret_cast<std::byte*>(aligned + bytes);
    return reinterpret_cast<void*>(aligned);
  }

  std::vector<std::unique_ptr<std::byte[]>> blocks_;
  std::byte* next_ = nullptr;
  size_t left_ = 0;
  size_t next_block_ = kFirstBlockBytes;
};

}  // namespace spmdsim::ir
