#include "analyzer/model/random_bit_values.h"

namespace spmdsim::analyzer {

RandomBitValues::RandomBitValues(const passes::RngSiteResult& rng) {
  for (const passes::RngSite& site : rng.sites) {
    for (const passes::RngSiteBuffer& buffer : site.buffers) {
      Add(buffer.value);
      for (const std::string& value : buffer.values) Add(value);
    }
  }
}

bool RandomBitValues::Contains(std::string_view name_and_index) const {
  if (indexed_.count(name_and_index) != 0) return true;
  return name_and_index.ends_with("{}") &&
         whole_.count(name_and_index.substr(0, name_and_index.size() - 2)) != 0;
}

void RandomBitValues::Add(std::string_view value) {
  (value.ends_with('}') ? indexed_ : whole_).insert(value);
}

}  // namespace spmdsim::analyzer
