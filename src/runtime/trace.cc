// Trace recording and its Chrome trace-event form.
#include "runtime/trace.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "support/atomic_output.h"

namespace cleave {

void TraceRecorder::on_run_begin(int /*workers*/, int tasks) {
  trace_.events.assign(static_cast<std::size_t>(tasks), Trace::Event());
  trace_.makespan = 0;
}

void TraceRecorder::on_task_end(const Trace::Event& event) {
  if (event.task >= 0 && static_cast<std::size_t>(event.task) < trace_.events.size())
    trace_.events[event.task] = event;
}

void TraceRecorder::on_run_end(double makespan) {
  trace_.makespan = makespan;
}

void ChromeTrace::name_process(int pid, const std::string& name) {
  events_.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}});
}

void ChromeTrace::add_slice(const std::string& name, int pid, int tid, double start_us,
                            double duration_us, const std::string& category, nlohmann::json args) {
  nlohmann::json slice = {{"name", name}, {"ph", "X"},      {"pid", pid},
                          {"tid", tid},   {"ts", start_us}, {"dur", duration_us}};
  if (!category.empty()) slice["cat"] = category;
  if (!args.empty()) slice["args"] = std::move(args);
  events_.push_back(std::move(slice));
}

void ChromeTrace::add_run(const Trace& trace, const std::vector<std::string>& task_names,
                          const std::vector<std::string>& worker_names, TraceRows rows, int pid,
                          double offset_us, bool name_rows) {
  const bool processes = rows == TraceRows::processes;
  for (std::size_t w = 0; name_rows && w < worker_names.size(); ++w) {
    if (processes) {
      name_process(static_cast<int>(w), worker_names[w]);
    } else {
      events_.push_back({{"name", "thread_name"},
                         {"ph", "M"},
                         {"pid", pid},
                         {"tid", w},
                         {"args", {{"name", worker_names[w]}}}});
    }
  }
  for (const auto& event : trace.events) {
    if (event.task < 0) continue;
    const std::string name = static_cast<std::size_t>(event.task) < task_names.size()
                                 ? task_names[event.task]
                                 : std::to_string(event.task);
    add_slice(name, processes ? event.worker : pid, processes ? 0 : event.worker,
              event.start * 1e6 + offset_us, (event.end - event.start) * 1e6, {},
              {{"wait_us", event.wait * 1e6}});
  }
}

std::string ChromeTrace::json() const {
  return nlohmann::json{{"traceEvents", events_}, {"displayTimeUnit", "ms"}}.dump(1);
}

void ChromeTrace::write(const std::string& path) const {
  write_file_atomically(path, json());
}

std::string chrome_trace_json(const Trace& trace, const std::vector<std::string>& task_names,
                              const std::vector<std::string>& worker_names, TraceRows rows) {
  ChromeTrace chrome;
  chrome.add_run(trace, task_names, worker_names, rows);
  return chrome.json();
}

void write_chrome_trace(const std::string& path, const Trace& trace,
                        const std::vector<std::string>& task_names,
                        const std::vector<std::string>& worker_names, TraceRows rows) {
  write_file_atomically(path, chrome_trace_json(trace, task_names, worker_names, rows));
}

namespace {

std::vector<std::string> task_names_of(const TaskGraph& tasks) {
  std::vector<std::string> names;
  names.reserve(tasks.tasks.size());
  for (const Task& task : tasks.tasks) names.push_back(task.name);
  return names;
}

std::vector<std::string> worker_names_of(const TaskGraph& tasks, const Plan& plan) {
  std::vector<std::string> names;
  for (std::size_t w = 0; w < plan.order.size(); ++w)
    names.push_back(tasks.machine.devices[w].name);
  return names;
}

}  // namespace

std::string chrome_trace_json(const Trace& trace, const TaskGraph& tasks, const Plan& plan) {
  return chrome_trace_json(trace, task_names_of(tasks), worker_names_of(tasks, plan));
}

ChromeTraceWriter::ChromeTraceWriter(std::vector<std::string> task_names,
                                     std::vector<std::string> worker_names)
    : task_names_(std::move(task_names)), worker_names_(std::move(worker_names)) {}

ChromeTraceWriter::ChromeTraceWriter(const TaskGraph& tasks, const Plan& plan)
    : ChromeTraceWriter(task_names_of(tasks), worker_names_of(tasks, plan)) {}

std::string ChromeTraceWriter::json() const {
  return chrome_trace_json(trace(), task_names_, worker_names_);
}

void ChromeTraceWriter::write(const std::string& path) const {
  write_chrome_trace(path, trace(), task_names_, worker_names_);
}

Plan measured_plan(const Plan& plan, const Trace& trace) {
  Plan measured = plan;
  for (const auto& event : trace.events) {
    if (event.task < 0) continue;
    measured.tasks[event.task].start = event.start;
    measured.tasks[event.task].finish = event.end;
  }
  measured.makespan = trace.makespan;
  return measured;
}

Simulation simulation_from_trace(const Trace& trace, const Plan& plan) {
  Simulation simulation;
  simulation.start.assign(plan.tasks.size(), 0);
  simulation.finish.assign(plan.tasks.size(), 0);
  simulation.busy.assign(plan.order.size(), 0);
  for (const auto& event : trace.events) {
    if (event.task < 0) continue;
    simulation.start[event.task] = event.start;
    simulation.finish[event.task] = event.end;
    simulation.busy[event.worker] += event.end - event.start;
  }
  simulation.makespan = trace.makespan;
  for (double busy : simulation.busy) simulation.idle.push_back(trace.makespan - busy);
  return simulation;
}

EventTimeline event_timeline(const Trace& trace, const std::vector<std::string>& task_names,
                             const std::vector<std::string>& worker_names) {
  EventTimeline out;
  out.plan.strategy = "measured";
  for (const std::string& name : worker_names) {
    Device device;
    device.name = name;
    out.tasks.machine.devices.push_back(device);
  }
  out.plan.order.resize(worker_names.size());
  out.simulation.busy.assign(worker_names.size(), 0.0);
  std::vector<int> firings(task_names.size(), 0);
  for (const Trace::Event& event : trace.events) {
    if (event.task < 0 || static_cast<std::size_t>(event.task) >= task_names.size() ||
        event.worker < 0 || static_cast<std::size_t>(event.worker) >= worker_names.size())
      continue;
    const int id = static_cast<int>(out.tasks.tasks.size());
    Task task;
    task.name = task_names[event.task] + " #" + std::to_string(firings[event.task]++);
    out.tasks.tasks.push_back(task);
    out.plan.tasks.push_back({id, event.worker, event.start, event.end});
    out.plan.order[event.worker].push_back(id);
    out.simulation.start.push_back(event.start);
    out.simulation.finish.push_back(event.end);
    out.simulation.busy[event.worker] += event.end - event.start;
  }
  out.plan.makespan = out.simulation.makespan = trace.makespan;
  for (double busy : out.simulation.busy) out.simulation.idle.push_back(trace.makespan - busy);
  return out;
}

}  // namespace cleave
