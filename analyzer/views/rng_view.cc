#include "analyzer/views/rng_view.h"

#include "analyzer/views/stats_view.h"

namespace spmdsim::analyzer {
namespace {

void WriteKey(passes::Pair32 key, std::ostream& out) {
  out << "[" << key.w0 << "," << key.w1 << "]";
}

}  // namespace

void PrintRngText(const RngReport& report, std::ostream& out) {
  if (report.command == "bits") {
    for (const uint64_t value : report.values) out << value << "\n";
    return;
  }
  for (const passes::Pair32 key : report.keys) out << key.w0 << " " << key.w1 << "\n";
}

void PrintRngJson(const RngReport& report, std::ostream& out) {
  out << "{\"schema_version\":" << kSchemaVersion << ",\"command\":\"" << report.command
      << "\",\"mode\":\"" << passes::RngModeName(report.mode) << "\",\"key\":";
  WriteKey(report.key, out);
  if (report.command == "bits") {
    out << ",\"shape\":[";
    for (size_t i = 0; i < report.shape.size(); ++i) out << (i ? "," : "") << report.shape[i];
    out << "],\"bit_width\":" << report.bit_width << ",\"values\":[";
    for (size_t i = 0; i < report.values.size(); ++i) out << (i ? "," : "") << report.values[i];
    out << "]}\n";
    return;
  }
  if (report.command == "split") out << ",\"num\":" << report.num;
  if (report.command == "fold_in") out << ",\"data\":" << report.data;
  out << ",\"keys\":[";
  for (size_t i = 0; i < report.keys.size(); ++i) {
    if (i) out << ",";
    WriteKey(report.keys[i], out);
  }
  out << "]}\n";
}

}  // namespace spmdsim::analyzer
