// Model planning: candidates, the `auto` choice by simulation, and plan files.
#include "frontend/model_plan.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "frontend/auto_search.h"
#include "frontend/candidate_costs.h"
#include "frontend/costs.h"
#include "plan/registry.h"
#include "plan/simulator.h"
#include "runtime/winograd_budget.h"
#include "support/atomic_output.h"
#include "support/json_file.h"
#include "support/limits.h"

namespace cleave {

std::vector<std::string> model_strategies() {
  // "pipeline" runs as stages over a stream of samples (pipeline/pipeline_run.h), not as a plan.
  std::vector<std::string> names{"auto", "sequential", "data-parallel", "pipeline"};
  for (const PlannerEntry& entry : planners()) {
    if (entry.family != PlannerFamily::kStream) names.push_back(entry.name);
  }
  return names;
}

Machine cpu_workers(int workers, int threads_each, const HostLinks& links) {
  if (workers < 1 || threads_each < 1)
    throw Error("a CPU machine needs at least one worker of one thread");
  Machine machine = cpu_machine(workers, threads_each, links);
  for (int w = 0; w < workers; ++w) {
    machine.devices[w].threads = threads_each;
    machine.devices[w].cores.clear();
    for (int k = 0; k < threads_each; ++k) machine.devices[w].cores.push_back(w * threads_each + k);
  }
  return machine;
}

ModelPlan plan_model(const Graph& graph, const CostTable& costs, const ModelPlanOptions& options) {
  auto start = std::chrono::steady_clock::now();
  ModelPlan chosen;
  if (options.strategy == "auto") {
    chosen = plan_auto(graph, costs, options);
  } else if (options.strategy == "sequential") {
    chosen = plan_sequential(graph, costs, options);
  } else if (options.strategy == "data-parallel") {
    if (options.samples < 2) {
      throw Error(fmt::format(
          "strategy data-parallel gives each worker samples of its own: give --samples N with "
          "N >= 2 (got {})",
          options.samples));
    }
    chosen = options.machine
                 ? plan_data_parallel(graph, costs, *options.machine, options.samples,
                                      ModelValues::kFromRank0)
                 : plan_data_parallel(
                       graph, costs,
                       cpu_workers(options.workers, options.threads_per_worker, costs.host_links),
                       options.samples);
    // As plan_with_planner names its plans ("lc, 2 devices").
    const std::size_t workers = chosen.tasks.machine.size();
    chosen.configuration =
        fmt::format("data-parallel, {} {}{}", workers, options.machine ? "device" : "worker",
                    workers == 1 ? "" : "s");
  } else if (options.strategy == "pipeline") {
    throw Error(
        "strategy pipeline cuts the model into stages over a stream of samples and is no task "
        "plan: run it with `cleave run --plan pipeline` or `cleave bench --strategy pipeline`");
  } else {
    const std::string& instead = find_planner(options.strategy).before_copies;
    const bool once = options.each_node_once && !instead.empty();
    chosen = plan_with_planner(graph, costs, options, once ? instead : options.strategy);
  }
  // Every plan whose workers compute at once is priced at busy-neighbour times, whichever
  // planner made it (auto's candidates already are).
  const bool beside_busy = prices_beside_busy(chosen.plan, chosen.tasks);
  if (beside_busy) apply_simulation(chosen.plan, simulate(chosen.plan, chosen.tasks));
  // Fails with the device and bytes when a named strategy's weights overflow a device.
  if (options.machine) validate_plan(chosen.plan, chosen.tasks);
  chosen.planning_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  chosen.plan.notes["planning_seconds"] = chosen.planning_seconds;
  chosen.plan.notes["cost_source"] = costs.source;
  // Which hand-off costs priced the plan: this host's calibration, or the assumed constants.
  if (computes_on_several_workers(chosen.plan) && !chosen.tasks.machine.link_source.empty())
    chosen.plan.notes["links"] = chosen.tasks.machine.link_source;
  // Which node times the prediction used: busy-neighbour times where workers compute at once,
  // else the profile's in-context (or alone) times.
  if (!costs.context.empty())
    chosen.plan.notes["node_costs"] = beside_busy ? "beside-busy" : costs.context;
  // Whether the profile was measured now, reused, or made again because the host's speed had
  // changed since it was cached.
  if (!costs.cache_use.outcome.empty())
    chosen.plan.notes["profile_cache"] = cache_use_to_json(costs.cache_use);
  // Whether the times were scaled to the host's level now, and by how much.
  if (costs.level) chosen.plan.notes["profile_level"] = level_to_json(*costs.level);
  chosen.convolution_family = costs.convolution_family;
  if (costs.convolution_family == ConvolutionFamily::kWinograd) {
    // The costs were timed with these nodes on the direct kernels; the plan file says so.
    const WinogradSelection selection =
        select_winograd(graph, winograd_budget_from_environment(), chosen.threads_per_worker);
    chosen.plan.notes["winograd_budget"] = describe(selection);
    chosen.plan.notes["winograd_direct_nodes"] = direct_node_names(graph, selection);
  }
  return chosen;
}

nlohmann::json candidates_to_json(const std::vector<PlanCandidate>& rows) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const auto& candidate : rows) {
    // JSON has no infinity: a candidate that was never predicted has null seconds.
    const bool predicted = std::isfinite(candidate.predicted_seconds);
    nlohmann::json row = {
        {"strategy", candidate.strategy},
        {"family", candidate.family},
        {"configuration", candidate.configuration},
        {"predicted_seconds",
         predicted ? nlohmann::json(candidate.predicted_seconds) : nlohmann::json()},
        {"predicted_ms",
         predicted ? nlohmann::json(candidate.predicted_seconds * 1e3) : nlohmann::json()},
        {"memory_bytes", candidate.memory_bytes},
        {"activation_bytes", candidate.activation_bytes},
        {"rejected", candidate.rejected},
        {"chosen", candidate.chosen},
        {"costs", costs_to_json(candidate.costs)}};
    if (candidate.samples_per_second > 0) row["samples_per_second"] = candidate.samples_per_second;
    if (!candidate.cut_short.empty()) row["cut_short"] = candidate.cut_short;
    candidates.push_back(std::move(row));
  }
  return candidates;
}

