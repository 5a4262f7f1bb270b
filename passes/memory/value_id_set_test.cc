// ValueIdSet behaves as the sorted std::vector<int32_t> it stands for, whichever way it holds the
// ids (in place for one, in a vector for more).
#include "passes/memory/value_id_set.h"

#include <catch2/catch.hpp>
#include <vector>

namespace spmdsim::passes {
namespace {

std::vector<int32_t> Ids(const ValueIdSet& set) { return set.ToVector(); }

TEST_CASE("a value id set holds what it is given, one id or many") {
  ValueIdSet set;
  CHECK(set.empty());
  CHECK(set.begin() == set.end());
  set = {7};
  CHECK(set.size() == 1);
  CHECK(set[0] == 7);
  CHECK(Ids(set) == std::vector<int32_t>{7});
  set = std::vector<int32_t>{1, 4, 9};
  CHECK(Ids(set) == std::vector<int32_t>{1, 4, 9});
  set = std::vector<int32_t>{3};  // back to one, in place
  CHECK(Ids(set) == std::vector<int32_t>{3});
  set = std::vector<int32_t>{};
  CHECK(set.empty());
}

TEST_CASE("value id sets compare by their ids, with each other and with vectors") {
  const ValueIdSet one = {5};
  const ValueIdSet many = {2, 5};
  CHECK(one == ValueIdSet{5});
  CHECK(one != many);
  CHECK(many == ValueIdSet{2, 5});
  CHECK(std::vector<int32_t>{2, 5} == many);
  CHECK(std::vector<int32_t>{5} != many);
  CHECK(std::vector<int32_t>{5} == one);
  CHECK(std::vector<int32_t>{} == ValueIdSet{});
  ValueIdSet copy = many;  // a copy owns its ids
  copy.begin()[0] = 3;
  CHECK(Ids(many) == std::vector<int32_t>{2, 5});
  CHECK(Ids(copy) == std::vector<int32_t>{3, 5});
}

TEST_CASE("truncating a value id set keeps its first ids") {
  ValueIdSet set = {1, 2, 3, 4};
  set.Truncate(3);
  CHECK(Ids(set) == std::vector<int32_t>{1, 2, 3});
  set.Truncate(1);  // moves the one left in place
  CHECK(Ids(set) == std::vector<int32_t>{1});
  set.Truncate(5);  // more than it holds: unchanged
  CHECK(Ids(set) == std::vector<int32_t>{1});
  set.Truncate(0);
  CHECK(set.empty());
  ValueIdSet pair = {6, 8};
  pair.Truncate(0);
  CHECK(pair.empty());
}

}  // namespace
}  // namespace spmdsim::passes
