// Which values live at a peak hold random bits: every value an RNG site's buffers hold (counters
// and bits, passes/rng/rng_site_analysis.h), as "name{index}", or "name" for a whole
// instruction. Views into the RNG result, which must outlive this (no string made per value; a
// buffer may hold thousands). The HTML report marks those buffers; the baseline's peak groups
// count them as "random bits" (peak_groups.h).
#pragma once

#include <string_view>
#include <unordered_set>

#include "passes/rng/rng_site_analysis.h"

namespace spmdsim::analyzer {

class RandomBitValues {
 public:
  // `bits_only`: the sites that draw bits (SitePurpose::kBits), not key derivations.
  explicit RandomBitValues(const passes::RngSiteResult& rng, bool bits_only = false);
  // `name_and_index`: "name{index}", "{}" for a whole instruction; an entry "name" holds every
  // index of that instruction.
  bool Contains(std::string_view name_and_index) const;

 private:
  void Add(std::string_view value);
  std::unordered_set<std::string_view> indexed_;
  std::unordered_set<std::string_view> whole_;
};

}  // namespace spmdsim::analyzer
