// Loading a model to plan it from its weights' sizes (planning_load.h).
#include "frontend/planning_load.h"

#include <fmt/core.h>

#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "cost/cost_table.h"
#include "onnx/onnx_import.h"
#include "passes/pass.h"

namespace cleave {

namespace {

// The size below which weights are read (and kept) in every load: shapes, axes, scales.
constexpr std::size_t kReadBelow = 4096;

void say(const LoadOptions& options, const std::string& line) {
  if (options.log) options.log(line);
}

// Rounds of passes, each reading the weights the last one needed, before loading whole.
constexpr int kMaxRounds = 4;

void release_large_bytes(Graph& graph) {
  for (ValueId id : graph.initializers()) {
    auto& bytes = graph.value(id).initializer->bytes;
    if (bytes && bytes->size() >= kReadBelow) bytes.reset();
  }
}

PlanningModel loaded_whole(const std::string& path, LoadOptions options) {
  options.weights_unread = false;
  options.unread_external = nullptr;
  PlanningModel model{load_model(path, options), "", true};
  model.fingerprint = graph_fingerprint(model.graph);
  release_large_bytes(model.graph);
  return model;
}

// graph_fingerprint of the graph a whole load gives: each weight without bytes is one no pass
// changed, hashed from its file a piece at a time. Nullopt where one is not in the file.
std::optional<std::string> fingerprint_from_file(
    const Graph& graph, const std::map<std::string, ExternalWeight>& where) {
  bool unplaced = false;
  std::string fingerprint = graph_fingerprint(
      graph, [&](ValueId id, const std::function<void(const std::byte*, std::size_t)>& add) {
        const Value& value = graph.value(id);
        const auto found = where.find(value.name);
        if (found != where.end()) {
          read_external_weight_in_pieces(found->second, value.name, add);
        } else if (!value.initializer->strings && value.initializer->element_count() > 0) {
          unplaced = true;  // Bytes a pass would have made: not in the file.
        }
      });
  if (unplaced) return std::nullopt;
  return fingerprint;
}

}  // namespace

PlanningModel load_for_planning(const std::string& path, const LoadOptions& options) {
  // Imported with every large weight left in its file and where each lies recorded; the
  // passes then run as load_model runs them.
  std::map<std::string, ExternalWeight> where;
  LoadOptions import = options;
  import.optimize = false;
  import.shapes.clear();
  import.weights_unread = false;
  import.unread_external = &where;
  Graph imported = import_model(path, import);
  LoadOptions specialize = options;
  specialize.unread_external = nullptr;
  // A weight some pass needs (a Conv's folded with its BatchNormalization) is read, and the
  // passes run again, until none needs more: only those are ever in memory.
  std::set<std::string> read;
  for (int round = 0; round < kMaxRounds; ++round) {
    const std::size_t needs_before = unread_weight_needs().size();
    PlanningModel model{specialize_model(imported, specialize, path), "", false};
    std::vector<std::string> needed;
    for (std::size_t n = needs_before; n < unread_weight_needs().size(); ++n) {
      const std::string& name = unread_weight_needs()[n];
      if (where.count(name) && read.insert(name).second) needed.push_back(name);
    }
    if (needed.empty() && unread_weight_needs().size() != needs_before) break;  // Not in the file.
    if (needed.empty()) {
      if (std::optional<std::string> fingerprint = fingerprint_from_file(model.graph, where)) {
        model.fingerprint = std::move(*fingerprint);
        model.weights_read.assign(read.begin(), read.end());
        release_large_bytes(model.graph);
        say(options, fmt::format("plan: {} of {} weights read for the passes, the others left in "
                                 "the file (their sizes planned, their bytes hashed)",
                                 read.size(), where.size()));
        return model;
      }
      break;
    }
    for (const std::string& name : needed) {
      imported.value(*imported.find_value(name)).initializer->bytes =
          read_external_weight(where.at(name), name);
    }
  }
  say(options, "plan: the passes need weights' bytes beyond the file's: the model is loaded whole");
  return loaded_whole(path, options);
}

}  // namespace cleave
