// In-context node times: inside whole sequential runs in order, alone or beside busy cores.
#include "cost/context_profile.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "runtime/pinning.h"
#include "support/timing.h"

namespace cleave {

namespace {

double seconds_between(std::chrono::steady_clock::time_point start,
                       std::chrono::steady_clock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

// Threads that run the model over and over until destroyed: the busy cores a plan's other
// workers make. Each has its own executor, so they share nothing with the timed runs but the
// graph's read-only weights and the inputs.
class BusyNeighbours {
 public:
  BusyNeighbours(const Graph& graph, const ExecutorOptions& timed, const SampleInputs& inputs,
                 int count) {
    ExecutorOptions options = timed;
    options.threads = 1;
    options.collect_stats = false;
    const std::vector<std::vector<int>> cpus =
        busy_neighbour_cpus(allowed_cpus(), online_cpus(), count);
    for (int i = 0; i < count; ++i) {
      const std::vector<int> pin = cpus.empty() ? std::vector<int>() : cpus[i];
      threads_.emplace_back([this, &graph, options, &inputs, pin] {
        try {
          pin_current_thread(pin);
          Executor executor(graph, options);
          executor.run(inputs);
          started_.fetch_add(1);
          while (!stop_.load()) executor.run(inputs);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mutex_);
          if (!error_) error_ = std::current_exception();
          started_.fetch_add(1);
        }
      });
    }
  }
  ~BusyNeighbours() {
    stop_.store(true);
    for (std::thread& thread : threads_) thread.join();
  }
  BusyNeighbours(const BusyNeighbours&) = delete;
  BusyNeighbours& operator=(const BusyNeighbours&) = delete;

  // Timing starts once each has run once (its kernels prepared): the neighbours compute, they
  // do not prepare.
  void wait_until_started() {
    while (started_.load() < static_cast<int>(threads_.size()))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    rethrow();
  }

  void rethrow() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> started_{0};
  std::mutex mutex_;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace

std::vector<std::vector<int>> busy_neighbour_cpus(const std::vector<int>& allowed,
                                                  const std::vector<int>& online, int count) {
  if (count <= 0 || static_cast<int>(allowed.size()) >= count + 1) return {};
  std::vector<int> others;
  for (int cpu : online)
    if (std::find(allowed.begin(), allowed.end(), cpu) == allowed.end()) others.push_back(cpu);
  if (others.empty()) return {};
  std::vector<std::vector<int>> cpus;
  for (int i = 0; i < count; ++i)
    cpus.push_back({others[static_cast<std::size_t>(i) % others.size()]});
  return cpus;
}

ContextTiming time_in_context(const Graph& graph, const ExecutorOptions& options,
                              const SampleInputs& inputs, const ContextRuns& runs) {
  ExecutorOptions timed_options = options;
  timed_options.collect_stats = true;
  Executor executor(graph, timed_options);
  for (int i = 0; i < std::max(1, runs.warmup); ++i) executor.run(inputs);
  std::unique_ptr<BusyNeighbours> neighbours;
  if (runs.busy_neighbours > 0) {
    neighbours = std::make_unique<BusyNeighbours>(graph, options, inputs, runs.busy_neighbours);
    neighbours->wait_until_started();
  }
  std::vector<std::vector<double>> samples(graph.node_capacity());
  std::vector<double> whole;
  std::vector<double> previous = executor.stats().node_seconds;
  const auto first = std::chrono::steady_clock::now();
  while (static_cast<int>(whole.size()) < std::max(1, runs.repeat) ||
         (seconds_between(first, std::chrono::steady_clock::now()) < runs.min_seconds &&
          static_cast<int>(whole.size()) < runs.max_runs)) {
    const auto start = std::chrono::steady_clock::now();
    executor.run(inputs);
    whole.push_back(seconds_between(start, std::chrono::steady_clock::now()));
    const std::vector<double>& totals = executor.stats().node_seconds;
    for (NodeId id : graph.node_ids()) samples[id].push_back(totals[id] - previous[id]);
    previous = totals;
  }
  if (neighbours) neighbours->rethrow();
  neighbours.reset();
  ContextTiming result;
  result.runs = static_cast<int>(whole.size());
  result.run_seconds = median_of(whole);
  result.node_seconds.assign(graph.node_capacity(), 0.0);
  double summed = 0;
  for (NodeId id : graph.node_ids()) {
    result.node_seconds[id] = median_of(samples[id]);
    summed += result.node_seconds[id];
  }
  // The gaps between nodes (inputs, outputs, buffers) belong to the run: spread over its nodes.
  result.calibration = summed > 0 ? result.run_seconds / summed : 1.0;
  for (NodeId id : graph.node_ids()) result.node_seconds[id] *= result.calibration;
  return result;
}

}  // namespace cleave