nlohmann::json model_plan_to_json(const ModelPlan& plan, const Graph& graph,
                                  const std::string& fingerprint) {
  nlohmann::json json = plan_to_json(plan.plan, plan.tasks);
  nlohmann::json tasks = task_graph_to_json(plan.tasks);
  // Node names make a plan readable and let a reader check it against the model.
  for (std::size_t t = 0; t < plan.tasks.tasks.size(); ++t) {
    tasks["tasks"][t]["node_name"] = graph.node(plan.tasks.tasks[t].node).name;
  }
  json["task_graph"] = tasks;
  json["threads_per_worker"] = plan.threads_per_worker;
  if (plan.convolution_family) json["convolution_family"] = to_string(*plan.convolution_family);
  json["model_fingerprint"] = fingerprint.empty() ? graph_fingerprint(graph) : fingerprint;
  // A plan on paper (`plan --simulate`) was made from the weights' sizes, not their bytes, for
  // devices this host does not have: it is read back to be looked at, never run.
  const auto& devices = plan.tasks.machine.devices;
  if (std::any_of(devices.begin(), devices.end(), [](const Device& d) { return d.simulated; }))
    json["simulated"] = true;
  json["candidates"] = candidates_to_json(plan.candidates);
  json["family"] = plan.family;
  json["configuration"] = plan.configuration;
  return json;
}

