// NameTable<V>: the parser's map from instruction or computation names to their objects. An
// open-addressing hash table keyed by string_views into the source text: no allocation per name
// (std::unordered_map allocates a node each), and Clear() is O(1) (a generation counter), so one
// table serves every computation of a module, large or small.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace spmdsim::ir {

template <typename V>
class NameTable {
 public:
  // Inserts name -> value; false (and no change) when the name is already present.
  bool Insert(std::string_view name, V value) {
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    const uint64_t hash = Hash(name);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.generation != generation_) {
        slot = {hash, generation_, name, value};
        ++size_;
        return true;
      }
      if (slot.hash == hash && slot.name == name) return false;
    }
  }

  // The value for name, or nullptr-like V{} when absent.
  V Find(std::string_view name) const {
    if (size_ == 0) return V{};
    const uint64_t hash = Hash(name);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.generation != generation_) return V{};
      if (slot.hash == hash && slot.name == name) return slot.value;
    }
  }

  void Clear() {
    size_ = 0;
    if (++generation_ == 0) {  // wrapped: stale slots could look live again
      for (Slot& slot : slots_) slot.generation = 0;
      generation_ = 1;
    }
  }

  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t generation = 0;  // live when equal to the table's generation
    std::string_view name;
    V value{};
  };

  // Names are short ("fusion.123", "param_0.765"): 8 bytes at a time with a multiply-xorshift
  // mix (the last word overlapping the one before), inline, so a lookup costs a few dozen
  // instructions. Lookups only; the values never depend on it.
  static uint64_t Hash(std::string_view name) {
    constexpr uint64_t kMul = 0xbf58476d1ce4e5b9ull;
    const char* p = name.data();
    const size_t n = name.size();
    uint64_t h = n * 0x9e3779b97f4a7c15ull;
    const auto mix = [&](uint64_t word) {
      h = (h ^ word) * kMul;
      h ^= h >> 31;
    };
    if (n >= 8) {
      size_t i = 0;
      for (; i + 8 <= n; i += 8) mix(Load8(p + i));
      if (i < n) mix(Load8(p + n - 8));
    } else {
      uint64_t word = 0;
      for (size_t i = 0; i < n; ++i) word |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
      mix(word);
    }
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 29);
  }
  static uint64_t Load8(const char* p) {
    uint64_t word;
    std::memcpy(&word, p, sizeof(word));
    return word;
  }

  void Grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    const uint32_t old_generation = generation_;
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    generation_ = 1;
    size_ = 0;
    for (const Slot& slot : old) {
      if (slot.generation != old_generation) continue;
      for (size_t i = slot.hash & mask_;; i = (i + 1) & mask_) {
        if (slots_[i].generation != generation_) {
          slots_[i] = slot;
          slots_[i].generation = generation_;
          ++size_;
          break;
        }
      }
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
  uint32_t generation_ = 1;  // slots start at 0: all empty
};

}  // namespace spmdsim::ir
