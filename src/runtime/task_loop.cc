// The task loop written once: the sequential, thread and MPI executors each run it per worker.
#include "runtime/task_loop.h"

#include <algorithm>

#include "runtime/kernels/packed_constants.h"
#include "runtime/run_time_shapes.h"

namespace cleave {

namespace {

using Clock = std::chrono::steady_clock;

// Whether this read was the last one of the run.
bool count_down(std::atomic<int>& remaining, bool concurrent) {
  if (concurrent) return remaining.fetch_sub(1) == 1;
  const int left = remaining.load(std::memory_order_relaxed) - 1;
  remaining.store(left, std::memory_order_relaxed);
  return left == 0;
}

// The last packer of a weight frees it. Every task that reads the weight has run by then, and
// the next run starts after this one has ended, so neither the bytes nor the constant are read
// meanwhile; the borrowed tensor keeps its shape (kernels compare it) without data. Reads of a
// kernel that does not pack never count down: those weights stay.
void release_packed_weights(TaskLoop& loop, LoopTask& task) {
  task.weights_checked = true;
  Graph& graph = *loop.graph;
  const Node& node = graph.node(task.node);
  for (std::size_t i : inputs_packed_for_good(graph, node, task.runner->kernel())) {
    const ValueId input = node.inputs[i];
    if (count_down(loop.packers_left[input], loop.concurrent))
      loop.released_weight_bytes += free_loaded_weight(graph, input, loop.constants[input]);
  }
}

// The constant inputs of a task's first preparation that the executor frees right after it if
// its kernel packs them for good (release_packed_weights): no other task reads them still, the
// node reads each once and its shapes are static (it is never prepared again), and no other
// graph copy shares the bytes (a layout measurement's executors).
std::vector<ValueId> loaded_bytes_go(const TaskLoop& loop, const LoopTask& task) {
  const Graph& graph = *loop.graph;
  const Node& node = graph.node(task.node);
  std::vector<ValueId> go;
  for (ValueId input : node.inputs) {
    if (input != kNoValue && !graph.value(input).shape.is_static()) return go;
  }
  for (const TaskInput& source : task.sources) {
    if (source.kind != TaskInput::Kind::kConstant) continue;
    const Value& value = graph.value(source.value);
    if (!value.initializer || !value.initializer->bytes || value.is_graph_output) continue;
    if (std::count(node.inputs.begin(), node.inputs.end(), source.value) != 1) continue;
    if (loop.packers_left[source.value].load() == 1 && value.initializer->bytes.use_count() == 1)
      go.push_back(source.value);
  }
  return go;
}

// Drops the values no later task reads: the last reference returns a buffer to its pool.
void drop_dead_values(TaskLoop& loop, LoopTask& task) {
  for (const TaskInput& source : task.sources) {
    if (source.kind != TaskInput::Kind::kTask) continue;
    LoopTask& producer = loop.tasks[source.task];
    if (!producer.remaining) continue;  // Held by the hand-off.
    if (!count_down(producer.remaining[source.output], loop.concurrent)) continue;
    if (producer.keep[source.output]) continue;
    Tensor& value = producer.outputs[source.output];
    if (loop.hold_back_bytes > 0 && producer.read_remotely[source.output] && value.storage()) {
      // Before the reference drops, so no acquire() sees it free in between. The storage may
      // be a shared Concat buffer or an aliased input: only its owner's pool knows it.
      for (BufferPool& pool : *loop.pools) pool.hold_back(*value.storage(), loop.hold_back_bytes);
    }
    value = Tensor();
  }
  for (std::size_t k = 0; k < task.outputs.size(); ++k) {
    if (task.uses[k] == 0 && !task.keep[k]) task.outputs[k] = Tensor();
  }
}

}  // namespace

LoopEnd run_worker_tasks(TaskLoop& loop, const WorkerRun& run) {
  Graph& graph = *loop.graph;
  std::vector<const Tensor*> inputs;
  std::vector<bool> constant;
  std::vector<Tensor> placed;
  const auto seconds = [&](Clock::time_point t) {
    return std::chrono::duration<double>(t - run.start).count();
  };
  for (std::size_t position = 0; position < run.order.size(); ++position) {
    const int id = run.order[position];
    LoopTask& task = loop.tasks[id];
    if (run.hooks) run.hooks->before_task(static_cast<int>(position));
    // Waiting is timed only where there is someone to wait for.
    const Clock::time_point wait_start = run.hand_off ? Clock::now() : Clock::time_point();
    inputs.clear();
    constant.clear();
    for (const TaskInput& source : task.sources) {
      const Tensor* input = nullptr;
      ValueHandOff::Wait wait = ValueHandOff::Wait::kReady;
      switch (source.kind) {
        case TaskInput::Kind::kNone:
          break;
        case TaskInput::Kind::kConstant:
          input = &loop.constants[source.value];
          break;
        case TaskInput::Kind::kGraphInput:
          if (!run.inputs.empty()) {
            input = &run.inputs[task.sample].at(graph.value(source.value).name);
          } else {
            wait = run.hand_off->await_input(source.value, task.sample, run.run,
                                             loop.timeout_seconds, &input);
          }
          break;
        case TaskInput::Kind::kTask:
          if (!run.hand_off) {
            input = &loop.tasks[source.task].outputs[source.output];
          } else {
            const std::vector<Tensor>* outputs = nullptr;
            wait = run.hand_off->await(source.task, run.run, loop.timeout_seconds, &outputs);
            if (wait == ValueHandOff::Wait::kReady) input = &(*outputs)[source.output];
          }
          break;
      }
      if (wait != ValueHandOff::Wait::kReady) return LoopEnd{wait, id, source};
      inputs.push_back(input);
      constant.push_back(source.kind == TaskInput::Kind::kConstant);
    }
    BufferPool& pool = run.pool ? *run.pool : (*loop.pools)[task.worker];
    bool any_placed = false;
    if (loop.placement) {
      std::unique_lock lock(loop.shared_mutex, std::defer_lock);
      if (loop.concurrent) lock.lock();  // Two workers may fill one shared buffer.
      any_placed = place_outputs(*loop.placement, graph.node(task.node).outputs,
                                 task.runner->specs(), loop.shared[task.sample], pool, placed);
    }
    const bool clocked = run.timed || run.hooks;
    const Clock::time_point start = clocked ? Clock::now() : Clock::time_point();
    const int threads =
        loop.worker_threads.empty() ? loop.threads : loop.worker_threads[task.worker];
    {
      const LoadedBytesGo go(loop.packers_left && !task.weights_checked
                                 ? loaded_bytes_go(loop, task)
                                 : std::vector<ValueId>());
      task.runner->run(inputs, constant, task.outputs, pool, *run.engine, *run.stream, threads,
                       any_placed ? &placed : nullptr);
    }
    placed.clear();  // Its views would keep shared buffers from the pool.
    // Another worker reads the outputs as soon as they are handed off: they must be complete.
    if (run.timed || run.hand_off) run.stream->wait();
    if (run.hooks)
      run.hooks->after_compute(std::chrono::duration<double>(Clock::now() - start).count());
    const Clock::time_point end = run.timed ? Clock::now() : Clock::time_point();
    if (run.hand_off) run.hand_off->publish(id, run.run, task.outputs);
    if (loop.packers_left && !task.weights_checked) release_packed_weights(loop, task);
    if (run.timed) {
      const double wait =
          run.hand_off ? std::chrono::duration<double>(start - wait_start).count() : 0.0;
      const Trace::Event event{id, task.worker, seconds(start), seconds(end), wait};
      // Not virtual: the recorder's own slot-per-task store, whatever derives from it.
      if (run.recorder) run.recorder->TraceRecorder::on_task_end(event);
      if (run.events) run.events->push_back(event);
      if (run.observers) {
        for (const auto& observer : *run.observers) observer->on_task_end(event);
      }
    }
    drop_dead_values(loop, task);
    if (run.hooks) run.hooks->after_task();
  }
  return LoopEnd{};
}

void reset_reads(TaskLoop& loop) {
  for (LoopTask& task : loop.tasks) {
    if (!task.remaining) continue;
    for (std::size_t k = 0; k < task.uses.size(); ++k)
      task.remaining[k].store(task.uses[k], std::memory_order_relaxed);
  }
}

std::unique_ptr<NodeRunner> make_runner(const Graph& graph, NodeId node, bool blocked_layouts,
                                        ConvolutionFamily family, ClaimPool* claim_pool,
                                        const LayoutHandOff* hand_off) {
  bool blocked = blocked_layouts;
  for (ValueId output : graph.node(node).outputs) {
    const bool handed_off = hand_off && graph.value(output).is_graph_output &&
                            hand_off->blocked_allowed(graph.value(output).name);
    blocked = blocked && (handed_off || blocked_layout_allowed(graph, output));
  }
  return std::make_unique<NodeRunner>(
      graph, node, blocked, blocked_layouts ? family : ConvolutionFamily::kBlocked, claim_pool);
}

void mark_run_time_outputs(TaskLoop& loop) {
  const std::vector<bool> run_time = run_time_nodes(*loop.graph);
  for (LoopTask& task : loop.tasks)
    if (task.runner) task.runner->set_shaped_at_run_time(run_time[task.node]);
}

void count_uses(TaskLoop& loop) {
  for (LoopTask& task : loop.tasks) {
    const std::size_t outputs = loop.graph->node(task.node).outputs.size();
    task.uses.assign(outputs, 0);
    task.read_remotely.assign(outputs, false);
    if (task.keep.size() != outputs) task.keep.assign(outputs, false);
  }
  for (const LoopTask& task : loop.tasks) {
    if (!task.runner) continue;
    for (const TaskInput& source : task.sources) {
      if (source.kind != TaskInput::Kind::kTask) continue;
      LoopTask& producer = loop.tasks[source.task];
      if (!producer.runner) continue;  // Another rank's value: the hand-off holds it.
      ++producer.uses[source.output];
      if (producer.worker != task.worker) producer.read_remotely[source.output] = true;
    }
  }
  for (LoopTask& task : loop.tasks) {
    if (task.runner) task.remaining = std::make_unique<std::atomic<int>[]>(task.uses.size());
  }
}

void count_packers(TaskLoop& loop) {
  loop.packers_left = std::make_unique<std::atomic<int>[]>(loop.graph->value_capacity());
  for (const LoopTask& task : loop.tasks) {
    if (!task.runner) continue;
    for (const TaskInput& source : task.sources)
      if (source.kind == TaskInput::Kind::kConstant) ++loop.packers_left[source.value];
  }
}

std::vector<ValueId> weights_packed_for_good(const TaskLoop& loop) {
  const Graph& graph = *loop.graph;
  std::vector<int> reads(graph.value_capacity(), 0), packed(graph.value_capacity(), 0);
  for (const LoopTask& task : loop.tasks) {
    const Node& node = graph.node(task.node);
    const Kernel* kernel = task.runner ? task.runner->kernel() : nullptr;
    const std::vector<std::size_t> for_good = inputs_packed_for_good(graph, node, kernel);
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueId input = node.inputs[i];
      if (input == kNoValue || !graph.value(input).initializer) continue;
      ++reads[input];
      if (kernel && std::count(for_good.begin(), for_good.end(), i) > 0) ++packed[input];
    }
  }
  std::vector<ValueId> result;
  for (ValueId id : graph.initializers()) {
    if (reads[id] > 0 && reads[id] == packed[id] && !graph.value(id).is_graph_output)
      result.push_back(id);
  }
  return result;
}

void add_node_seconds(const TaskLoop& loop, const Trace& trace, RunStats& stats) {
  for (const auto& event : trace.events) {
    if (event.task >= 0) stats.node_seconds[loop.tasks[event.task].node] += event.end - event.start;
  }
}

std::vector<std::string> implementations(const TaskLoop& loop, std::size_t node_capacity) {
  std::vector<std::string> result(node_capacity);
  for (const LoopTask& task : loop.tasks) {
    if (task.runner) result[task.node] = task.runner->implementation();
  }
  return result;
}

}  // namespace cleave
