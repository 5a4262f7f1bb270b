// The machine a partitioned program runs on, as data: how many devices share a node and, for each
// link class (inside a node, between nodes), its latency and bandwidth. Presets live as JSON files
// in analyzer/topologies/; docs/COLLECTIVES.md explains the numbers.
//
//   {"name": "h100-8x-nvswitch", "description": "...", "platform": "gpu", "devices_per_node": 8,
//    "intra_node": {"name": "NVLink4/NVSwitch", "latency_us": 8, "bus_bandwidth_GBps": 360},
//    "inter_node": {"name": "...", "latency_us": 15, "bus_bandwidth_GBps": 45},
//    "source": "..."}
//
// Bandwidths are NCCL-style *bus* bandwidths per device (GB/s = 1e9 bytes/s): the rate at which
// one device's wire bytes (REFERENCE §5) move, so that time = latency * steps + bytes / bandwidth
// and users can compare the figure with nccl-tests' busbw column. Device d sits on node
// d / devices_per_node. Without an inter_node class the topology is one node (a TPU slice is one
// ICI domain): it holds at most devices_per_node devices. "platform" ("gpu", "tpu"; optional)
// says which modules the topology is for, so the tool can list the presets that fit one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spmdsim::passes {

struct LinkClass {
  std::string name;
  double latency_us = 0;          // per algorithm step
  double bus_bandwidth_GBps = 0;  // per device, > 0
};

struct Topology {
  std::string name;
  std::string description;
  std::string source;    // where the figures come from
  std::string platform;  // "gpu", "tpu" or empty (any)
  int64_t devices_per_node = 8;
  LinkClass intra_node;
  std::optional<LinkClass> inter_node;  // absent: a single node (or a flat fabric)
};

// Whether every one of `devices` devices has a place: an inter-node link class joins any number
// of nodes, else the one node must hold them all.
bool HoldsDevices(const Topology& topology, int64_t devices);

// Nodes that `devices` devices fill: ceil(devices / devices_per_node), at least 1.
int64_t NodeCount(const Topology& topology, int64_t devices);

// Parses a topology JSON document. nullopt and a message naming the bad field on failure.
std::optional<Topology> ParseTopologyJson(std::string_view text, std::string& error);

}  // namespace spmdsim::passes