ModelPlan model_plan_from_json(const nlohmann::json& json, const Graph& graph,
                               const std::string& origin, bool cores_on_this_host,
                               const std::string& graph_print) {
  try {
    const JsonField root(json, origin);
    if (!json.is_object()) root.fail("a plan object (from `cleave plan -o`)");
    if (json.value("simulated", false)) {
      throw Error(fmt::format(
          "{}: the plan was made on paper (`cleave plan --simulate`: weights unread, devices "
          "this host may not have); make it without --simulate to run it",
          origin));
    }
    const std::optional<JsonField> stored = root.find("model_fingerprint");
    const std::string fingerprint = stored ? stored->string() : "";
    const std::string here = graph_print.empty() ? graph_fingerprint(graph) : graph_print;
    if (fingerprint != here) {
      // A split's plan is for its partitioned.onnx with the runtime fusions put back, which
      // only --no-optimize does; the split's own commands load it so.
      const bool split = json.contains("notes") && json["notes"].is_object() &&
                         json["notes"].value(kModelLoadNote, "") == kExportedFormsFused;
      throw Error(fmt::format(
          "{}: the plan was made for another model (or other --shape/optimize settings): "
          "fingerprint {} here, {} in the plan{}",
          origin, here, fingerprint.empty() ? "none" : fingerprint,
          split ? "; it is a `cleave split` folder's plan, for its partitioned.onnx loaded with "
                  "the runtime fusions only: run `cleave run DIR/partitioned.onnx --no-optimize "
                  "--plan DIR/plan.json`, `cleave bench MODEL --split DIR` or `mpirun -np N "
                  "cleave run-split DIR --model MODEL`"
                : ""));
    }
    ModelPlan result;
    const JsonField tasks = root.at("task_graph");
    tasks.expect_object();
    result.tasks = task_graph_from_json(tasks.json(), origin + ": task_graph");
    const JsonField entries = tasks.at("tasks");
    for (std::size_t t = 0; t < result.tasks.tasks.size(); ++t) {
      const JsonField entry = entries.at(t);
      const std::optional<JsonField> node_name = entry.find("node_name");
      const std::string name = node_name ? node_name->string() : "";
      NodeId id = result.tasks.tasks[t].node;
      if (id < 0 || static_cast<std::size_t>(id) >= graph.node_capacity() ||
          graph.node(id).removed || graph.node(id).name != name) {
        throw Error(
            fmt::format("{}: task '{}' names node '{}' (#{}), which this model does not have",
                        origin, result.tasks.tasks[t].name, name, id));
      }
    }
    // The workers pin to these cores when the plan runs here; a core this host lacks would
    // fail inside the executor.
    for (std::size_t d = 0; cores_on_this_host && d < result.tasks.machine.devices.size(); ++d) {
      const std::vector<int>& cores = result.tasks.machine.devices[d].cores;
      for (std::size_t c = 0; c < cores.size(); ++c) {
        require_core(fmt::format("{}: task_graph.devices[{}].cores[{}]", origin, d, c), cores[c]);
      }
    }
    result.plan = plan_from_json(json, origin);
    if (const std::optional<JsonField> threads = root.find("threads_per_worker")) {
      result.threads_per_worker = static_cast<int>(threads->integer(1, kMaxThreads));
    } else {
      result.threads_per_worker = 1;
    }
    if (const std::optional<JsonField> family = root.find("convolution_family")) {
      result.convolution_family = parse_convolution_family(family->string());
      if (!result.convolution_family)
        family->fail("\"blocked\", \"winograd\" or \"channels-last\"");
    }
    // Plans written before families were recorded load as they were: no family, no table.
    if (const std::optional<JsonField> family = root.find("family"))
      result.family = family->string();
    if (const std::optional<JsonField> text = root.find("configuration"))
      result.configuration = text->string();
    require_integer(fmt::format("{}: workers x threads_per_worker", origin),
                    static_cast<int64_t>(result.plan.order.size()) * result.threads_per_worker, 1,
                    kMaxThreads);
    validate_plan(result.plan, result.tasks);
    return result;
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: malformed plan file: {}", origin, e.what()));
  }
}

bool plan_fuses_exported_forms(const std::string& path) {
  try {
    const nlohmann::json json = read_json_file(path, "plan file");
    const auto notes = json.find("notes");
    return notes != json.end() && notes->is_object() &&
           notes->value(kModelLoadNote, "") == kExportedFormsFused;
  } catch (const std::exception&) {
    return false;
  }
}

ModelPlan read_model_plan(const std::string& path, const Graph& graph, bool cores_on_this_host,
                          const std::string& fingerprint) {
  return model_plan_from_json(read_json_file(path, "plan file"), graph, path, cores_on_this_host,
                              fingerprint);
}

void write_model_plan(const std::string& path, const ModelPlan& plan, const Graph& graph,
                      const std::string& fingerprint) {
  write_file_atomically(path, model_plan_to_json(plan, graph, fingerprint).dump(1));
}

}  // namespace cleave
