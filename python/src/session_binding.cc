// The compiled half of cleave.InferenceSession: a pipeline Session run from NumPy arrays.
#include "session_binding.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "numpy_tensor.h"
#include "onnx/onnx_export.h"
#include "pipeline/session.h"
#include "pipeline/session_profile.h"
#include "support/error.h"

namespace cleave::python {

namespace {

// What the Python side decided from ONNX Runtime's SessionOptions and cleave's own settings.
struct CoreOptions {
  std::string strategy;   // "" (sequential), "auto" or any model strategy.
  std::string plan_file;  // A plan from cleave.plan / `cleave plan`, instead of a strategy.
  int threads = 1;
  int workers = 2;
  int threads_per_worker = 1;
  bool optimize = true;
  std::string costs = "profile";
  bool auto_check = true;
  bool verbose = false;
  std::size_t max_prepared_shapes = 8;
  bool profile = false;
  std::string optimized_model_path;
  std::map<std::string, std::vector<int64_t>> shapes;
};

std::function<void(const std::string&)> stderr_log(bool verbose) {
  if (!verbose) return {};
  return [](const std::string& line) { fmt::print(stderr, "cleave: {}\n", line); };
}

SessionOptions session_options(const CoreOptions& core) {
  SessionOptions options;
  options.load.optimize = core.optimize;
  options.load.log = stderr_log(core.verbose);
  for (const auto& [name, dims] : core.shapes) options.load.shapes.emplace_back(name, dims);
  RunRecipe& recipe = options.recipe;
  recipe.strategy = core.plan_file.empty() ? core.strategy : "";
  recipe.plan_file = core.plan_file;
  recipe.threads = core.threads;
  recipe.workers = core.workers;
  recipe.threads_per_worker = core.threads_per_worker;
  recipe.costs = core.costs;
  recipe.auto_check = core.auto_check;
  recipe.log = options.load.log;
  options.max_prepared_shapes = core.max_prepared_shapes;
  return options;
}

// A dim as ONNX Runtime's NodeArg.shape gives it: its size, its symbol, or None.
py::object dim_object(const Dim& dim) {
  if (dim.is_known()) return py::int_(dim.size);
  if (!dim.symbol.empty()) return py::str(dim.symbol);
  return py::none();
}

py::tuple node_arg(const Value& value) {
  py::list shape;
  for (const Dim& dim : value.shape.dims) shape.append(dim_object(dim));
  return py::make_tuple(value.name, shape, ort_type_name(value.dtype));
}

class CoreSession {
 public:
  CoreSession(const py::object& model, const CoreOptions& core) {
    SessionOptions options = session_options(core);
    if (core.profile) profiler_ = std::make_shared<SessionProfiler>();
    if (py::isinstance<py::bytes>(model)) {
      const std::string bytes = model.cast<std::string>();
      py::gil_scoped_release release;
      session_ = Session::from_bytes(bytes, "<model bytes>", std::move(options));
    } else {
      const std::string path = model.cast<std::string>();
      py::gil_scoped_release release;
      session_ = std::make_unique<Session>(path, std::move(options));
    }
    if (!core.optimized_model_path.empty()) write_optimized(core);
  }

  py::list inputs() const {
    py::list list;
    const Graph& model = session_->model();
    for (ValueId id : model.inputs()) {
      if (!model.value(id).initializer) list.append(node_arg(model.value(id)));
    }
    return list;
  }

  py::list outputs() const {
    py::list list;
    for (ValueId id : session_->model().outputs())
      list.append(node_arg(session_->model().value(id)));
    return list;
  }

  // Initializers that are also graph inputs (ONNX Runtime's overridable initializers).
  py::list overridable_initializers() const {
    py::list list;
    const Graph& model = session_->model();
    for (ValueId id : model.inputs()) {
      if (model.value(id).initializer) list.append(node_arg(model.value(id)));
    }
    return list;
  }

  py::dict metadata() const {
    const Graph& model = session_->model();
    py::dict meta;
    meta["producer_name"] = model.producer_name;
    meta["graph_name"] = model.name;
    meta["description"] = model.doc_string;
    meta["ir_version"] = model.ir_version;
    meta["domain"] = model.metadata.domain;
    meta["version"] = model.metadata.version;
    meta["model_description"] = model.metadata.description;
    meta["custom_metadata_map"] = model.metadata.properties;
    return meta;
  }

