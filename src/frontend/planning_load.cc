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
#include "passes/deferred_weights.h"
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

// graph_fingerprint of the graph a whole load gives: each weight without bytes is either one
// no pass changed, hashed from its file a piece at a time, or one a pass rewrote from such
// weights (`deferred`), made from them, hashed and let go. Nullopt where one is neither.
std::optional<std::string> fingerprint_from_file(const Graph& graph, const Graph& imported,
                                                 const std::map<std::string, ExternalWeight>& where,
                                                 const DeferredWeights& deferred) {
  const FileWeightReader read = [&](const std::string& name) {
    TensorData data = *imported.value(*imported.find_value(name)).initializer;
    data.bytes = read_external_weight(where.at(name), name);
    return data;
  };
  bool unplaced = false;
  std::string fingerprint = graph_fingerprint(
      graph, [&](ValueId id, const std::function<void(const std::byte*, std::size_t)>& add) {
        const Value& value = graph.value(id);
        if (std::optional<TensorData> made = deferred.bytes_of(value.name, read)) {
          if (made->bytes) add(made->bytes->data(), made->bytes->size());
          return;
        }
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
  // A weight a pass rewrites from weights left in the file (a Conv's dead taps cut, one
  // folded with a BatchNormalization) stays sizes only: its bytes are made when hashed.
  DeferredWeights deferred;
  for (int round = 0; round < kMaxRounds; ++round) {
    deferred.clear();
    const std::size_t needs_before = unread_weight_needs().size();
    PlanningModel model{specialize_model(imported, specialize, path), "", false};
    std::vector<std::string> needed;
    for (std::size_t n = needs_before; n < unread_weight_needs().size(); ++n) {
      // A rewritten weight a later pass needs the bytes of: the pass that rewrote it makes
      // them at once from its weights read.
      const std::string& name = unread_weight_needs()[n];
      std::vector<std::string> names = deferred.file_weights_of(name);
      if (names.empty()) names = {name};
      for (const std::string& weight : names)
        if (where.count(weight) && read.insert(weight).second) needed.push_back(weight);
    }
    if (needed.empty() && unread_weight_needs().size() != needs_before) break;  // Not in the file.
    if (needed.empty()) {
      if (std::optional<std::string> fingerprint =
              fingerprint_from_file(model.graph, imported, where, deferred)) {
        model.fingerprint = std::move(*fingerprint);
        model.weights_read.assign(read.begin(), read.end());
        model.weights_rewritten_when_hashed = deferred.names();
        release_large_bytes(model.graph);
        say(options, fmt::format("plan: {} of {} weights read for the passes, the others left in "
                                 "the file (their sizes planned, their bytes hashed); {} "
                                 "rewritten weights made only to be hashed, one at a time",
                                 read.size(), where.size(), deferred.names().size()));
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
