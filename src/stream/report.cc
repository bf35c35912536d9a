// What `cleave stream` prints about a schedule, a converted model and a run, and a run's trace.
#include "stream/report.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "runtime/trace.h"

namespace cleave {

namespace {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

}  // namespace

std::string schedule_report(const StreamProgram& program, const StreamGraph& graph,
                            const StreamSchedule& schedule,
                            const std::vector<ClosedFormRates>& forms, double seconds) {
  std::string out = fmt::format(
      "scheduled in {:.3f} ms (flatten, balance equations, init, buffers, closed forms)\n",
      seconds * 1e3);
  out +=
      fmt::format("{}: {} filters, {} actors, {} channels\n", program.origin,
                  collect_filters(program.root).size(), graph.nodes.size(), graph.channels.size());
  out += fmt::format("steady state: {} input items -> {} output items per iteration\n",
                     schedule.input_per_iteration, schedule.output_per_iteration);
  out += fmt::format("{:<32} {:>12} {:>8}\n", "actor", "repetitions", "init");
  for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
    out += fmt::format("{:<32} {:>12} {:>8}\n", graph.nodes[v].name, schedule.repetitions[v],
                       schedule.init[v]);
  }
  out += fmt::format("{:<40} {:>8} {:>9}\n", "channel", "buffer", "initial");
  for (std::size_t c = 0; c < graph.channels.size(); ++c) {
    out += fmt::format("{:<40} {:>8} {:>9}\n", graph.channels[c].name, schedule.buffers[c],
                       schedule.initial_items[c]);
  }
  out += "closed forms (thesis Eqs. 2.1-2.5):\n";
  for (const ClosedFormRates& r : forms) {
    if (r.pop && r.peek && r.push) {
      out += fmt::format("  {:<30} pop {} peek {} push {}\n", r.name, *r.pop, *r.peek, *r.push);
    } else {
      out += fmt::format("  {:<30} none\n", r.name);
    }
  }
  return out;
}

std::string conversion_report(const StreamConversion& c, bool by_reference) {
  std::string out = fmt::format(
      "{} live instructions, {} filters; replicated: {} filters, {} of {} FLOPs ({:.1f}%)\n",
      c.live_instructions, c.filters, c.replicated_filters, c.replicated_flops, c.total_flops,
      c.total_flops > 0
          ? 100.0 * static_cast<double>(c.replicated_flops) / static_cast<double>(c.total_flops)
          : 0.0);
  if (by_reference) {
    out += fmt::format(
        "by reference: {} reader filters stand in for {} FLOPs that replication repeats\n",
        c.reference_readers, c.referenced_flops);
  }
  return out;
}

std::string stages_report(const StagedStream& s, const std::string& costs) {
  std::string out = fmt::format("{} stages: nodes {}, FLOPs {}; tensors crossing each cut: {}\n",
                                s.stage_nodes.size(), fmt::join(s.stage_nodes, " "),
                                fmt::join(s.stage_flops, " "), fmt::join(s.cut_values, " "));
  if (!s.stage_cost.empty()) {
    const double slowest = *std::max_element(s.stage_cost.begin(), s.stage_cost.end());
    std::vector<std::string> ms;
    for (double c : s.stage_cost) ms.push_back(fmt::format("{:.3f}", c * 1e3));
    out += fmt::format(
        "stage ms by the {} cost table: {}; predicts {:.1f} items/s with one worker "
        "per stage\n",
        costs, fmt::join(ms, " "), slowest > 0 ? 1.0 / slowest : 0.0);
  }
  return out;
}

std::string stream_run_json(const StreamRunSetup& setup, const StreamGraph& graph,
                            const StreamRunResult& r) {
  nlohmann::ordered_json actors = nlohmann::ordered_json::array();
  for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
    actors.push_back({{"name", graph.nodes[v].name},
                      {"worker", r.placement[v]},
                      {"seconds_per_iteration", r.node_cost[v]}});
  }
  nlohmann::ordered_json j = {{"items", setup.items},
                              {"outputs", r.output_count},
                              {"workers", setup.workers},
                              {"seconds", r.seconds},
                              {"items_per_second", r.items_per_second},
                              {"predicted_items_per_second", r.predicted_items_per_second},
                              {"bound_items_per_second", r.plan.bound_items_per_second},
                              {"latency_p50_seconds", percentile(r.iteration_latency, 0.5)},
                              {"latency_p99_seconds", percentile(r.iteration_latency, 0.99)},
                              {"worker_busy", r.worker_busy},
                              {"worker_cpu_seconds", r.worker_cpu_seconds},
                              {"worker_wait_seconds", r.worker_wait_seconds},
                              {"worker_waits", r.worker_waits},
                              {"worker_preempted", r.worker_preempted},
                              {"placement",
                               {{"method", setup.placement},
                                {"costs", setup.costs},
                                {"worker_seconds_per_iteration", r.plan.worker_seconds},
                                {"handoff_seconds_per_iteration", r.plan.handoff_seconds},
                                {"actors", actors}}}};
  return j.dump(2);
}

std::string stream_run_text(const StreamRunSetup& setup, const StreamGraph& graph,
                            const StreamRunResult& r) {
  const double p50 = percentile(r.iteration_latency, 0.5);
  const double p99 = percentile(r.iteration_latency, 0.99);
  std::string out =
      fmt::format("{}: {} items in, {} items out on {} workers in {:.4f} s\n", setup.origin,
                  setup.items, r.output_count, setup.workers, r.seconds);
  out += fmt::format(
      "throughput {:.1f} items/s ({} placement by {} costs predicts {:.1f}; its busiest worker "
      "bounds it at {:.1f})\n",
      r.items_per_second, setup.placement, setup.costs, r.predicted_items_per_second,
      r.plan.bound_items_per_second);
  out += fmt::format("latency per iteration: p50 {:.3f} ms, p99 {:.3f} ms\n", p50 * 1e3, p99 * 1e3);
  for (std::size_t w = 0; w < r.worker_busy.size(); ++w) {
    std::vector<std::string> names;
    for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
      if (r.placement[v] == static_cast<int>(w)) names.push_back(graph.nodes[v].name);
    }
    out += fmt::format(
        "worker {}: busy {:.0f}%, cpu {:.4f} s, waited {:.4f} s ({} times), preempted {} times; "
        "planned {:.3f} ms per iteration: {}\n",
        w, 100 * r.worker_busy[w], r.worker_cpu_seconds[w], r.worker_wait_seconds[w],
        r.worker_waits[w], r.worker_preempted[w], 1e3 * r.plan.worker_seconds[w],
        fmt::join(names, " "));
  }
  return out;
}

// Through the one Chrome-trace writer: a firing is a task event named by its actor. No
// worker names are given, so the trace holds one event per firing and nothing else.
void write_stream_trace(const std::string& path, const StreamGraph& graph,
                        const StreamRunResult& r) {
  Trace trace;
  std::vector<std::string> names;
  names.reserve(graph.nodes.size());
  for (const StreamNode& node : graph.nodes) names.push_back(node.name);
  trace.events.reserve(r.firings.size());
  for (const StreamRunResult::Firing& f : r.firings) {
    trace.events.push_back({f.node, f.worker, f.start, f.end, 0.0});
  }
  write_chrome_trace(path, trace, names, {});
}

}  // namespace cleave
