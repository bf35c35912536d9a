// Host hand-off calibration: chains of Relu nodes on the thread executor, fitted and cached.
#include "cost/hand_off_calibration.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "ir/text.h"
#include "runtime/cpu_isa.h"
#include "runtime/cpu_model.h"
#include "runtime/executor.h"
#include "runtime/parallel_executor.h"
#include "runtime/pinning.h"
#include "runtime/random_inputs.h"
#include "runtime/wait_policy.h"
#include "support/json_file.h"
#include "support/timing.h"

namespace cleave {

namespace {

// Bumped whenever the probe measures something else, so that older files are not read as new.
constexpr int kFormat = 1;
// Values up to this size cost a reader nothing measurable beyond the wake-up: they price the
// latency and the dispatch; larger ones the bandwidth.
constexpr double kSmallValueBytes = 4096;
// A reader whose remote lines cost nothing measurable: links this fast price nothing.
constexpr double kMostBandwidth = 1e13;

// x -> Relu -> ... -> Relu (`tasks` of them), and one more Relu of x, "side", for worker 1.
Graph chain_graph(int tasks, double bytes) {
  const auto elements = std::max<int64_t>(1, static_cast<int64_t>(bytes / 4));
  std::string text = fmt::format("graph chain (%x: f32[1,{}]) {{\n", elements);
  std::string last = "%x";
  for (int i = 1; i <= tasks; ++i) {
    text += fmt::format("  %v{} = Relu({})\n", i, last);
    last = fmt::format("%v{}", i);
  }
  text += "  %side = Relu(%x)\n";
  text += fmt::format("  return {}, %side\n}}\n", last);
  return parse_graph(text);
}

bool is_side(const Graph& graph, NodeId node) {
  return graph.value(graph.node(node).outputs.at(0)).name == "side";
}

TaskGraph chain_tasks(const Graph& graph) {
  TaskGraph tasks;
  tasks.machine = cpu_machine(2, 1);
  std::vector<int> task_of(graph.node_capacity(), -1);
  for (NodeId id : graph.topological_order()) {
    Task task;
    task.name = fmt::format("t{}", tasks.tasks.size());
    task.time = {1e-6, 1e-6};
    task.node = id;
    task_of[id] = static_cast<int>(tasks.tasks.size());
    tasks.tasks.push_back(std::move(task));
  }
  for (NodeId id : graph.topological_order()) {
    for (ValueId input : graph.node(id).inputs) {
      const NodeId producer = graph.value(input).producer;
      if (producer >= 0) tasks.edges.push_back({task_of[producer], task_of[id]});
    }
  }
  return tasks;
}

// The side node first on worker 1; the chain on worker 0, or every other node of it on 1.
Plan chain_plan(const Graph& graph, const TaskGraph& tasks, bool alternate) {
  Plan plan;
  plan.order.resize(2);
  plan.tasks.resize(tasks.tasks.size());
  int position = 0;
  for (std::size_t t = 0; t < tasks.tasks.size(); ++t) {
    const bool side = is_side(graph, tasks.tasks[t].node);
    const int worker = side ? 1 : (alternate ? position++ % 2 : 0);
    plan.order[worker].push_back(static_cast<int>(t));
    plan.tasks[t] = {static_cast<int>(t), worker, 0, 0};
  }
  std::stable_partition(plan.order[1].begin(), plan.order[1].end(),
                        [&](int t) { return is_side(graph, tasks.tasks[t].node); });
  return plan;
}

// Median seconds of each of `runs`, timed in interleaved rounds of three runs each.
std::vector<double> interleaved_medians(const std::vector<std::function<void()>>& runs,
                                        int rounds) {
  using Clock = std::chrono::steady_clock;
  for (int warm = 0; warm < 3; ++warm)
    for (const auto& run : runs) run();
  std::vector<std::vector<double>> seconds(runs.size());
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t k = 0; k < runs.size(); ++k) {
      // Every other round backwards, so that no configuration always follows the same one.
      const std::size_t r = round % 2 == 0 ? k : runs.size() - 1 - k;
      for (int repeat = 0; repeat < 3; ++repeat) {
        const auto start = Clock::now();
        runs[r]();
        seconds[r].push_back(std::chrono::duration<double>(Clock::now() - start).count());
      }
    }
  }
  std::vector<double> medians;
  for (auto& list : seconds) medians.push_back(median_of(list));
  return medians;
}

