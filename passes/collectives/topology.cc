#include "passes/collectives/topology.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "ir/json_input.h"
#include "ir/limits.h"

namespace spmdsim::passes {
namespace {

// j[key] when it is a string, `fallback` when absent; false (and `error`) when it is another type.
bool StringField(const nlohmann::json& j, const char* key, const std::string& fallback,
                 std::string& out, std::string& error, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    out = fallback;
    return true;
  }
  if (!it->is_string()) {
    error = "topology: \"" + where + key + "\" must be a string";
    return false;
  }
  out = it->get<std::string>();
  return true;
}

bool ParseLink(const nlohmann::json& j, const char* field, LinkClass& link, std::string& error) {
  if (!j.is_object()) {
    error = std::string("topology: \"") + field + "\" must be an object";
    return false;
  }
  if (!StringField(j, "name", field, link.name, error, std::string(field) + ".")) return false;
  const auto latency = j.find("latency_us");
  const auto bandwidth = j.find("bus_bandwidth_GBps");
  // Physical ranges, with room: a link's latency is under a second (10^6 us), its bus bandwidth
  // between 1 MB/s and 1 PB/s. Outside them a time would print as hundreds of digits or "inf".
  constexpr double kMostLatencyUs = 1e6;
  constexpr double kLeastBandwidthGBps = 1e-3;
  constexpr double kMostBandwidthGBps = 1e6;
  if (latency == j.end() || !latency->is_number() || !(latency->get<double>() >= 0) ||
      !(latency->get<double>() <= kMostLatencyUs)) {
    error = std::string("topology: \"") + field +
            ".latency_us\" must be a number of microseconds from 0 to 1e6 (a second)";
    return false;
  }
  if (bandwidth == j.end() || !bandwidth->is_number() ||
      !(bandwidth->get<double>() >= kLeastBandwidthGBps) ||
      !(bandwidth->get<double>() <= kMostBandwidthGBps)) {
    error = std::string("topology: \"") + field +
            ".bus_bandwidth_GBps\" must be a number of GB/s from 0.001 (1 MB/s) to 1e6 (1 PB/s)";
    return false;
  }
  link.latency_us = latency->get<double>();
  link.bus_bandwidth_GBps = bandwidth->get<double>();
  return true;
}

}  // namespace

bool HoldsDevices(const Topology& topology, int64_t devices) {
  return topology.inter_node.has_value() || devices <= topology.devices_per_node;
}

int64_t NodeCount(const Topology& topology, int64_t devices) {
  const int64_t per_node = std::max<int64_t>(1, topology.devices_per_node);
  return std::max<int64_t>(1, devices / per_node + (devices % per_node != 0 ? 1 : 0));
}

std::optional<Topology> ParseTopologyJson(std::string_view text, std::string& error) {
  std::string parse_error;
  const std::optional<nlohmann::json> parsed = ir::ParseJsonInput(text, parse_error);
  if (!parsed || !parsed->is_object()) {
    error = "topology: " + (parsed ? std::string("not a JSON object") : parse_error);
    return std::nullopt;
  }
  const nlohmann::json& j = *parsed;
  Topology topology;
  if (!StringField(j, "name", "custom", topology.name, error, "") ||
      !StringField(j, "description", "", topology.description, error, "") ||
      !StringField(j, "source", "", topology.source, error, "") ||
      !StringField(j, "platform", "", topology.platform, error, "")) {
    return std::nullopt;
  }
  const auto per_node = j.find("devices_per_node");
  if (per_node == j.end() || !per_node->is_number_integer() || per_node->get<int64_t>() < 1) {
    error = "topology: \"devices_per_node\" must be an integer >= 1";
    return std::nullopt;
  }
  topology.devices_per_node = per_node->get<int64_t>();
  const auto intra = j.find("intra_node");
  if (intra == j.end()) {
    error = "topology: missing \"intra_node\" link class";
    return std::nullopt;
  }
  if (!ParseLink(*intra, "intra_node", topology.intra_node, error)) return std::nullopt;
  const auto inter = j.find("inter_node");
  if (inter != j.end() && !inter->is_null()) {
    LinkClass link;
    if (!ParseLink(*inter, "inter_node", link, error)) return std::nullopt;
    topology.inter_node = link;
  }
  return topology;
}

}  // namespace spmdsim::passes
