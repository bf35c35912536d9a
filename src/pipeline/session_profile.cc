// A session's profile: its preparations and runs as one Chrome trace (as ONNX Runtime writes).
#include "pipeline/session_profile.h"

#include <fmt/core.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "runtime/trace.h"
#include "support/atomic_output.h"

namespace cleave {

using Clock = std::chrono::steady_clock;

struct SessionProfiler::State {
  Clock::time_point start = Clock::now();
  mutable std::mutex mutex;
  nlohmann::json events = nlohmann::json::array();
  int next_pid = 1;  // pid 0: the session's own rows (preparations, runs).

  double micros_since_start(Clock::time_point t) const {
    return std::chrono::duration<double, std::micro>(t - start).count();
  }
};

namespace {

// One prepared shape's runs: each run's trace in chrome_trace_json's form, moved to the run's
// time in the profile and to the shape's own process row.
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
    nlohmann::json run =
        nlohmann::json::parse(chrome_trace_json(trace(), task_names_, worker_names_));
    std::lock_guard<std::mutex> lock(state_->mutex);
    const double offset = state_->micros_since_start(run_start_);
    for (nlohmann::json& event : run["traceEvents"]) {
      event["pid"] = pid_;
      if (event.contains("ts")) event["ts"] = event["ts"].get<double>() + offset;
      // Metadata rows are named once per shape.
      if (event["ph"] == "M" && named_) continue;
      state_->events.push_back(std::move(event));
    }
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
  state_->events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"args", {{"name", "session"}}}});
}

void SessionProfiler::watch(PreparedShape& shape) {
  auto [tasks, workers] = run_names(shape.run);
  const std::string what = describe_shapes(shape.shapes);
  std::lock_guard<std::mutex> lock(state_->mutex);
  const int pid = state_->next_pid++;
  const double end = state_->micros_since_start(Clock::now());
  state_->events.push_back({{"name", "session_prepare"},
                            {"cat", "Session"},
                            {"ph", "X"},
                            {"pid", 0},
                            {"tid", 0},
                            {"ts", end - shape.prepare_seconds * 1e6},
                            {"dur", shape.prepare_seconds * 1e6},
                            {"args", {{"shapes", what}, {"strategy", strategy_of(shape.run)}}}});
  state_->events.push_back({{"name", "process_name"},
                            {"ph", "M"},
                            {"pid", pid},
                            {"args", {{"name", fmt::format("runs of {}", what)}}}});
  shape.run.executor->add_observer(
      std::make_shared<RunRecorder>(state_, pid, std::move(tasks), std::move(workers)));
}

void SessionProfiler::record_run(Clock::time_point start, Clock::time_point end) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const double ts = state_->micros_since_start(start);
  state_->events.push_back({{"name", "model_run"},
                            {"cat", "Session"},
                            {"ph", "X"},
                            {"pid", 0},
                            {"tid", 0},
                            {"ts", ts},
                            {"dur", state_->micros_since_start(end) - ts}});
}

std::string SessionProfiler::json() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return nlohmann::json{{"traceEvents", state_->events}, {"displayTimeUnit", "ms"}}.dump(1);
}

void SessionProfiler::write(const std::string& path) const {
  write_file_atomically(path, json());
}

}  // namespace cleave
