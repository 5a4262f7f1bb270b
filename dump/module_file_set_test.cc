// Which files are paired with a module file (dump/module_file_set.h): on folders of names made
// here, and on real folders of testdata/dumps, where the directory loader and the loader of a
// single file must pair the same files.
#include "dump/module_file_set.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "dump/module_loader.h"

namespace spmdsim::dump {
namespace {

constexpr const char* kAfter = "module_0000.jit_f.cpu_after_optimizations.txt.gz";
constexpr const char* kBefore = "module_0000.jit_f.before_optimizations.txt.gz";

TEST_CASE("module file set: XLA's companions of an optimized module, plain or gzipped") {
  const DumpFolder folder(
      "d", {kAfter, kBefore, "module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt",
            "module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt.gz",
            "module_0000.jit_f.cpu_after_optimizations-live-range.txt.gz",
            "module_0000.jit_f.cpu_after_optimizations-memory-usage-report",
            "module_0001.jit_g.cpu_after_optimizations-live-range.txt", "memory_analysis.json",
            "cost_analysis.json"});
  const ModuleFileSet files = folder.FilesOf(kAfter);
  CHECK(files.module == "d/" + std::string(kAfter));
  // The first by name when both forms are there.
  CHECK(files.buffer_assignment ==
        "d/module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt");
  CHECK(files.live_range == "d/module_0000.jit_f.cpu_after_optimizations-live-range.txt.gz");
  CHECK(files.memory_usage_report ==
        "d/module_0000.jit_f.cpu_after_optimizations-memory-usage-report");
  // The folder's one optimized module.
  CHECK(files.memory_analysis == "d/memory_analysis.json");
  CHECK(files.after_optimizations.empty());

  // The module before optimizations has no companions of its own, and the optimized one beside it.
  const ModuleFileSet before = folder.FilesOf(kBefore);
  CHECK(before.buffer_assignment.empty());
  CHECK(before.memory_analysis.empty());
  CHECK(before.after_optimizations == std::vector<std::string>{"d/" + std::string(kAfter)});
}

TEST_CASE("module file set: an optimized module's source before optimizations, by name") {
  // XLA:TPU numbers the optimized module after the compiles in between; another function's
  // module and a later compile of the same name are not its source.
  const DumpFolder folder("d", {"module_0000.jit_f.cl_1.before_optimizations.txt.gz",
                                "module_0001.jit_g.cl_1.before_optimizations.txt.gz",
                                "module_0003.jit_f.cl_1.after_optimizations.txt.gz",
                                "module_0005.jit_f.cl_1.before_optimizations.txt.gz",
                                "module_0007.jit_f.cl_1.after_optimizations.txt.gz",
                                "module_0009.jit_h.gpu_after_optimizations.txt"});
  CHECK(folder.FilesOf("module_0003.jit_f.cl_1.after_optimizations.txt.gz").before_optimizations ==
        "d/module_0000.jit_f.cl_1.before_optimizations.txt.gz");
  CHECK(folder.FilesOf("module_0007.jit_f.cl_1.after_optimizations.txt.gz").before_optimizations ==
        "d/module_0005.jit_f.cl_1.before_optimizations.txt.gz");
  CHECK(
      folder.FilesOf("module_0009.jit_h.gpu_after_optimizations.txt").before_optimizations.empty());
  CHECK(folder.FilesOf("module_0000.jit_f.cl_1.before_optimizations.txt.gz")
            .before_optimizations.empty());
}

TEST_CASE("module file set: memory_analysis.json by function, or of the only optimized module") {
  const std::vector<std::string> names = {
      "module_0004.jit_init.cpu_after_optimizations.txt.gz",
      "module_0006.jit_step.cpu_after_optimizations.txt.gz",
      "module_0006.jit_step.before_optimizations.txt.gz",
      "jit_step.memory_analysis.json",
      "memory_analysis.json",
  };
  const DumpFolder folder("", names);
  CHECK(folder.FilesOf(names[1]).memory_analysis == "jit_step.memory_analysis.json");
  // Two optimized modules: the folder's memory_analysis.json could be either's.
  CHECK(folder.FilesOf(names[0]).memory_analysis.empty());
  CHECK(folder.FilesOf(names[2]).memory_analysis.empty());
  CHECK(folder.FilesOf(names[2]).after_optimizations == std::vector<std::string>{names[1]});

  // One optimized module in two forms is still one module.
  const DumpFolder one(
      "", {"module_0001.jit_h.cpu_after_optimizations.txt",
           "module_0001.jit_h.cpu_after_optimizations.txt.gz", "memory_analysis.json"});
  CHECK(one.FilesOf("module_0001.jit_h.cpu_after_optimizations.txt").memory_analysis ==
        "memory_analysis.json");
}

TEST_CASE("module file set: what is not a file on disk has none") {
  const ModuleFileSet files = FindModuleFiles("<stdin>");
  CHECK(files.module == "<stdin>");
  CHECK(files.buffer_assignment.empty());
  CHECK(files.after_optimizations.empty());
}

// A single module file is paired with what the directory loader pairs it with.
TEST_CASE("module file set: a file alone and its whole folder pair the same files") {
  for (const char* dir : {"dp8_partitionable_remat", "jax012_cpu8_flax_process_init_train_eval"}) {
    INFO(dir);
    const std::string folder = std::string(SPMDSIM_TESTDATA_DIR) + "/dumps/" + dir;
    LoadOptions stage;
    stage.stage = "after_optimizations";
    const LoadOutcome all = LoadInputs(folder, stage);
    REQUIRE_FALSE(all.failure);
    REQUIRE_FALSE(all.inputs.modules.empty());
    for (const ModuleInput& input : all.inputs.modules) {
      INFO(input.path);
      const ModuleFileSet alone = FindModuleFiles(input.path);
      CHECK(alone.buffer_assignment == input.files.buffer_assignment);
      CHECK(alone.memory_usage_report == input.files.memory_usage_report);
      CHECK(alone.live_range == input.files.live_range);
      CHECK(alone.memory_analysis == input.files.memory_analysis);
      CHECK_FALSE(input.files.buffer_assignment.empty());
      CHECK_FALSE(input.files.live_range.empty());
      CHECK_FALSE(input.files.memory_analysis.empty());
    }
  }
}

}  // namespace
}  // namespace spmdsim::dump

