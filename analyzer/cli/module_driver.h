// The per-module output loop every single-input command shares: one JSON document
// {"schema_version", "modules": [...]} or the modules' texts one after another.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string_view>
#include <vector>

#include "dump/module_loader.h"

namespace spmdsim::analyzer {

// Writes one module: in JSON mode `json` is the module's object (its identity already in) and
// `text` is null; in text mode `text` is the stream and `json` is null.
using ModuleWriter = std::function<void(size_t index, const dump::ModuleInput& input,
                                        nlohmann::ordered_json* json, std::ostream* text)>;

// Runs `write` on every module in order and prints the result to `out`: a blank line between
// the modules' texts, or the one JSON document after the last module. Returns kExitOk, or
// kExitUsage when `out` could not be written (a closed pipe).
int WriteEachModule(const std::vector<dump::ModuleInput>& modules, std::string_view format,
                    std::ostream& out, const ModuleWriter& write);

}  // namespace spmdsim::analyzer
