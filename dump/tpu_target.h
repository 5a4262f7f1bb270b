// The TPU generation an XLA:TPU compile was made for, from the target arguments libtpu writes into
// a --xla_dump_to directory beside the module before optimizations
// ("module_NNNN.name.cl_N.target_arguments.txt", a text proto):
//
//   tpu_topology_args {
//     version: TPU_VERSION_VIPERFISH      the chip family (libtpu's codename)
//     variant: "lite"                     the cost-reduced part of it, when it is one
//     ...
//
// Read from deviceless compiles for each generation (libtpu 0.0.50.1; testdata/tpu_target/):
// VIPERFISH is TPU v5p and, with variant "lite", v5e; GHOSTLITE is v6e. Anything else (v4 and
// older, generations after v6e) is left unnamed rather than guessed.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace spmdsim::dump {

// "v5e", "v5p" or "v6e" from the file's text; nullopt when it names none of them.
std::optional<std::string> TpuGenerationFromTargetArguments(std::string_view text);

// The same, reading `path` (nullopt when it cannot be read).
std::optional<std::string> ReadTpuGeneration(const std::string& path);

}  // namespace spmdsim::dump