TEST_CASE("module file set: the stage is the end of the file's stem, as XLA names its dumps") {
  using spmdsim::dump::ModuleStage;
  using spmdsim::dump::StageFromFileName;
  CHECK(StageFromFileName("module_0001.jit_f.sm_9.0a_gpu_after_optimizations.txt") ==
        ModuleStage::kAfterOptimizations);
  CHECK(StageFromFileName("module_0000.jit_f.cpu_after_optimizations.txt.gz") ==
        ModuleStage::kAfterOptimizations);
  CHECK(StageFromFileName("module_0003.jit_f.cl_1004524046.after_optimizations.txt") ==
        ModuleStage::kAfterOptimizations);
  CHECK(StageFromFileName("module_0000.jit_f.before_optimizations.txt") ==
        ModuleStage::kBeforeOptimizations);
  CHECK(StageFromFileName("step.after_optimizations.hlo") == ModuleStage::kAfterOptimizations);
  // XLA:TPU's snapshots around buffer assignment are not the module as compiled.
  CHECK(StageFromFileName(
            "module_0003.jit_f.cl_1004524046.after_optimizations_after_buffer_assignment.txt") ==
        ModuleStage::kUnknown);
  CHECK(StageFromFileName(
            "module_0003.jit_f.cl_1004524046.after_optimizations_before_buffer_assignment.txt") ==
        ModuleStage::kUnknown);
  CHECK(StageFromFileName("module_0001.jit_f.after_spmd_partitioner.txt") == ModuleStage::kUnknown);
  CHECK(StageFromFileName("compiled_as_text.txt.gz") == ModuleStage::kUnknown);
}

TEST_CASE("module file set: XLA:TPU's target arguments, written with the module's source") {
  const spmdsim::dump::DumpFolder folder("d", {"module_0000.jit_f.cl_1.before_optimizations.txt",
                                               "module_0000.jit_f.cl_1.target_arguments.txt",
                                               "module_0003.jit_f.cl_1.after_optimizations.txt",
                                               "module_0004.jit_g.cl_1.target_arguments.txt",
                                               "module_0007.jit_f.cl_1.target_arguments.txt"});
  const spmdsim::dump::ModuleFileSet files =
      folder.FilesOf("module_0003.jit_f.cl_1.after_optimizations.txt");
  // The nearest at or below the optimized module's number, of the same module name.
  CHECK(files.target_arguments ==
        (std::filesystem::path("d") / "module_0000.jit_f.cl_1.target_arguments.txt").string());
  CHECK(folder.FilesOf("module_0000.jit_f.cl_1.before_optimizations.txt").target_arguments.empty());
}
