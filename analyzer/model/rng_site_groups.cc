#include "analyzer/model/rng_site_groups.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

namespace spmdsim::analyzer {
namespace {

// The op_name with each run of digits taken out: the text between them and the numbers.
struct Pattern {
  std::vector<std::string> text;  // one more than numbers
  std::vector<long long> numbers;
};

Pattern Split(const std::string& op_name) {
  Pattern p;
  p.text.emplace_back();
  for (size_t i = 0; i < op_name.size();) {
    if (std::isdigit(static_cast<unsigned char>(op_name[i])) == 0) {
      p.text.back() += op_name[i++];
      continue;
    }
    size_t end = i;
    while (end < op_name.size() && std::isdigit(static_cast<unsigned char>(op_name[end])) != 0) {
      ++end;
    }
    // Numbers too long for 18 digits stay text (they cannot be an index).
    if (end - i > 18) {
      p.text.back() += op_name.substr(i, end - i);
    } else {
      p.numbers.push_back(std::stoll(op_name.substr(i, end - i)));
      p.text.emplace_back();
    }
    i = end;
  }
  return p;
}

std::string ShapeKey(const passes::RngSite& site) {
  std::string out = site.dtype;
  for (int64_t d : site.shape) out += "," + std::to_string(d);
  return out;
}

}  // namespace

std::string NumberRanges(std::vector<long long> numbers) {
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  std::string out;
  for (size_t i = 0; i < numbers.size();) {
    size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(numbers[i]);
    if (j > i) out += "-" + std::to_string(numbers[j]);
    i = j + 1;
  }
  return out;
}

std::vector<RngSiteGroup> GroupRngSites(const passes::RngSiteResult& result) {
  using Key = std::tuple<std::vector<std::string>, int, int, int, std::string>;
  std::map<Key, size_t> index;
  std::vector<RngSiteGroup> groups;
  std::vector<std::vector<std::vector<long long>>> numbers;  // group -> slot -> values
  std::vector<std::vector<std::string>> texts;
  for (const passes::RngSite& site : result.sites) {
    if (site.purpose != passes::SitePurpose::kBits) continue;
    Pattern p = Split(site.op_name);
    const Key key{p.text, static_cast<int>(site.kind), static_cast<int>(site.mode),
                  static_cast<int>(site.phase), ShapeKey(site)};
    const auto [it, inserted] = index.emplace(key, groups.size());
    if (inserted) {
      groups.emplace_back();
      numbers.emplace_back(p.numbers.size());
      texts.push_back(p.text);
    }
    const size_t g = it->second;
    groups[g].sites.push_back(&site);
    for (size_t k = 0; k < p.numbers.size(); ++k) numbers[g][k].push_back(p.numbers[k]);
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    std::string name = texts[g][0];
    for (size_t k = 0; k < numbers[g].size(); ++k) {
      name += NumberRanges(numbers[g][k]) + texts[g][k + 1];
    }
    groups[g].name = std::move(name);
  }
  return groups;
}

}  // namespace spmdsim::analyzer
