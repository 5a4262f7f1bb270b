// The topology presets compiled into the binary (analyzer/topologies/*.json) and loading a
// topology by preset name or from a user's JSON file (format: passes/collectives/topology.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "passes/collectives/topology.h"

namespace spmdsim::analyzer {

// Preset names, sorted.
std::vector<std::string> TopologyPresetNames();

// A preset by name; nullopt when there is none of that name.
std::optional<passes::Topology> LoadTopologyPreset(const std::string& name);

// A preset by name, else a file by path. nullopt and a message listing the presets on failure.
std::optional<passes::Topology> LoadTopology(const std::string& name_or_file, std::string& error);

}  // namespace spmdsim::analyzer
