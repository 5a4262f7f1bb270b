#include "analyzer/model/random_bit_values.h"

namespace spmdsim::analyzer {

RandomBitValues::RandomBitValues(const passes::RngSiteResult& rng, bool bits_only) {
  for (const passes::RngSite& site : rng.sites) {
    if (bits_only && site.purpose != passes::SitePurpose::kBits) continue;
    for (const passes::RngSiteBuffer& buffer : site.buffers) {
      Add(buffer.value);
      for (const std::string& value : buffer.values) Add(value);
    }
  }
}

bool RandomBitValues::Contains(std::string_view name_and_index) const {
  if (indexed_.count(name_and_index) != 0) return true;
  // A whole instruction's entry holds each of its values, every index.
  return whole_.count(name_and_index.substr(0, name_and_index.find('{'))) != 0;
}

void RandomBitValues::Add(std::string_view value) {
  (value.ends_with('}') ? indexed_ : whole_).insert(value);
}

}  // namespace spmdsim::analyzer
