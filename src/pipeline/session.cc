// The engine's session: one model loaded once, prepared per input shape, run many times.
#include "pipeline/session.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "ir/model_header.h"
#include "ir/text.h"
#include "support/error.h"

namespace cleave {

namespace {

std::vector<std::string> input_names(const Graph& graph) {
  std::vector<std::string> names;
  for (ValueId id : graph.inputs()) {
    if (!graph.value(id).initializer) names.push_back(graph.value(id).name);
  }
  return names;
}

bool every_input_static(const Graph& graph) {
  for (ValueId id : graph.inputs()) {
    const Value& v = graph.value(id);
    if (!v.initializer && !v.shape.is_static()) return false;
  }
  return true;
}

// What a model that is never specialised again still answers for: its inputs and outputs,
// names, shapes and types, and what the file says about itself, without its nodes or the
// weights' bytes. The imported nodes were a second copy of the graph beside the executor's
// (ssdlite320_mobilenet_v3_large: 3,440 of them) for the whole run.
Graph skeleton_of(const Graph& model) {
  Graph skeleton = empty_graph_like(model);
  const auto copy = [&](ValueId id) {
    const Value& v = model.value(id);
    if (auto known = skeleton.find_value(v.name)) return *known;
    ValueId fresh = kNoValue;
    if (v.initializer) {
      TensorData sizes = *v.initializer;
      sizes.bytes.reset();
      sizes.strings.reset();
      fresh = skeleton.add_initializer(v.name, std::move(sizes));
    } else {
      fresh = skeleton.add_value(v.name, v.dtype, v.shape);
    }
    Value& kept = skeleton.value(fresh);
    kept.dtype = v.dtype;
    kept.shape = v.shape;
    kept.is_graph_input = v.is_graph_input;
    kept.opaque_type = v.opaque_type;
    return fresh;
  };
  std::vector<ValueId> inputs;
  for (ValueId id : model.inputs()) inputs.push_back(copy(id));
  skeleton.set_inputs(std::move(inputs));
  for (ValueId id : model.outputs()) skeleton.mark_output(copy(id));
  return skeleton;
}

}  // namespace

std::string describe_shapes(const InputShapes& shapes) {
  std::vector<std::string> parts;
  for (const auto& [name, dims] : shapes)
    parts.push_back(fmt::format("{}=[{}]", name, fmt::join(dims, ",")));
  return parts.empty() ? "the model's own shapes" : fmt::format("{}", fmt::join(parts, " "));
}

Session::Session(const std::string& path, SessionOptions options)
    : origin_(path), options_(std::move(options)) {
  model_ = import_model(path, options_.load);
  fix_load_shapes();
}

Session::Session(FromGraph, Graph model, std::string origin, SessionOptions options)
    : origin_(std::move(origin)), options_(std::move(options)), model_(std::move(model)) {
  fix_load_shapes();
}

std::unique_ptr<Session> Session::from_bytes(std::string_view bytes, const std::string& origin,
                                             SessionOptions options) {
  Graph model = import_model_bytes(bytes, origin, options.load);
  return std::unique_ptr<Session>(
      new Session(FromGraph{}, std::move(model), origin, std::move(options)));
}

// Dims fixed for every run are fixed once, so that each shape's specialisation starts there.
void Session::fix_load_shapes() {
  if (!options_.load.shapes.empty()) {
    set_input_shapes(model_, options_.load.shapes, origin_);
    infer_shapes(model_, origin_);
    if (options_.load.log) {
      options_.load.log(fmt::format("shapes: fixed {} input(s) and re-inferred shapes",
                                    options_.load.shapes.size()));
    }
    options_.load.shapes.clear();
  }
  every_input_static_ = every_input_static(model_);
}

InputShapes Session::shapes_of(const SampleInputs& inputs) const {
  InputShapes shapes;
  for (const auto& [name, tensor] : inputs) {
    std::optional<ValueId> id = model_.find_value(name);
    if (!id || !model_.value(*id).is_graph_input || model_.value(*id).initializer) {
      throw Error(fmt::format("{}: no input is named '{}'; inputs are: {}", origin_, name,
                              fmt::join(input_names(model_), ", ")));
    }
    const Value& v = model_.value(*id);
    if (v.shape.is_static()) continue;  // The executor checks it against the model's dims.
    const std::vector<int64_t>& dims = tensor.shape();
    if (v.shape.rank_known && v.shape.rank() != dims.size()) {
      throw Error(fmt::format("{}: input '{}' has rank {} ({}), the value given has {} dims",
                              origin_, name, v.shape.rank(), print_type(v.dtype, v.shape),
                              dims.size()));
    }
    for (std::size_t axis = 0; v.shape.rank_known && axis < dims.size(); ++axis) {
      const Dim& dim = v.shape.dims[axis];
      if (dim.is_known() && dim.size != dims[axis]) {
        throw Error(
            fmt::format("{}: input '{}' dim {} is fixed to {} by the model, the value "
                        "given has {} ([{}])",
                        origin_, name, axis, dim.size, dims[axis], fmt::join(dims, ",")));
      }
    }
    shapes.emplace_back(name, dims);
  }
  return shapes;
}

std::shared_ptr<PreparedShape> Session::prepare(const InputShapes& shapes) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = prepared_.begin(); it != prepared_.end(); ++it) {
    if ((*it)->shapes != shapes) continue;
    prepared_.splice(prepared_.begin(), prepared_, it);
    return prepared_.front();
  }
  const auto start = std::chrono::steady_clock::now();
  auto entry = std::make_shared<PreparedShape>();
  entry->shapes = shapes;
  LoadOptions load = options_.load;
  load.shapes = shapes;
  load.require_static_inputs = true;
  load.unread_external = nullptr;
  RunRecipe recipe = options_.recipe;
  // Read only under the lock held here, and replaced by its skeleton right after: its bytes
  // may go while the layouts are measured.
  if (every_input_static_) recipe.idle_weight_copies = 1;
  entry->run = prepare_run(specialize_model(model_, load, origin_), recipe);
  // A model with one possible shape is never specialised again: the executor's copy of the
  // weights is then the only one, and the memory of the ones it packs comes back.
  if (every_input_static_) model_ = skeleton_of(model_);
  entry->prepare_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  events_.push_back({fmt::format("prepared {}", describe_shapes(shapes)), entry->prepare_seconds});
  prepared_.push_front(entry);
  while (prepared_.size() > std::max<std::size_t>(options_.max_prepared_shapes, 1)) {
    prepared_.pop_back();  // A run still holding it keeps it alive until it ends.
  }
  return entry;
}

std::vector<Tensor> Session::run(const SampleInputs& inputs) {
  std::shared_ptr<PreparedShape> shape = prepare(shapes_of(inputs));
  std::lock_guard<std::mutex> lock(shape->mutex);
  try {
    return shape->run.executor->run(inputs);
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(fmt::format("{}: {}", origin_, e.what()));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", origin_, e.what()));
  }
}

std::vector<SessionEvent> Session::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

std::size_t Session::prepared_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return prepared_.size();
}

}  // namespace cleave
