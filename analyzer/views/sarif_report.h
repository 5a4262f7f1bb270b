// `spmdsim check --sarif FILE`: the check as a SARIF 2.1.0 log, for code-scanning services
// (GitHub's upload-sarif). One run; the driver lists every rule below, whatever fired, so rule ids
// and indices are the same in every log. Results: each finding of an analysed module (level
// "error" when the baseline lacks it, else "warning", or "note" for severity info), located at
// its Python source line; each regression or limit breach, located at the module's dump file.
//
//   id       name                          raised by
//   SPMD001  rng-key-residual              finding rng-key-residual
//   SPMD002  rng-depends-on-partition      finding rng-depends-on-partition
//   SPMD003  rng-replicated-collectives    finding rng-replicated-collectives
//   SPMD009  rng-other-finding             a finding of any other kind
//   SPMD101  peak-memory-regression        peak_bytes over the baseline + tolerance
//   SPMD102  temp-memory-regression        temp_bytes over the baseline + tolerance
//   SPMD103  collective-bytes-regression   wire_bytes_per_device (total or one kind) likewise
//   SPMD104  rng-memory-regression         rng_materialized_bytes likewise
//   SPMD201  peak-memory-limit             peak over --max-peak
//   SPMD202  collective-bytes-limit        collective bytes over --max-wire
// Ids are never reused or renumbered (docs/CI.md keeps the same table).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/model/check_result.h"

namespace spmdsim::analyzer {

struct SarifRule {
  std::string_view id;
  std::string_view name;
  std::string_view level;  // default level: "warning" | "error"
  std::string_view description;
};

// The rule table above, in id order.
const std::vector<SarifRule>& SarifRules();

struct SarifOptions {
  std::string tool_version;  // runs[0].tool.driver.version
  // Paths under this directory become relative URIs with uriBaseId %SRCROOT% (the repository
  // checkout, $GITHUB_WORKSPACE); other absolute paths become file:// URIs.
  std::string source_root;
};

nlohmann::ordered_json SarifLog(const CheckRun& run, const SarifOptions& options);

// A path as a URI reference: bytes outside RFC 3986's unreserved set and "/" percent-encoded;
// an absolute path gets "file://".
std::string PathToUri(std::string_view path);

}  // namespace spmdsim::analyzer