ChainTiming time_chain(int tasks, double bytes, int rounds) {
  const Graph graph = chain_graph(tasks, bytes);
  const TaskGraph task_graph = chain_tasks(graph);
  const SampleInputs inputs = random_inputs(graph, 1);
  Executor sequential(graph);
  ParallelExecutor one_worker(graph, task_graph, chain_plan(graph, task_graph, false));
  ParallelExecutor alternating(graph, task_graph, chain_plan(graph, task_graph, true));
  const std::vector<double> medians =
      interleaved_medians({[&] { sequential.run(inputs); }, [&] { one_worker.run(inputs); },
                           [&] { alternating.run(inputs); }},
                          rounds);
  return {tasks, bytes, medians[0], medians[1], medians[2]};
}

void check_timing(const ChainTiming& timing) {
  for (double seconds :
       {timing.sequential_seconds, timing.one_worker_seconds, timing.alternating_seconds}) {
    if (!(seconds > 0) || !std::isfinite(seconds)) {
      throw Error(
          fmt::format("hand-off fit: a chain of {} tasks has a time of {} s; expected "
                      "positive times",
                      timing.tasks, seconds));
    }
  }
  if (timing.tasks < 2) {
    throw Error(
        fmt::format("hand-off fit: a chain of {} task(s); expected at least 2", timing.tasks));
  }
}

// Least squares of one_worker - sequential = run + tasks x task over the small chains.
void fit_dispatch(const std::vector<const ChainTiming*>& small, HostLinks& links) {
  double sum_n = 0, sum_y = 0, sum_nn = 0, sum_ny = 0;
  for (const ChainTiming* timing : small) {
    const double n = timing->tasks;
    const double y = timing->one_worker_seconds - timing->sequential_seconds;
    sum_n += n;
    sum_y += y;
    sum_nn += n * n;
    sum_ny += n * y;
  }
  const auto m = static_cast<double>(small.size());
  const double slope = (m * sum_ny - sum_n * sum_y) / (m * sum_nn - sum_n * sum_n);
  links.task_seconds = std::max(0.0, slope);
  links.run_seconds = std::max(0.0, (sum_y - links.task_seconds * sum_n) / m);
}

}  // namespace

HostLinks fit_host_links(const std::vector<ChainTiming>& timings) {
  std::vector<const ChainTiming*> small, large;
  std::set<int> small_lengths;
  for (const ChainTiming& timing : timings) {
    check_timing(timing);
    if (timing.value_bytes <= kSmallValueBytes) {
      small.push_back(&timing);
      small_lengths.insert(timing.tasks);
    } else {
      large.push_back(&timing);
    }
  }
  if (small_lengths.size() < 2) {
    throw Error(fmt::format(
        "hand-off fit: expected chains of small values (at most {} bytes) of at least two "
        "lengths, got {}",
        kSmallValueBytes, small_lengths.size()));
  }
  if (large.empty()) {
    throw Error(fmt::format("hand-off fit: expected a chain of values larger than {} bytes",
                            kSmallValueBytes));
  }
  HostLinks links;
  links.source = kCalibratedHostLinks;
  fit_dispatch(small, links);
  double weighted = 0, squares = 0;
  for (const ChainTiming* timing : small) {
    const double hops = timing->tasks - 1;
    weighted += (timing->alternating_seconds - timing->one_worker_seconds) * hops;
    squares += hops * hops;
  }
  links.latency = std::max(0.0, weighted / squares);
  double seconds_per_byte = 0;
  for (const ChainTiming* timing : large) {
    const double per_hop =
        (timing->alternating_seconds - timing->one_worker_seconds) / (timing->tasks - 1);
    seconds_per_byte += (per_hop - links.latency) / timing->value_bytes;
  }
  seconds_per_byte /= static_cast<double>(large.size());
  links.bandwidth = seconds_per_byte > 1 / kMostBandwidth ? 1 / seconds_per_byte : kMostBandwidth;
  return links;
}

