// The corpus' twins: programs of the manifest (testdata/manifest.json) that differ only in how
// their random bits are made, or only in whether the step is rematerialized. The what-if tests
// predict one twin from the other's dump and compare with XLA's compile of it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace spmdsim::testing {

// "partitionable", "replicated", or the rbg flavour: what the program's random bits are made by.
inline std::string ModeOf(const nlohmann::json& program) {
  const std::string impl = program.value("prng_impl", "threefry2x32");
  if (impl != "threefry2x32") return impl;
  return program.value("threefry_partitionable", false) ? "partitionable" : "replicated";
}

// Everything that makes the program what it is, except the way it makes random bits (and, with
// `without_remat`, whether and how it rematerializes).
inline nlohmann::json IdentityOf(const nlohmann::json& program, bool without_remat = false) {
  nlohmann::json identity = program;
  for (const char* field : {"name", "dir", "description", "files", "memory_analysis", "modules",
                            "random_draws", "threefry_partitionable", "prng_impl"}) {
    identity.erase(field);
  }
  if (without_remat) {
    identity.erase("remat");
    identity.erase("remat_policy");
  }
  return identity;
}

// The what-if (RngWhatIf field) that predicts `to` from a program of mode `from`, or "" where
// the corpus pairs no prediction (rbg is predicted from partitionable threefry, as its key is).
inline std::string PredictedMode(const std::string& from, const std::string& to) {
  if (from == "partitionable" && to == "replicated") return "replicated";
  if (from == "replicated" && to == "partitionable") return "partitionable";
  if (from == "partitionable" && (to == "rbg" || to == "unsafe_rbg")) return "rbg";
  return "";
}

// The files of the program's training step (a program of several modules names each).
inline const nlohmann::json& TrainStepFiles(const nlohmann::json& program) {
  if (program.contains("modules")) {
    for (const nlohmann::json& module : program.at("modules")) {
      if (module.value("jit_name", "") == "jit_train_step") return module.at("files");
    }
  }
  return program.at("files");
}

}  // namespace spmdsim::testing
