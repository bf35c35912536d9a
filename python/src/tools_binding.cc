// cleave's planners, schedulers, stream scheduler and code generator as Python calls.
#include "tools_binding.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/model_summary.h"
#include "codegen/codegen_driver.h"
#include "cost/cost_table.h"
#include "frontend/costs.h"
#include "frontend/load.h"
#include "frontend/model_plan.h"
#include "machine/machine.h"
#include "onnx/onnx_import.h"
#include "pipeline/model_split.h"
#include "plan/plan.h"
#include "plan/schedule/schedulers.h"
#include "plan/simulator.h"
#include "plan/task_graph.h"
#include "stream/schedule.h"
#include "stream/stream_json.h"
#include "support/atomic_output.h"
#include "support/error.h"
#include "viz/gantt.h"

namespace cleave::python {

namespace py = pybind11;

namespace {

using Shapes = std::map<std::string, std::vector<int64_t>>;

Graph load_for_tools(const std::string& model, const Shapes& shapes, bool optimize) {
  LoadOptions load;
  load.optimize = optimize;
  for (const auto& [name, dims] : shapes) load.shapes.emplace_back(name, dims);
  return load_model(model, load);
}

// A model's plan with the graph it was made for (its file names the graph's fingerprint).
class PyPlan {
 public:
  PyPlan(ModelPlan plan, Graph graph, std::string model)
      : plan_(std::move(plan)), graph_(std::move(graph)), model_(std::move(model)) {}

  std::string to_json() const { return model_plan_to_json(plan_, graph_).dump(1); }
  void save(const std::string& path) const { write_model_plan(path, plan_, graph_); }
  double predicted_seconds() const { return plan_.plan.makespan; }
  const std::string& strategy() const { return plan_.plan.strategy; }
  int workers() const { return static_cast<int>(plan_.plan.order.size()); }
  int threads_per_worker() const { return plan_.threads_per_worker; }
  std::vector<std::pair<std::string, double>> candidates() const {
    std::vector<std::pair<std::string, double>> list;
    for (const PlanCandidate& c : plan_.candidates)
      list.emplace_back(c.strategy, c.predicted_seconds);
    return list;
  }
  std::string gantt_svg_text() const {
    return gantt_svg(plan_.plan, plan_.tasks, simulate(plan_.plan, plan_.tasks),
                     fmt::format("predicted: {} ({})", model_, plan_.plan.strategy));
  }