std::vector<ChainTiming> measure_hand_off(const HandOffProbe& probe) {
  const std::size_t cores = allowed_cpus().size();
  if (cores < 2) {
    throw Error(fmt::format(
        "hand-off calibration: needs two cores for its two workers, this process may use {}",
        cores));
  }
  std::vector<ChainTiming> timings;
  for (int tasks : probe.small_tasks)
    timings.push_back(time_chain(tasks, probe.small_bytes, probe.rounds));
  timings.push_back(time_chain(probe.large_tasks, probe.large_bytes, probe.rounds));
  return timings;
}

std::string hand_off_cache_key() {
  return fmt::format("{}-handoff-s{}", host_cache_key(), spin_count_in_effect());
}

nlohmann::json host_links_to_json(const HostLinks& links, const std::vector<ChainTiming>& timings) {
  nlohmann::json chains = nlohmann::json::array();
  for (const ChainTiming& timing : timings) {
    chains.push_back({{"tasks", timing.tasks},
                      {"value_bytes", timing.value_bytes},
                      {"sequential_seconds", timing.sequential_seconds},
                      {"one_worker_seconds", timing.one_worker_seconds},
                      {"alternating_seconds", timing.alternating_seconds}});
  }
  return {{"format", kFormat},
          {"cpu", cpu_model().name},
          {"isa", isa_cache_key()},
          {"spin_count", spin_count_in_effect()},
          {"source", links.source},
          {"latency_seconds", links.latency},
          {"bandwidth_bytes_per_second", links.bandwidth},
          {"task_seconds", links.task_seconds},
          {"run_seconds", links.run_seconds},
          {"timings", chains}};
}

HostLinks host_links_from_json(const nlohmann::json& json, const std::string& origin) {
  const JsonField root(json, origin);
  root.expect_object();
  if (root.at("format").integer(0, std::numeric_limits<int>::max()) != kFormat)
    root.at("format").fail(fmt::format("format {}", kFormat));
  HostLinks links;
  links.source = kCalibratedHostLinks;
  links.latency = root.at("latency_seconds").non_negative();
  const JsonField bandwidth = root.at("bandwidth_bytes_per_second");
  links.bandwidth = bandwidth.number();
  if (!(links.bandwidth > 0)) bandwidth.fail("a positive bandwidth");
  links.task_seconds = root.at("task_seconds").non_negative();
  links.run_seconds = root.at("run_seconds").non_negative();
  return links;
}

nlohmann::json host_hand_off_json(const PeakRateCache& cache,
                                  const std::function<std::vector<ChainTiming>()>& measure) {
  return cached_host_measurement(
      hand_off_cache_key() + ".json", cache, "host hand-off",
      [](const nlohmann::json& read, const std::string& origin) {
        host_links_from_json(read, origin);
      },
      [&] {
        const std::vector<ChainTiming> timings = measure();
        return host_links_to_json(fit_host_links(timings), timings);
      });
}

HostLinks calibrated_host_links(const PeakRateCache& cache,
                                const std::function<std::vector<ChainTiming>()>& measure) {
  return host_links_from_json(host_hand_off_json(cache, measure), "host hand-off");
}

std::string host_links_text(const HostLinks& links) {
  std::string text = fmt::format("{}: latency {:.3g} us, {:.3g} GB/s", links.source,
                                 links.latency * 1e6, links.bandwidth * 1e-9);
  if (links.task_seconds > 0 || links.run_seconds > 0) {
    text += fmt::format(", {:.3g} us per task, {:.3g} us per run", links.task_seconds * 1e6,
                        links.run_seconds * 1e6);
  }
  return text;
}

}  // namespace cleave
