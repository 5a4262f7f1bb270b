#include "analyzer/cli/module_driver.h"

#include <utility>

#include "analyzer/cli/command.h"
#include "analyzer/views/stats_view.h"

namespace spmdsim::analyzer {

int WriteEachModule(const std::vector<dump::ModuleInput>& modules, std::string_view format,
                    std::ostream& out, const ModuleWriter& write) {
  const bool json = format == "json";
  nlohmann::ordered_json documents = nlohmann::ordered_json::array();
  for (size_t i = 0; i < modules.size(); ++i) {
    if (json) {
      nlohmann::ordered_json module = ModuleIdentityJson(modules[i]);
      write(i, modules[i], &module, nullptr);
      documents.push_back(std::move(module));
    } else {
      if (i > 0) out << "\n";
      write(i, modules[i], nullptr, &out);
    }
  }
  if (json) PrintModulesJson(std::move(documents), out);
  out.flush();
  return out.good() ? kExitOk : kExitUsage;
}

}  // namespace spmdsim::analyzer