 private:
  ModelPlan plan_;
  Graph graph_;
  std::string model_;
};

PyPlan plan(const std::string& model, const std::string& strategy, int workers,
            int threads_per_worker, const std::string& machine, const std::string& costs,
            int samples, double time_limit, const Shapes& shapes) {
  const auto strategies = model_strategies();
  if (std::find(strategies.begin(), strategies.end(), strategy) == strategies.end())
    throw py::value_error(fmt::format("strategy: unknown strategy '{}'", strategy));
  if (workers < 1) throw py::value_error(fmt::format("workers: expected >= 1, got {}", workers));
  if (threads_per_worker < 1) {
    throw py::value_error(
        fmt::format("threads_per_worker: expected >= 1, got {}", threads_per_worker));
  }
  if (samples < 1) throw py::value_error(fmt::format("samples: expected >= 1, got {}", samples));
  py::gil_scoped_release release;
  ModelPlanOptions options;
  if (!machine.empty()) options.machine = read_machine(machine);
  options.strategy = strategy;
  options.workers = workers;
  options.threads_per_worker = threads_per_worker;
  options.samples = samples;
  options.time_limit_seconds = time_limit;
  Graph graph = load_for_tools(model, shapes, true);
  CostedPlan costed = plan_with_costs(graph, costs, options, {});
  return PyPlan(std::move(costed.plan), std::move(graph), model);
}

std::string inspect(const std::string& model) {
  py::gil_scoped_release release;
  nlohmann::json json = summary_to_json(summarize_model(import_onnx(model)));
  json["model"] = model;
  return json.dump();
}

std::string schedule_task_graph(const std::string& task_graph, const std::string& algo,
                                double time_limit, uint64_t seed) {
  py::gil_scoped_release release;
  const TaskGraph graph = read_task_graph(task_graph);
  ScheduleOptions options;
  options.time_limit_seconds = time_limit;
  options.seed = seed;
  bool known = false;
  for (const SchedulerEntry& entry : schedulers()) known = known || entry.name == algo;
  if (!known) throw Error(fmt::format("schedule: unknown algorithm \"{}\"", algo));
  Plan plan = schedule(graph, algo, options);
  validate_plan(plan, graph);
  return plan_to_json(plan, graph).dump();
}

std::string stream_schedule(const std::string& program_path) {
  py::gil_scoped_release release;
  const StreamProgram program = load_stream_program(program_path, StreamLoadOptions{false, true});
  const StreamGraph graph = flatten_stream(program.root);
  const StreamSchedule schedule = schedule_stream(graph, program.origin);
  return schedule_to_json(graph, schedule, closed_form_rates(program.root));
}

// `cleave codegen MODEL --lang cpp|pytorch -o OUT`: the sequential plan, or a given plan.
std::string codegen(const std::string& model, const std::string& lang, const std::string& out_dir,
                    const std::optional<std::string>& plan_file, int threads, bool force) {
  if (lang != "cpp" && lang != "pytorch")
    throw py::value_error(fmt::format("lang: expected cpp or pytorch, got '{}'", lang));
  py::gil_scoped_release release;
  AtomicFolder out(out_dir,
                   {force ? FolderRules::Existing::kReplace : FolderRules::Existing::kRefuse,
                    {model, plan_file.value_or("")}});
  Graph graph = load_for_tools(model, {}, true);
  ModelPlan plan;
  if (plan_file) {
    plan = read_model_plan(*plan_file, graph);
  } else {
    ModelPlanOptions options;
    options.strategy = "sequential";
    options.workers = 1;
    options.threads_per_worker = threads;
    plan = plan_model(graph, static_costs(graph), options);
  }
  CodegenRequest request;
  request.model = model;
  request.lang = lang;
  request.output = out_dir;
  return codegen_plan(request, graph, plan, out).dump();
}

// `cleave split MODEL --nodes N --dim D -o OUT_DIR`: the one split driver the command runs.
std::string split(const std::string& model, int nodes, const std::string& dim,
                  const std::string& out_dir, const std::optional<std::string>& speeds,
                  const std::string& machine, bool search, const Shapes& shapes, bool force) {
  py::gil_scoped_release release;
  ModelSplitSettings settings;
  settings.model = model;
  settings.nodes = nodes;
  settings.dim = dim;
  settings.output = out_dir;
  settings.speeds_given = speeds.has_value();
  settings.speeds = speeds.value_or("");
  settings.machine = machine;
  settings.search = search;
  settings.force = force;
  for (const auto& [name, dims] : shapes)
    settings.shapes.push_back(fmt::format("{}={}", name, fmt::join(dims, ",")));
  return split_model_to_folder(settings).report.dump();
}

}  // namespace

void bind_tools(py::module_& module) {
  py::class_<PyPlan>(module, "Plan", "A model's plan: where and in which order every node runs.")
      .def("to_json", &PyPlan::to_json, "The plan file's JSON (as `cleave plan -o` writes it).")
      .def("save", &PyPlan::save, py::arg("path"), "Writes the plan file.")
      .def("gantt_svg", &PyPlan::gantt_svg_text, "The predicted timeline as a Gantt chart (SVG).")
      .def_property_readonly("predicted_seconds", &PyPlan::predicted_seconds)
      .def_property_readonly("strategy", &PyPlan::strategy)
      .def_property_readonly("workers", &PyPlan::workers)
      .def_property_readonly("threads_per_worker", &PyPlan::threads_per_worker)
      .def_property_readonly("candidates", &PyPlan::candidates);
  module.def("_plan", &plan, py::arg("model"), py::arg("strategy"), py::arg("workers"),
             py::arg("threads_per_worker"), py::arg("machine"), py::arg("costs"),
             py::arg("samples"), py::arg("time_limit"), py::arg("shapes"));
  module.def("_inspect", &inspect, py::arg("model"));
  module.def("_schedule", &schedule_task_graph, py::arg("task_graph"), py::arg("algo"),
             py::arg("time_limit"), py::arg("seed"));
  module.def("_stream_schedule", &stream_schedule, py::arg("program"));
  module.def("_codegen", &codegen, py::arg("model"), py::arg("lang"), py::arg("out_dir"),
             py::arg("plan_file"), py::arg("threads"), py::arg("force"));
  module.def("_split", &split, py::arg("model"), py::arg("nodes"), py::arg("dim"),
             py::arg("out_dir"), py::arg("speeds"), py::arg("machine"), py::arg("search"),
             py::arg("shapes"), py::arg("force"));
}

}  // namespace cleave::python
