// Whether a module's peak fits its device (analyzer/model/device_memory.h), rendered: the line
// analyze, report, check and oom print first for each module, and the `fit` object of their JSON
// (docs/JSON_SCHEMA.md).
//
// Sample (testdata/dumps/jax012_gpu8_seed_plain_dp_partitionable_remat):
//   jit_train_step: peak 92.01 GiB per device does not fit an H100 80GB: over by 32.27 GiB
//     (XLA gets 59.74 GiB = 75% of 79.65 GiB, JAX's default XLA_PYTHON_CLIENT_MEM_FRACTION=.75;
//     device: the dump's sm_9.0a: H100 80GB assumed; --device h200 share it)
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/model/device_memory.h"
#include "analyzer/model/fit_fixes.h"
#include "dump/module_loader.h"

namespace spmdsim::analyzer {

// One line (no newline): "NAME: peak P per device fits|does not fit DEVICE: ..." or, without a
// device, "NAME: peak P per device; no verdict: <why>".
std::string FitVerdictLine(std::string_view module_name, const FitVerdict& verdict);

// The line below it: how the device and its usable memory were decided ("" without a device).
std::string FitBasisLine(const FitVerdict& verdict);

// Both lines, the first as the module's first line of text (analyze, check, oom).
void PrintFitText(const dump::ModuleInput& input, const FitVerdict& verdict, std::ostream& out);

nlohmann::ordered_json FitToJson(const FitVerdict& verdict);

// "1. <action>: peak P (fits, S to spare | over by O); cost; basis", one line per fix, ranked;
// `limit` lines at most (0: all).
// Where none fits, a line on what the peak is made of (the random bits' share of it).
void PrintFixesText(const FitFixes& fixes, std::ostream& out, size_t limit = 0);

// Adds `fixes` (the ranked list) and `random_bits_at_peak_bytes` to a `fit` object.
void AddFixesJson(const FitFixes& fixes, nlohmann::ordered_json& fit);

}  // namespace spmdsim::analyzer
