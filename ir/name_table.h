// NameTable<V>: the parser's map from instruction or computation names to their objects. An
// open-addressing hash table keyed by string_views into the source text: no allocation per name
// (std::unordered_map allocates a node each), and Clear() is O(1) (a generation counter), so one
// table serves every computation of a module, large or small.
//
// Memory: a computation of a million instructions (a model's ENTRY repeated, or PyTorch/XLA's one
// flat graph) fills the table with a million names that are looked up at random, so its size is
// what the parse waits on (cache and TLB misses, page faults of fresh memory). The entries are
// kept dense, in insertion order, and the probe array holds 8-byte slots (generation, 16 bits of
// the hash, the entry's index) at a load of at most 3/4. An entry is the name and the value (24
// bytes for a pointer), or, when the value knows its own name (NameOf, e.g. an instruction's
// `name`), the value alone (8 bytes): ~20 bytes per name, where slots of their own {hash, name,
// value} at a load of 1/2 took 80 to 160. Names inserted recently are looked up most (operands
// name the instructions just before them), and their entries sit together at the end.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string_view>
#include <type_traits>
#include <vector>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace spmdsim::ir {

// a == b, inline for the short names that are most lookups (a call to memcmp costs more than
// comparing 16 bytes); loads stay inside both strings.
inline bool SameName(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  const char* p = a.data();
  const char* q = b.data();
  const auto load8 = [](const char* at) {
    uint64_t word;
    std::memcpy(&word, at, sizeof(word));
    return word;
  };
  const auto load4 = [](const char* at) {
    uint32_t word;
    std::memcpy(&word, at, sizeof(word));
    return word;
  };
  if (n >= 8) {
    if (n > 16) return std::memcmp(p, q, n) == 0;
    return load8(p) == load8(q) && load8(p + n - 8) == load8(q + n - 8);
  }
  if (n >= 4) return load4(p) == load4(q) && load4(p + n - 4) == load4(q + n - 4);
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != q[i]) return false;
  }
  return true;
}

// The default: each entry keeps its name beside the value.
struct NameInEntry {};

