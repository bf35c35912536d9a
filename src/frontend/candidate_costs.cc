// The costs a candidate's prediction used, described (candidate_costs.h).
#include "frontend/candidate_costs.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

#include "plan/simulator.h"

namespace cleave {

namespace {

// The most intra-op threads the table measured (static weights: one, threads do not help).
int measured_threads(const CostTable& costs) {
  std::size_t most = 1;
  for (const NodeCost& node : costs.nodes) most = std::max(most, node.seconds.size());
  return static_cast<int>(most);
}

// Past its largest measured count a node keeps that count's time (CostTable::seconds).
int taken_at(const CostTable& costs, int threads) {
  return std::clamp(threads, 1, measured_threads(costs));
}

// How a busy-core time on more than one thread is made: only 1 thread is timed beside busy
// cores (CostTable::busy_seconds), with `busy_neighbours` other cores computing; a plan of more
// threads at once than that says so.
std::string busy_source(const CostTable& costs, int most_threads, int all_threads) {
  std::string text = "profile, busy core";
  if (most_threads > 1) text += ": 1-thread busy time x the node's own speedup from 1 thread";
  // A busy run timed faster than the alone run is priced at the alone level (busy_level).
  if (costs.busy_level() > 1)
    text += fmt::format("; busy times x {:.2f}, the busy run timed faster than alone",
                        costs.busy_level());
  if (costs.busy_neighbours > 0 && all_threads > costs.busy_neighbours + 1) {
    text += fmt::format("; {} threads at once, timed beside {} busy core{}", all_threads,
                        costs.busy_neighbours, costs.busy_neighbours == 1 ? "" : "s");
  }
  return text;
}

std::string source_of(const CostTable& costs, bool beside_busy, int most_threads, int all_threads) {
  if (costs.source == "profile") {
    if (beside_busy) return busy_source(costs, most_threads, all_threads);
    if (costs.context == "in-context") return "profile in context";
    if (costs.context == "alone") return "profile alone";
    return "profile";
  }
  if (costs.source == "static") return "static weights";
  return costs.source;
}

std::string range_text(double low, double high, double scale, const char* unit) {
  if (high - low <= 1e-9 * high) return fmt::format("{:.3g} {}", low * scale, unit);
  return fmt::format("{:.3g}-{:.3g} {}", low * scale, high * scale, unit);
}

// The links between the workers that compute (and device 0, which hands a machine file's
// ranks the model's inputs), as latency and bandwidth ranges.
std::string links_text(const Machine& machine, const std::set<std::size_t>& workers,
                       bool machine_file) {
  std::set<std::size_t> ends = workers;
  if (machine_file) ends.insert(0);
  double latency_low = 1e300, latency_high = 0, bandwidth_low = 1e300, bandwidth_high = 0;
  bool unlinked = false;
  for (std::size_t u : ends) {
    for (std::size_t v : ends) {
      if (u == v || u >= machine.size() || v >= machine.size()) continue;
      const double bandwidth = machine.bandwidth[u][v];
      if (bandwidth <= 0) {
        unlinked = true;
        continue;
      }
      latency_low = std::min(latency_low, machine.latency[u][v]);
      latency_high = std::max(latency_high, machine.latency[u][v]);
      bandwidth_low = std::min(bandwidth_low, bandwidth);
      bandwidth_high = std::max(bandwidth_high, bandwidth);
    }
  }
  std::string where = machine_file ? "machine file" : machine.link_source;
  if (where.empty()) where = "task graph";
  if (bandwidth_high == 0) return where + ": no links";
  std::string text =
      fmt::format("{}: latency {}, {}{}", where, range_text(latency_low, latency_high, 1e6, "us"),
                  range_text(bandwidth_low, bandwidth_high, 1e-9, "GB/s"),
                  unlinked ? ", some pairs unlinked" : "");
  // The thread executor's own costs, priced where two or more workers compute.
  if (machine.task_seconds > 0 || machine.run_seconds > 0) {
    text += fmt::format(", {:.3g} us per task, {:.3g} us per run", machine.task_seconds * 1e6,
                        machine.run_seconds * 1e6);
  }
  return text;
}

}  // namespace

CandidateCosts describe_costs(const CostTable& costs, const ModelPlan& plan, bool machine_file) {
  CandidateCosts out;
  const Machine& machine = plan.tasks.machine;
  std::set<std::size_t> computing;
  for (std::size_t w = 0; w < plan.plan.order.size(); ++w)
    if (!plan.plan.order[w].empty()) computing.insert(w);
  bool rooflines = false, speeds = false;
  int all = 0;  // Threads computing at once, as the plan runs them.
  for (std::size_t w : computing) {
    if (w >= machine.size()) continue;
    const Device& device = machine.devices[w];
    out.threads.push_back(taken_at(costs, device.threads));
    all += device.threads;
    // A device priced by its own roofline ignores its speed (task_graph_for).
    const bool roofline = costs.source == "analytical" && device.roofline.declared();
    rooflines = rooflines || roofline;
    speeds = speeds || (!roofline && device.speed != 1.0);
  }
  const int most =
      out.threads.empty() ? 1 : *std::max_element(out.threads.begin(), out.threads.end());
  out.source = rooflines ? "machine file rooflines"
                         : source_of(costs, prices_beside_busy(plan.plan, plan.tasks), most, all);
  if (speeds && machine_file) out.source += ", / machine file speeds";
  if (costs.convolution_family) out.conv_family = to_string(*costs.convolution_family);
  out.links = computing.size() < 2 ? "none" : links_text(machine, computing, machine_file);
  return out;
}

CandidateCosts stage_costs(const CostTable& costs, int stages, int threads) {
  CandidateCosts out;
  const int at = taken_at(costs, threads);
  out.threads.assign(stages, at);
  out.source = source_of(costs, costs.has_busy_seconds(), at, threads * stages);
  if (costs.convolution_family) out.conv_family = to_string(*costs.convolution_family);
  out.links = "hand-offs between stages not priced";
  return out;
}

std::string costs_text(const CandidateCosts& costs) {
  if (costs.source.empty()) return "not predicted";
  std::string threads = "-";
  if (!costs.threads.empty()) {
    const bool even = std::adjacent_find(costs.threads.begin(), costs.threads.end(),
                                         std::not_equal_to<>()) == costs.threads.end();
    threads = even ? std::to_string(costs.threads.front())
                   : fmt::format("{}", fmt::join(costs.threads, "+"));
    threads += even && costs.threads.front() == 1 ? " thread" : " threads";
  }
  return fmt::format("{}, {}; convolutions {}; links {}", costs.source, threads,
                     costs.conv_family.empty() ? "-" : costs.conv_family, costs.links);
}

nlohmann::json costs_to_json(const CandidateCosts& costs) {
  if (costs.source.empty()) return nullptr;
  const int most =
      costs.threads.empty() ? 1 : *std::max_element(costs.threads.begin(), costs.threads.end());
  nlohmann::json json = {
      {"source", costs.source},
      {"threads", most},
      {"conv_family",
       costs.conv_family.empty() ? nlohmann::json() : nlohmann::json(costs.conv_family)},
      {"links", costs.links}};
  if (std::adjacent_find(costs.threads.begin(), costs.threads.end(), std::not_equal_to<>()) !=
      costs.threads.end())
    json["threads_by_worker"] = costs.threads;
  return json;
}

}  // namespace cleave
