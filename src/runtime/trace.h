// What a run really did: the Trace, the observer interface executors call, and the Chrome-trace
// writer.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/plan.h"
#include "plan/simulator.h"
#include "plan/task_graph.h"

namespace cleave {

/// What one run really did: per task its worker, start and end, and how long the worker
/// waited for inputs before it (the Ramiel paper's "slack"), all in seconds from run start.
struct Trace {
  struct Event {
    int task = -1;
    int worker = -1;
    double start = 0;
    double end = 0;
    double wait = 0;
  };
  std::vector<Event> events;  ///< Per task id.
  double makespan = 0;
};

/// Watches an executor's runs (as Taskflow's ObserverInterface): the executor calls it around
/// each run and after each task. An observer must be cheap, for it runs between kernels.
class ExecutorObserver {
 public:
  virtual ~ExecutorObserver() = default;
  /// Before a run, on the caller's thread: the run's workers and tasks (task ids are below
  /// `tasks`).
  virtual void on_run_begin(int workers, int tasks) = 0;
  /// After a task ran, on its worker's thread. Tasks on different workers end concurrently,
  /// each task once per run, so an observer writing per-task slots needs no lock.
  virtual void on_task_end(const Trace::Event& event) = 0;
  /// After every worker stopped (also when the run failed), on the caller's thread.
  virtual void on_run_end(double makespan) = 0;
};

/// Keeps the Trace of the last run.
class TraceRecorder : public ExecutorObserver {
 public:
  void on_run_begin(int workers, int tasks) override;
  void on_task_end(const Trace::Event& event) override;
  void on_run_end(double makespan) override;
  const Trace& trace() const { return trace_; }

 private:
  Trace trace_;
};

/// How a run's workers become rows of a Chrome trace: threads of one process (a run's
/// workers) or processes of their own (ranks, one per process).
enum class TraceRows { threads, processes };

/// Chrome trace-event JSON (chrome://tracing, Perfetto): the one writer every trace goes
/// through. Rows are processes (pid) holding threads (tid); times are in microseconds.
class ChromeTrace {
 public:
  /// Names the process row `pid` (a rank, a session's runs of one shape).
  void name_process(int pid, const std::string& name);
  /// One slice on row (pid, tid); `category` and `args` are left out when empty.
  void add_slice(const std::string& name, int pid, int tid, double start_us, double duration_us,
                 const std::string& category = {}, nlohmann::json args = {});
  /// A run's tasks named by `task_names` (indexed by Trace::Event::task) on rows named by
  /// `worker_names`: threads of process `pid` or processes of their own (`rows`), moved
  /// `offset_us` later. `name_rows` false leaves the rows unnamed (named by an earlier run).
  void add_run(const Trace& trace, const std::vector<std::string>& task_names,
               const std::vector<std::string>& worker_names, TraceRows rows = TraceRows::threads,
               int pid = 0, double offset_us = 0, bool name_rows = true);
  std::string json() const;
  /// Writes json() to `path` atomically.
  void write(const std::string& path) const;

 private:
  nlohmann::json events_ = nlohmann::json::array();
};

/// Chrome trace-event JSON of one run (ChromeTrace::add_run).
std::string chrome_trace_json(const Trace& trace, const std::vector<std::string>& task_names,
                              const std::vector<std::string>& worker_names,
                              TraceRows rows = TraceRows::threads);
/// The same for a plan's run: tasks and workers named by the task graph and its machine.
std::string chrome_trace_json(const Trace& trace, const TaskGraph& tasks, const Plan& plan);
/// Writes chrome_trace_json of one run to `path` atomically.
void write_chrome_trace(const std::string& path, const Trace& trace,
                        const std::vector<std::string>& task_names,
                        const std::vector<std::string>& worker_names,
                        TraceRows rows = TraceRows::threads);

/// An observer that keeps the last run and writes it as Chrome-trace JSON.
class ChromeTraceWriter : public TraceRecorder {
 public:
  ChromeTraceWriter(std::vector<std::string> task_names, std::vector<std::string> worker_names);
  /// Names from a plan's task graph and machine.
  ChromeTraceWriter(const TaskGraph& tasks, const Plan& plan);
  std::string json() const;
  /// Writes json() to `path` atomically.
  void write(const std::string& path) const;

 private:
  std::vector<std::string> task_names_;
  std::vector<std::string> worker_names_;
};

/// The measured timeline as a Plan (start/finish from the trace), for the Gantt chart.
Plan measured_plan(const Plan& plan, const Trace& trace);
/// The trace in the simulator's terms (per-task times, per-worker busy/idle), for charts and
/// for comparing predicted with measured timelines.
Simulation simulation_from_trace(const Trace& trace, const Plan& plan);

/// A trace whose tasks run many times (a pipeline's stages fire once per sample) as the plan,
/// task graph and simulation the Gantt writer draws: one task per event, named by its task
/// and firing ("stage1 #3"), on the worker that ran it.
struct EventTimeline {
  Plan plan;
  TaskGraph tasks;
  Simulation simulation;
};
EventTimeline event_timeline(const Trace& trace, const std::vector<std::string>& task_names,
                             const std::vector<std::string>& worker_names);

}  // namespace cleave
