// A value set while the dataflow analysis builds it: the sorted ids of the values a slot may
// hold. Nearly every slot holds one value, the one it defines, and keeps that id in place: a
// flat graph of a million instructions makes no allocation per slot (std::vector would make one
// each, and free them all when the sets are flattened).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace spmdsim::passes {

class ValueIdSet {
 public:
  ValueIdSet() = default;
  ValueIdSet(std::initializer_list<int32_t> ids) { *this = ids; }

  ValueIdSet& operator=(std::initializer_list<int32_t> ids) {
    Assign(ids.begin(), ids.size());
    return *this;
  }
  ValueIdSet& operator=(std::vector<int32_t>&& ids) {
    if (ids.size() > 1) {
      many_ = std::move(ids);
      size_ = many_.size();
    } else {
      Assign(ids.data(), ids.size());
    }
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int32_t operator[](size_t k) const { return begin()[k]; }
  const int32_t* begin() const { return size_ > 1 ? many_.data() : &one_; }
  const int32_t* end() const { return begin() + size_; }
  int32_t* begin() { return size_ > 1 ? many_.data() : &one_; }
  int32_t* end() { return begin() + size_; }

  // Keeps the first `count` ids (count <= size()).
  void Truncate(size_t count) {
    if (count >= size_) return;
    if (count > 1) {
      many_.resize(count);
    } else {
      one_ = count == 1 ? many_.front() : 0;
      std::vector<int32_t>().swap(many_);
    }
    size_ = count;
  }

  std::vector<int32_t> ToVector() const { return std::vector<int32_t>(begin(), end()); }

  friend bool operator==(const ValueIdSet& a, const ValueIdSet& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const std::vector<int32_t>& a, const ValueIdSet& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  void Assign(const int32_t* ids, size_t count) {
    if (count > 1) {
      many_.assign(ids, ids + count);
    } else {
      one_ = count == 1 ? ids[0] : 0;
      std::vector<int32_t>().swap(many_);
    }
    size_ = count;
  }

  size_t size_ = 0;
  int32_t one_ = 0;            // the id when size_ == 1
  std::vector<int32_t> many_;  // the ids when size_ > 1
};

}  // namespace spmdsim::passes
