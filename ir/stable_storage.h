// StableStorage<T>: owns objects created one by one and never moves them, so pointers to them
// stay valid for the storage's lifetime. It replaces std::deque for the module's instructions
// and computations: libstdc++'s deque gives objects over 512 bytes a heap block each, while this
// allocates kChunk objects' worth of raw memory at a time and constructs each object in place
// when it is created (the untouched rest of a chunk costs no resident memory).
//
// Move-only; destroys its objects in creation order.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace spmdsim::ir {

template <typename T, size_t kChunk = 1024>
class StableStorage {
 public:
  StableStorage() = default;
  StableStorage(const StableStorage&) = delete;
  StableStorage& operator=(const StableStorage&) = delete;
  StableStorage(StableStorage&& other) noexcept
      : chunks_(std::move(other.chunks_)), size_(std::exchange(other.size_, 0)) {}
  StableStorage& operator=(StableStorage&& other) noexcept {
    if (this != &other) {
      Clear();
      chunks_ = std::move(other.chunks_);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~StableStorage() { Clear(); }

  // A new value-initialised T.
  T& Emplace() {
    if (size_ == chunks_.size() * kChunk) {
      chunks_.push_back(static_cast<T*>(::operator new(sizeof(T) * kChunk, Align())));
    }
    T* slot = chunks_.back() + size_ % kChunk;
    new (slot) T();
    ++size_;
    return *slot;
  }

  size_t size() const { return size_; }

 private:
  static std::align_val_t Align() { return std::align_val_t{alignof(T)}; }

  void Clear() {
    for (size_t i = 0; i < size_; ++i) chunks_[i / kChunk][i % kChunk].~T();
    for (T* chunk : chunks_) ::operator delete(chunk, Align());
    chunks_.clear();
    size_ = 0;
  }

  std::vector<T*> chunks_;
  size_t size_ = 0;
};

}  // namespace spmdsim::ir