template <typename V, typename NameOf = NameInEntry>
class NameTable {
 public:
  // Inserts name -> value; false (and no change) when the name is already present.
  bool Insert(std::string_view name, V value) { return Insert(name, Hash(name), value); }
  // The same with Hash(name) computed by the caller (who may have needed it before).
  bool Insert(std::string_view name, uint64_t hash, V value) {
    if ((entries_.size() + 1) * 4 > slots_.size() * 3) Grow();
    const uint16_t tag = Tag(hash);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.generation != generation_) {
        slot = {generation_, tag, static_cast<uint32_t>(entries_.size())};
        entries_.push_back(MakeEntry(name, value));
        return true;
      }
      if (slot.tag == tag && SameName(EntryName(entries_[slot.index]), name)) return false;
    }
  }

  // Makes room for `count` names in all, so that inserting them never grows the table (a caller
  // that can tell a computation is large sizes the table once instead of growing it 4x at a
  // time, each growth placing every name again).
  void Reserve(size_t count) {
    if (count * 4 <= slots_.size() * 3) return;
    size_t slots = slots_.empty() ? 64 : slots_.size();
    while (count * 4 > slots * 3) slots *= 2;
    Grow(slots);
  }

  // Makes room for one more name and starts loading the slot where a name of this hash goes, for
  // an Insert a few hundred instructions later: in a table of a million names that slot is
  // rarely in cache, and the parse would otherwise wait for it.
  void Prefetch(uint64_t hash) {
    if ((entries_.size() + 1) * 4 > slots_.size() * 3) Grow();
    __builtin_prefetch(&slots_[hash & mask_], 1);
  }

  // The value for name, or nullptr-like V{} when absent.
  V Find(std::string_view name) const {
    if (entries_.empty()) return V{};
    return Find(name, Hash(name));
  }
  V Find(std::string_view name, uint64_t hash) const {
    if (entries_.empty()) return V{};
    const uint16_t tag = Tag(hash);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.generation != generation_) return V{};
      if (slot.tag == tag) {
        const Entry& entry = entries_[slot.index];
        if (SameName(EntryName(entry), name)) return EntryValue(entry);
      }
    }
  }

  void Clear() {
    entries_.clear();
    if (++generation_ == 0) {  // wrapped: stale slots could look live again
      for (Slot& slot : slots_) slot.generation = 0;
      generation_ = 1;
    }
  }

  size_t size() const { return entries_.size(); }

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

 private:
  struct NamedEntry {
    std::string_view name;
    V value{};
  };
  static constexpr bool kNameInEntry = std::is_same_v<NameOf, NameInEntry>;
  using Entry = std::conditional_t<kNameInEntry, NamedEntry, V>;
  static Entry MakeEntry(std::string_view name, V value) {
    if constexpr (kNameInEntry) {
      return {name, value};
    } else {
      return value;
    }
  }
  static std::string_view EntryName(const Entry& entry) {
    if constexpr (kNameInEntry) {
      return entry.name;
    } else {
      return NameOf{}(entry);
    }
  }
  static V EntryValue(const Entry& entry) {
    if constexpr (kNameInEntry) {
      return entry.value;
    } else {
      return entry;
    }
  }
  struct Slot {
    uint16_t generation = 0;  // live when equal to the table's generation
    uint16_t tag = 0;         // the hash's top bits: most mismatches never read the entry
    uint32_t index = 0;       // in entries_
  };

  static uint16_t Tag(uint64_t hash) { return static_cast<uint16_t>(hash >> 48); }
  static uint64_t Load8(const char* p) {
    uint64_t word;
    std::memcpy(&word, p, sizeof(word));
    return word;
  }

  // Grows the probe array and re-places the live entries, hashing their names again (in
  // insertion order, so the names are read as the text runs).
  void Grow() {
    // Past 2^16 slots (out of the first-level cache) by 4x: a million names are then placed
    // ~1.3 times in all instead of ~2 times.
    Grow(slots_.empty() ? 64 : slots_.size() * (slots_.size() < (1u << 16) ? 2 : 4));
  }
  void Grow(size_t slot_count) {
    slots_.Assign(slot_count);
    mask_ = slots_.size() - 1;
    generation_ = 1;
    // The slots are written at random: each is prefetched kAhead entries before it is written.
    constexpr size_t kAhead = 16;
    const size_t count = entries_.size();
    uint64_t ahead[kAhead];
    for (size_t index = 0; index < count + kAhead; ++index) {
      if (index >= kAhead) {
        const size_t placed = index - kAhead;
        const uint64_t hash = ahead[placed % kAhead];
        for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
          if (slots_[i].generation != generation_) {
            slots_[i] = {generation_, Tag(hash), static_cast<uint32_t>(placed)};
            break;
          }
        }
      }
      if (index < count) {
        const uint64_t hash = Hash(EntryName(entries_[index]));
        __builtin_prefetch(&slots_[hash & mask_], 1);
        ahead[index % kAhead] = hash;
      }
    }
    // The dense array grows with the slots, so a push_back between two Grows never copies.
    entries_.reserve(slots_.size() * 3 / 4);
  }

  std::vector<Entry> entries_;
  // The probe array. A large one (a computation of a million names: 16 MiB) is put on 2 MiB pages
  // where the kernel offers them (madvise), so that its random probes do not each miss the TLB
  // and its first touches fault 2 MiB at a time.
  class SlotArray {
   public:
    SlotArray() = default;
    SlotArray(const SlotArray&) = delete;
    SlotArray& operator=(const SlotArray&) = delete;
    ~SlotArray() { Release(); }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    Slot& operator[](size_t i) { return data_[i]; }
    const Slot& operator[](size_t i) const { return data_[i]; }
    Slot* begin() { return data_; }
    Slot* end() { return data_ + size_; }
    // `count` empty slots (the old ones are dropped).
    void Assign(size_t count) {
      Release();
      const size_t bytes = count * sizeof(Slot);
      if (bytes >= kHugeFrom) {
        const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
        data_ = static_cast<Slot*>(std::aligned_alloc(kHugePage, rounded));
        if (data_ == nullptr) throw std::bad_alloc();
        huge_ = true;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        madvise(data_, rounded, MADV_HUGEPAGE);  // a hint: nothing changes when refused
#endif
      } else {
        data_ = static_cast<Slot*>(::operator new(bytes));
      }
      std::uninitialized_fill_n(data_, count, Slot{});
      size_ = count;
    }

   private:
    static constexpr size_t kHugePage = size_t{2} << 20;
    static constexpr size_t kHugeFrom = size_t{4} << 20;
    void Release() {
      if (data_ == nullptr) return;
      if (huge_) {
        std::free(data_);
      } else {
        ::operator delete(data_);
      }
      data_ = nullptr;
      size_ = 0;
      huge_ = false;
    }
    Slot* data_ = nullptr;
    size_t size_ = 0;
    bool huge_ = false;
  };
  SlotArray slots_;
  size_t mask_ = 0;
  uint16_t generation_ = 1;  // slots start at 0: all empty
};

}  // namespace spmdsim::ir