  py::list run(const py::object& output_names, const py::dict& feed) {
    const Graph& model = session_->model();
    std::vector<std::size_t> wanted = output_positions(output_names);
    // The arrays stay referenced here until the run is over: the tensors read them in place.
    std::vector<py::array> arrays;
    SampleInputs inputs;
    std::map<std::string, std::uintptr_t> addresses;
    for (const auto& [key, value] : feed) {
      if (!py::isinstance<py::str>(key)) {
        throw py::type_error(fmt::format("input_feed: keys must be input names (str), got a {}",
                                         Py_TYPE(key.ptr())->tp_name));
      }
      const std::string name = key.cast<std::string>();
      std::optional<ValueId> id = model.find_value(name);
      // An unknown name is refused by the session with the list of inputs.
      const DataType dtype = id ? model.value(*id).dtype : DataType::kFloat;
      arrays.push_back(contiguous_array(value, dtype, name));
      inputs[name] = borrow_array(arrays.back(), dtype);
      addresses[name] = reinterpret_cast<std::uintptr_t>(inputs[name].raw());
    }
    // Unknown names, ranks and contradicted dims are refused first, then missing inputs:
    // a symbolic model could not be specialised without them.
    const InputShapes shapes = session_->shapes_of(inputs);
    for (ValueId id : model.inputs()) {
      const Value& input = model.value(id);
      if (!input.initializer && !inputs.contains(input.name)) {
        throw Error(fmt::format("{}: input '{}' ({}) is missing from input_feed",
                                session_->origin(), input.name, ort_type_name(input.dtype)));
      }
    }
    std::vector<Tensor> results;
    {
      py::gil_scoped_release release;
      const auto start = std::chrono::steady_clock::now();
      note_prepared(session_->prepare(shapes));
      results = session_->run(inputs);
      if (profiling()) profiler_->record_run(start, std::chrono::steady_clock::now());
      std::lock_guard<std::mutex> lock(mutex_);
      last_input_addresses_ = std::move(addresses);
    }
    py::list outputs;
    for (std::size_t position : wanted) outputs.append(array_of(results.at(position)));
    return outputs;
  }

  std::map<std::string, std::uintptr_t> last_input_addresses() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_input_addresses_;
  }

  // What the session did besides running (Session::events): (what, seconds).
  py::list events() const {
    py::list list;
    for (const SessionEvent& event : session_->events())
      list.append(py::make_tuple(event.what, event.seconds));
    return list;
  }

  std::size_t prepared_count() const { return session_->prepared_count(); }

  // Every input shape prepared so far, oldest first: its dims, the plan that runs it (a
  // strategy's name, "sequential" for the sequential executor), its workers, prepare seconds.
  py::list prepared() const {
    std::lock_guard<std::mutex> lock(mutex_);
    py::list list;
    for (const Prepared& p : prepared_) {
      py::dict entry;
      entry["shapes"] = p.shapes;
      entry["strategy"] = p.strategy;
      entry["workers"] = p.workers;
      entry["seconds"] = p.seconds;
      list.append(entry);
    }
    return list;
  }

  // Writes the profile and stops profiling; "" when profiling was off.
  std::string end_profiling(const std::string& path) {
    if (!profiling()) return "";
    profiler_->write(path);
    std::lock_guard<std::mutex> lock(mutex_);
    ended_ = true;
    return path;
  }

  std::string profile_json() const { return profiler_ ? profiler_->json() : ""; }

 private:
  bool profiling() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return profiler_ && !ended_;
  }

