#include "passes/rng/rng_site_kinds.h"

namespace spmdsim::passes {

bool IsThreefry(SiteKind kind) {
  return kind == SiteKind::kThreefryRolled || kind == SiteKind::kThreefryExpanded ||
         kind == SiteKind::kThreefryCustomCall;
}

std::string_view SiteKindName(SiteKind kind) {
  switch (kind) {
    case SiteKind::kThreefryRolled:
      return "threefry-rolled";
    case SiteKind::kThreefryExpanded:
      return "threefry-expanded";
    case SiteKind::kThreefryCustomCall:
      return "threefry-custom-call";
    case SiteKind::kRngBitGenerator:
      return "rng-bit-generator";
    case SiteKind::kRng:
      break;
  }
  return "rng";
}

std::string_view SiteModeName(SiteMode mode) {
  switch (mode) {
    case SiteMode::kReplicated:
      return "replicated";
    case SiteMode::kPartitionable:
      return "partitionable";
    case SiteMode::kRbg:
      return "rbg";
    case SiteMode::kUnknown:
      break;
  }
  return "unknown";
}

std::string_view SitePurposeName(SitePurpose purpose) {
  switch (purpose) {
    case SitePurpose::kBits:
      return "bits";
    case SitePurpose::kSplit:
      return "split";
    case SitePurpose::kFoldIn:
      return "fold_in";
    case SitePurpose::kKey:
      break;
  }
  return "key";
}

std::string_view SitePhaseName(SitePhase phase) {
  switch (phase) {
    case SitePhase::kForward:
      return "forward";
    case SitePhase::kBackward:
      return "backward";
    case SitePhase::kOther:
      break;
  }
  return "other";
}

bool IsKeyDerivationOpName(std::string_view op_name) {
  return op_name.find("threefry_split") != std::string_view::npos ||
         op_name.find("threefry_fold_in") != std::string_view::npos;
}

bool IsCounterRole(SiteBufferRole role) {
  switch (role) {
    case SiteBufferRole::kCounters:
    case SiteBufferRole::kLoopStateCounters:
    case SiteBufferRole::kLoopTemporaries:
    case SiteBufferRole::kExchangedCounters:
      return true;
    default:
      return false;
  }
}

std::string_view SiteBufferRoleName(SiteBufferRole role) {
  switch (role) {
    case SiteBufferRole::kCounters:
      return "counters";
    case SiteBufferRole::kLoopStateCounters:
      return "counters (loop state: then hash outputs)";
    case SiteBufferRole::kLoopTemporaries:
      return "loop temporaries (hash state copies)";
    case SiteBufferRole::kExchangedCounters:
      return "exchanged counters";
    case SiteBufferRole::kAllGatheredHashOutputs:
      return "all-gathered hash outputs";
    case SiteBufferRole::kConcatenatedBits:
      return "bits (concatenated hash outputs)";
    case SiteBufferRole::kHashOutputsOrBits:
      return "hash outputs / bits";
    case SiteBufferRole::kMask:
      return "mask";
    case SiteBufferRole::kDerived:
      break;
  }
  return "derived";
}

}  // namespace spmdsim::passes
