// A run's graph outputs into its --output-dir, whole or not at all, and their report entries.
#include "pipeline/run_outputs.h"

#include <fmt/core.h>

#include <filesystem>
#include <set>
#include <string>

#include "runtime/npy.h"
#include "support/error.h"

namespace cleave {

nlohmann::json write_run_outputs(const Graph& graph, const std::vector<Tensor>& outputs,
                                 AtomicFolder* folder) {
  nlohmann::json output_list = nlohmann::json::array();
  std::set<std::string> file_names;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = graph.value(graph.outputs()[i]).name;
    nlohmann::json entry = {{"name", name}, {"type", outputs[i].describe()}};
    if (folder) {
      const std::string file_name = file_name_for(name) + ".npy";
      if (!file_names.insert(file_name).second) {
        throw Error(fmt::format("{}: two graph outputs would both be written as {} (output \"{}\")",
                                folder->path(), file_name, name));
      }
      write_npy(folder->staging_path(file_name), outputs[i]);
      entry["file"] = (std::filesystem::path(folder->path()) / file_name).string();
    }
    output_list.push_back(entry);
  }
  if (folder) folder->commit();
  return output_list;
}

}  // namespace cleave