  // The first time a prepared shape is seen: records it, and the profiler watches its
  // executor. The session's run finds the same entry in its cache. A shape dropped from the
  // cache and prepared again is a new entry.
  void note_prepared(const std::shared_ptr<PreparedShape>& shape) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // Weak: entries the session drops from its cache are freed (one run again is new).
      std::erase_if(seen_, [](const std::weak_ptr<PreparedShape>& p) { return p.expired(); });
      for (const auto& p : seen_)
        if (p.lock() == shape) return;
      seen_.push_back(shape);
      if (prepared_.size() == kMaxPreparedRecords) prepared_.erase(prepared_.begin());
      const PreparedRun& run = shape->run;
      const bool parallel = run.parallel && run.plan;
      prepared_.push_back({describe_shapes(shape->shapes),
                           parallel ? run.plan->plan.strategy : std::string("sequential"),
                           parallel ? static_cast<int>(run.plan->plan.order.size()) : 1,
                           shape->prepare_seconds});
    }
    if (profiler_) {
      // Observers are added between runs: the shape's mutex is held while its executor runs.
      std::lock_guard<std::mutex> lock(shape->mutex);
      profiler_->watch(*shape);
    }
  }

  std::vector<std::size_t> output_positions(const py::object& names) const {
    const Graph& model = session_->model();
    std::vector<std::string> all;
    for (ValueId id : model.outputs()) all.push_back(model.value(id).name);
    std::vector<std::size_t> positions;
    if (names.is_none() || (py::isinstance<py::sequence>(names) && py::len(names) == 0)) {
      for (std::size_t i = 0; i < all.size(); ++i) positions.push_back(i);
      return positions;
    }
    if (py::isinstance<py::str>(names) || !py::isinstance<py::sequence>(names)) {
      throw py::type_error("output_names: expected a list of output names or None");
    }
    for (const py::handle& item : names) {
      if (!py::isinstance<py::str>(item))
        throw py::type_error("output_names: expected a list of output names (str)");
      const std::string name = item.cast<std::string>();
      auto it = std::find(all.begin(), all.end(), name);
      if (it == all.end()) {
        throw Error(fmt::format("{}: no output is named '{}'; outputs are: {}", session_->origin(),
                                name, fmt::join(all, ", ")));
      }
      positions.push_back(static_cast<std::size_t>(it - all.begin()));
    }
    return positions;
  }

  // The model as the passes leave it, in standard ONNX (fused forms written out), with its
  // symbolic dims kept: what ONNX Runtime's optimized_model_filepath writes.
  void write_optimized(const CoreOptions& core) {
    LoadOptions load;
    load.optimize = core.optimize;
    load.fuse_activations = false;
    load.require_static_inputs = false;
    py::gil_scoped_release release;
    export_onnx(specialize_model(session_->model(), load, session_->origin()),
                core.optimized_model_path);
  }

  struct Prepared {
    std::string shapes;
    std::string strategy;
    int workers = 1;
    double seconds = 0;
  };

  static constexpr std::size_t kMaxPreparedRecords = 1024;

  std::unique_ptr<Session> session_;
  std::vector<Prepared> prepared_;
  std::vector<std::weak_ptr<PreparedShape>> seen_;
  std::shared_ptr<SessionProfiler> profiler_;
  mutable std::mutex mutex_;
  bool ended_ = false;
  std::map<std::string, std::uintptr_t> last_input_addresses_;
};

}  // namespace

void bind_session(py::module_& module) {
  py::class_<CoreOptions>(module, "CoreOptions", "How a core session plans and runs its model.")
      .def(py::init<>())
      .def_readwrite("strategy", &CoreOptions::strategy)
      .def_readwrite("plan_file", &CoreOptions::plan_file)
      .def_readwrite("threads", &CoreOptions::threads)
      .def_readwrite("workers", &CoreOptions::workers)
      .def_readwrite("threads_per_worker", &CoreOptions::threads_per_worker)
      .def_readwrite("optimize", &CoreOptions::optimize)
      .def_readwrite("costs", &CoreOptions::costs)
      .def_readwrite("auto_check", &CoreOptions::auto_check)
      .def_readwrite("verbose", &CoreOptions::verbose)
      .def_readwrite("max_prepared_shapes", &CoreOptions::max_prepared_shapes)
      .def_readwrite("profile", &CoreOptions::profile)
      .def_readwrite("optimized_model_path", &CoreOptions::optimized_model_path)
      .def_readwrite("shapes", &CoreOptions::shapes);
  py::class_<CoreSession>(module, "CoreSession",
                          "cleave's engine Session (pipeline/session.h) over NumPy arrays.")
      .def(py::init<const py::object&, const CoreOptions&>(), py::arg("model"), py::arg("options"))
      .def("inputs", &CoreSession::inputs)
      .def("outputs", &CoreSession::outputs)
      .def("overridable_initializers", &CoreSession::overridable_initializers)
      .def("metadata", &CoreSession::metadata)
      .def("run", &CoreSession::run, py::arg("output_names"), py::arg("input_feed"),
           "Runs the model on the feed (GIL released); returns the named outputs.")
      .def("last_input_addresses", &CoreSession::last_input_addresses,
           "The data address of each input tensor the last run handed the engine.")
      .def("events", &CoreSession::events)
      .def("prepared_count", &CoreSession::prepared_count)
      .def("prepared", &CoreSession::prepared)
      .def("end_profiling", &CoreSession::end_profiling, py::arg("path"))
      .def("profile_json", &CoreSession::profile_json);
}

}  // namespace cleave::python
