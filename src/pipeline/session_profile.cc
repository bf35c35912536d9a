// A session's profile: its preparations and runs as one Chrome trace (as ONNX Runtime writes).
#include "pipeline/session_profile.h"

#include <fmt/core.h>

#include <mutex>
#include <utility>
#include <vector>

#include "runtime/trace.h"

namespace cleave {

using Clock = std::chrono::steady_clock;

struct SessionProfiler::State {
  Clock::time_point start = Clock::now();
  mutable std::mutex mutex;
  ChromeTrace trace;
  int next_pid = 1;  // pid 0: the session's own rows (preparations, runs).

  double micros_since_start(Clock::time_point t) const {
    return std::chrono::duration<double, std::micro>(t - start).count();
  }
};

namespace {

// One prepared shape's runs: each run's trace on the shape's own process row, moved to the
// run's time in the profile.
class RunRecorder : public TraceRecorder {
 public:
  RunRecorder(std::shared_ptr<SessionProfiler::State> state, int pid,
              std::vector<std::string> task_names, std::vector<std::string> worker_names)
      : state_(std::move(state)),
        pid_(pid),
        task_names_(std::move(task_names)),
        worker_names_(std::move(worker_names)) {}

  void on_run_begin(int workers, int tasks) override {
    run_start_ = Clock::now();
    TraceRecorder::on_run_begin(workers, tasks);
  }

  void on_run_end(double makespan) override {
    TraceRecorder::on_run_end(makespan);
    std::lock_guard<std::mutex> lock(state_->mutex);
    // Worker rows are named once per shape.
    state_->trace.add_run(trace(), task_names_, worker_names_, TraceRows::threads, pid_,
                          state_->micros_since_start(run_start_), !named_);
    named_ = true;
  }

 private:
  std::shared_ptr<SessionProfiler::State> state_;
  int pid_;
  std::vector<std::string> task_names_;
  std::vector<std::string> worker_names_;
  Clock::time_point run_start_;
  bool named_ = false;
};

// Task and worker names of the prepared run: a plan's tasks on its workers, else the
// sequential executor's nodes in the order it runs them.
std::pair<std::vector<std::string>, std::vector<std::string>> run_names(const PreparedRun& run) {
  std::vector<std::string> tasks;
  if (run.parallel && run.plan) {
    for (const auto& task : run.plan->tasks.tasks) tasks.push_back(task.name);
    std::vector<std::string> workers;
    for (std::size_t w = 0; w < run.plan->plan.order.size(); ++w)
      workers.push_back(fmt::format("worker {}", w));
    return {tasks, workers};
  }
  if (run.sequential) {
    for (NodeId id : run.sequential->order()) tasks.push_back(run.graph.node(id).name);
  }
  return {tasks, {"sequential"}};
}

std::string strategy_of(const PreparedRun& run) {
  if (run.parallel && run.plan) return run.plan->plan.strategy;
  return "sequential";
}

}  // namespace

SessionProfiler::SessionProfiler() : state_(std::make_shared<State>()) {
  state_->trace.name_process(0, "session");
}

void SessionProfiler::watch(PreparedShape& shape) {
  auto [tasks, workers] = run_names(shape.run);
  const std::string what = describe_shapes(shape.shapes);
  std::lock_guard<std::mutex> lock(state_->mutex);
  const int pid = state_->next_pid++;
  const double end = state_->micros_since_start(Clock::now());
  state_->trace.add_slice("session_prepare", 0, 0, end - shape.prepare_seconds * 1e6,
                          shape.prepare_seconds * 1e6, "Session",
                          {{"shapes", what}, {"strategy", strategy_of(shape.run)}});
  state_->trace.name_process(pid, fmt::format("runs of {}", what));
  shape.run.executor->add_observer(
      std::make_shared<RunRecorder>(state_, pid, std::move(tasks), std::move(workers)));
}

void SessionProfiler::record_run(Clock::time_point start, Clock::time_point end) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const double ts = state_->micros_since_start(start);
  state_->trace.add_slice("model_run", 0, 0, ts, state_->micros_since_start(end) - ts, "Session");
}

std::string SessionProfiler::json() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->trace.json();
}

void SessionProfiler::write(const std::string& path) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->trace.write(path);
}

}  // namespace cleave
