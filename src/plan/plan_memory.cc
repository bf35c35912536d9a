// Activation memory a plan holds on each worker (plan_memory.h).
#include "plan/plan_memory.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace cleave {

namespace {

// One worker's holdings as events (time, order, bytes): at one instant, values that go free
// first (a task's inputs may go as its output comes), then values arrive, then values held
// for no time at all go.
struct Holdings {
  std::vector<std::tuple<double, int, double>> events;

  void hold(double from, double until, double bytes) {
    if (bytes <= 0) return;
    events.emplace_back(from, 1, bytes);
    if (until > from) {
      events.emplace_back(until, 0, -bytes);
    } else {
      events.emplace_back(from, 2, -bytes);
    }
  }

  double peak() {
    std::sort(events.begin(), events.end());
    double held = 0, most = 0;
    for (const auto& [time, order, bytes] : events) most = std::max(most, held += bytes);
    return most;
  }
};

}  // namespace

std::vector<double> peak_activation_bytes_per_worker(const Plan& plan, const TaskGraph& graph) {
  const std::size_t workers = graph.machine.size();
  std::vector<const PlannedTask*> placed(graph.tasks.size(), nullptr);
  for (const PlannedTask& p : plan.tasks) {
    if (p.task >= 0 && static_cast<std::size_t>(p.task) < placed.size() && p.worker >= 0 &&
        static_cast<std::size_t>(p.worker) < workers)
      placed[p.task] = &p;
  }
  // Per producer, per consuming worker: the bytes it reads, when the last reader there finishes
  // and when the last one starts.
  struct Readers {
    double bytes = 0, last_finish = 0, last_start = 0;
  };
  std::vector<std::map<int, Readers>> readers(graph.tasks.size());
  for (std::size_t e = 0; e < graph.edges.size(); ++e) {
    const auto [producer, consumer] = graph.edges[e];
    if (!placed.at(producer) || !placed.at(consumer)) continue;
    Readers& r = readers[producer][placed[consumer]->worker];
    r.bytes = std::max(r.bytes, graph.bytes_on_edge(e));
    r.last_finish = std::max(r.last_finish, placed[consumer]->finish);
    r.last_start = std::max(r.last_start, placed[consumer]->start);
  }
  std::vector<Holdings> held(workers);
  for (std::size_t task = 0; task < graph.tasks.size(); ++task) {
    const PlannedTask* p = placed[task];
    if (!p) continue;
    double own_until = readers[task].empty() ? plan.makespan : p->finish;
    double own_bytes = graph.tasks[task].output_bytes;
    for (const auto& [worker, r] : readers[task]) {
      own_bytes = std::max(own_bytes, r.bytes);
      if (worker == p->worker) {
        own_until = std::max(own_until, r.last_finish);
      } else {
        own_until = std::max(own_until, r.last_start);
        held[worker].hold(p->finish, r.last_finish, r.bytes);
      }
    }
    held[p->worker].hold(p->start, own_until, own_bytes);
  }
  std::vector<double> peaks(workers, 0.0);
  for (std::size_t w = 0; w < workers; ++w) peaks[w] = held[w].peak();
  return peaks;
}

std::vector<double> pipeline_activation_bytes(const TaskGraph& graph,
                                              const std::vector<int>& stage_of_task, int samples) {
  const int stages = static_cast<int>(graph.machine.size());
  Plan plan;
  plan.order.resize(stages);
  double now = 0;
  for (std::size_t task = 0; task < graph.tasks.size(); ++task) {
    const int stage = stage_of_task.at(task);
    const double seconds = graph.tasks[task].time.at(stage);
    plan.tasks.push_back({static_cast<int>(task), stage, now, now + seconds});
    plan.order[stage].push_back(static_cast<int>(task));
    now += seconds;
  }
  plan.makespan = now;
  std::vector<double> peaks = peak_activation_bytes_per_worker(plan, graph);
  if (samples <= 1) return peaks;
  // Per producer, per later stage reading it: the bytes queued there for the next sample.
  std::map<std::pair<int, int>, double> queued;
  for (std::size_t e = 0; e < graph.edges.size(); ++e) {
    const auto [producer, consumer] = graph.edges[e];
    const int to = stage_of_task.at(consumer);
    if (stage_of_task.at(producer) == to) continue;
    double& bytes = queued[{producer, to}];
    bytes = std::max(bytes, graph.bytes_on_edge(e));
  }
  for (const auto& [where, bytes] : queued) peaks[where.second] += bytes;
  return peaks;
}

}  // namespace cleave
