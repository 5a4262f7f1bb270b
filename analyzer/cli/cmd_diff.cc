// spmdsim diff A B [--format text|json] [--module NAME] [--top N]
//
// What changed from A to B (each a module file or a dump directory), module by module: memory
// terms, buffers live at the peak, collectives by kind, RNG sites and findings
// (analyzer/model/module_diff.h). Modules are paired by (name, stage), so a dump directory's
// before_optimizations module is compared with the other's before_optimizations module; modules
// still alone are then paired by name (a single file against a single file of another stage).
// Modules only one side has are listed. Exit 0, or 2 / 3 when an input cannot be read / parsed.
#include <iostream>
#include <memory>

#include "analyzer/cli/command.h"
#include "analyzer/model/module_match.h"
#include "analyzer/model/module_report.h"
#include "analyzer/views/diff_view.h"
#include "analyzer/views/stats_view.h"

namespace spmdsim::analyzer {
namespace {

struct DiffCommandOptions {
  std::string a;
  std::string b;
  std::string format = "text";
  std::string module_filter;
  std::string stage = "all";      // --stage, both sides
  std::string platform = "auto";  // --platform, both sides
  size_t top = 10;                // buffer groups listed per category
};

nlohmann::ordered_json SideJson(const dump::ModuleInput* input) {
  if (input == nullptr) return nullptr;
  return {{"file", input->path}, {"stage", dump::ModuleStageName(input->stage)}};
}

int RunDiff(const DiffCommandOptions& options) {
  InputOptions side;
  side.module_filter = options.module_filter;
  side.stage = options.stage;
  side.platform = options.platform;
  side.inputs = {options.a};
  LoadedOrExit a = LoadAllInputs(side);
  if (a.exit_code != kExitOk) return a.exit_code;
  side.inputs = {options.b};
  LoadedOrExit b = LoadAllInputs(side);
  if (b.exit_code != kExitOk) return b.exit_code;

  std::vector<ModuleKey> keys_a;
  std::vector<ModuleKey> keys_b;
  for (const dump::ModuleInput& m : a.modules)
    keys_a.push_back({std::string(m.module->name), std::string(dump::ModuleStageName(m.stage))});
  for (const dump::ModuleInput& m : b.modules)
    keys_b.push_back({std::string(m.module->name), std::string(dump::ModuleStageName(m.stage))});
  const std::vector<ModulePair> pairs = MatchModules(keys_a, keys_b, {true});

  const bool json = options.format == "json";
  nlohmann::ordered_json modules = nlohmann::ordered_json::array();
  DiffOptions diff_options;
  diff_options.top = options.top;
  bool first = true;
  for (const ModulePair& pair : pairs) {
    const dump::ModuleInput* ma = pair.a ? &a.modules[*pair.a] : nullptr;
    const dump::ModuleInput* mb = pair.b ? &b.modules[*pair.b] : nullptr;
    std::optional<ModuleDiff> diff;
    if (ma && mb) {
      diff = DiffModules(BuildModuleReport(*ma, {}), BuildModuleReport(*mb, {}), diff_options);
    }
    if (json) {
      nlohmann::ordered_json module;
      module["name"] = std::string((ma ? ma : mb)->module->name);
      module["a"] = SideJson(ma);
      module["b"] = SideJson(mb);
      module["diff"] = diff ? DiffToJson(*diff) : nlohmann::ordered_json();
      modules.push_back(std::move(module));
    } else {
      if (!first) std::cout << "\n";
      PrintDiffText(ma, mb, diff ? &*diff : nullptr, std::cout);
    }
    first = false;
  }
  if (json) {
    PrintModulesJson(std::move(modules), std::cout);
  }
  std::cout.flush();
  return std::cout.good() ? kExitOk : kExitUsage;
}

}  // namespace

void RegisterDiffCommand(CLI::App& app, RunFn& run) {
  auto options = std::make_shared<DiffCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "diff",
      "What changed from A to B: memory, buffers live at the peak, collectives, RNG sites and "
      "findings, module by module");
  // Not `required()`: CLI11 would say "b is required"; the callback says what diff compares.
  command->add_option("a", options->a, "The module file or dump directory before");
  command->add_option("b", options->b, "The module file or dump directory after");
  command->add_option("--format", options->format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  command->add_option("--module", options->module_filter,
                      "Only modules whose name contains this text");
  AddStageOption(*command, options->stage);
  AddPlatformOption(*command, options->platform);
  command
      ->add_option("--top", options->top,
                   "Buffer groups listed per category (appeared, disappeared, changed)")
      ->capture_default_str();
  command->callback([options, &run] {
    if (options->b.empty()) {
      run = [options] {
        std::cerr << "spmdsim diff: error: "
                  << (options->a.empty() ? "no input" : "one input (" + options->a + ")")
                  << "; diff compares two: spmdsim diff BEFORE AFTER (each a module file or a "
                     "dump directory)\n";
        return kExitUsage;
      };
      return;
    }
    run = [options] { return RunDiff(*options); };
  });
}

}  // namespace spmdsim::analyzer
