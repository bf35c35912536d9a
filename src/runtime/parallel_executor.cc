// Thread executor: persistent pinned workers, a buffer pool each, values handed over in-process.
#include "runtime/parallel_executor.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <set>
#include <thread>

#include "runtime/constant_tensor.h"
#include "runtime/kernels/packed_constants.h"
#include "runtime/pinning.h"
#include "runtime/plan_inputs.h"
#include "runtime/value_hand_off.h"

namespace cleave {

namespace {

using Clock = std::chrono::steady_clock;

// Where a task finds one input (runtime/plan_inputs.h).
using InputSource = TaskInput;

struct TaskState {
  NodeId node = -1;
  int sample = 0;
  int worker = -1;
  std::vector<InputSource> sources;
  std::vector<Tensor> outputs;
  std::vector<int> uses;                          // Per output: consumer slots that read it.
  std::vector<bool> read_remotely;                // Per output: a consumer on another worker.
  std::unique_ptr<std::atomic<int>[]> remaining;  // Per output, reset each run.
};

}  // namespace

struct ParallelExecutor::Impl {
  Graph graph;
  TaskGraph tasks;
  Plan plan;
  ParallelOptions options;
  int samples = 1;
  int workers = 0;
  int threads = 0;  // Threads running the workers (<= workers).
  // Per worker, its intra-op threads: a hybrid plan's devices each have their own count.
  std::vector<int> intra_op;
  std::vector<std::vector<int>> thread_tasks;  // Per thread, its tasks in execution order.
  std::vector<TaskState> states;
  std::vector<std::vector<std::unique_ptr<NodeRunner>>> runners;  // Per worker, per order slot.
  std::vector<std::pair<int, std::size_t>> runner_of;             // Per task: worker, slot.

  // In-place Concat (see place_concat_inputs), planned after the first run for its inputs'
  // shapes. A shared buffer is acquired by whichever worker first writes into it.
  ConcatPlacement placement;
  std::string placement_inputs;
  bool in_place = false;  // For the current run.
  std::mutex shared_mutex;
  std::vector<std::vector<std::shared_ptr<Buffer>>> shared;  // Per sample, per root ValueId.
  std::vector<std::vector<int>> worker_cpus;
  std::vector<Tensor> constants;
  // With release_packed_weights: per initializer, the reads whose kernel has not packed it
  // (tasks on any thread count it down); per task, whether its kernel was looked at.
  std::unique_ptr<std::atomic<int>[]> packers_left;
  std::vector<char> weights_checked;
  std::atomic<std::size_t> released_weight_bytes{0};
  // One pool per worker: a buffer is only ever rewritten by the core that allocated it. With one
  // shared pool, a buffer freed on one core was reused by the other, and every write first
  // pulled the cache lines back across cores (on the 2-core EPYC VM a 400 KB Relu took 200 us
  // instead of 13 us). The last reader drops its reference wherever it runs; the buffer goes back
  // to its owner's pool.
  std::vector<BufferPool> pools;
  // A buffer read on another core is rewritten only after this many more bytes from its pool
  // (ParallelOptions::remote_read_hold_back_bytes). inception_x8's lc plan: each Concat of
  // worker 0 rewrote the buffer worker 1 had just read, 100-112 us instead of 31; held back
  // one L2 (1 MiB), the run took 2.69 ms instead of 3.16, with 2.2 MiB of activations, not 1.0.
  std::size_t hold_back_bytes = 0;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};

  // Run control, guarded by mutex. The hand-off wakes the workers blocked on an input with a
  // condition variable of its own, never the caller waiting for the whole run (waking it per
  // task cost ~5% at batch 1: it competed for the cores with the workers' kernels).
  std::mutex mutex;
  std::condition_variable run_changed;  // New run, shutdown, a worker finished, failure.
  int64_t run_number = 0;
  int finished_workers = 0;
  bool shutting_down = false;
  std::atomic<bool> failed{false};
  std::string failure;
  const std::vector<std::map<std::string, Tensor>>* run_inputs = nullptr;
  Clock::time_point run_start;
  std::unique_ptr<ValueHandOff> hand_off;
  TraceRecorder* recorder = nullptr;
  const std::vector<std::shared_ptr<ExecutorObserver>>* observers = nullptr;
  std::vector<std::thread> worker_threads;
  // A one-worker plan runs on the caller's thread, in the caller's OpenMP pool. A second
  // thread would start a second pool: libgomp then counts more threads than cores and stops
  // spinning between parallel regions, and GoogLeNet at 2 threads took 22 ms instead of 13 ms
  // in any process that also ran an executor on its main thread (cleave bench, a profile).
  bool on_caller = false;
  std::unique_ptr<dnnl::stream> caller_stream;

  // The last packer of a weight frees it. Every task that reads the weight has run by then, and
  // the next run starts after this one has ended, so neither the bytes nor `constants` are read
  // meanwhile; the borrowed tensor keeps its shape (kernels compare it) without data.
  void release_packed_weights(int task) {
    weights_checked[task] = 1;
    const Node& node = graph.node(states[task].node);
    const auto [worker, slot] = runner_of[task];
    for (std::size_t i : inputs_packed_for_good(graph, node, runners[worker][slot]->kernel())) {
      const ValueId input = node.inputs[i];
      if (packers_left[input].fetch_sub(1) == 1)
        released_weight_bytes += free_loaded_weight(graph, input, constants[input]);
    }
  }

  std::string thread_name(int thread) const {
    return threads == workers ? fmt::format("worker {}", thread) : fmt::format("thread {}", thread);
  }

  void fail(const std::string& message) {
    std::lock_guard lock(mutex);
    if (!failed.exchange(true)) failure = message;
    run_changed.notify_all();
    hand_off->stop();
  }

  // Plans in-place Concats from the kernels the last run prepared. A node run by several
  // tasks of one sample (a cloned producer) is left out: its copies would write one slice.
  void plan_in_place_concats() {
    std::map<std::pair<NodeId, int>, int> copies;
    std::vector<int> task_of_node(graph.node_capacity(), -1);
    for (std::size_t t = 0; t < states.size(); ++t) {
      ++copies[{states[t].node, states[t].sample}];
      task_of_node[states[t].node] = static_cast<int>(t);
    }
    placement = place_concat_inputs(graph, [&](ValueId value) -> const OutputSpec* {
      const Value& v = graph.value(value);
      if (v.producer < 0 || v.initializer || task_of_node[v.producer] < 0) return nullptr;
      for (int sample = 0; sample < samples; ++sample) {
        if (copies[{v.producer, sample}] != 1) return nullptr;
      }
      auto [worker, slot] = runner_of[task_of_node[v.producer]];
      const std::vector<OutputSpec>& specs = runners[worker][slot]->specs();
      const auto& outputs = graph.node(v.producer).outputs;
      auto index = static_cast<std::size_t>(std::find(outputs.begin(), outputs.end(), value) -
                                            outputs.begin());
      return index < specs.size() ? &specs[index] : nullptr;
    });
  }

  void run_thread_tasks(int thread, int64_t run, dnnl::stream& stream) {
    std::vector<Tensor> placed;
    std::vector<const Tensor*> inputs;
    std::vector<bool> constant;
    for (int task : thread_tasks[thread]) {
      TaskState& state = states[task];
      const auto [worker, slot] = runner_of[task];
      auto wait_start = Clock::now();
      inputs.clear();
      constant.clear();
      for (const InputSource& source : state.sources) {
        switch (source.kind) {
          case InputSource::Kind::kNone:
            inputs.push_back(nullptr);
            constant.push_back(false);
            break;
          case InputSource::Kind::kConstant:
            inputs.push_back(&constants[source.value]);
            constant.push_back(true);
            break;
          case InputSource::Kind::kGraphInput:
            inputs.push_back(&(*run_inputs)[state.sample].at(graph.value(source.value).name));
            constant.push_back(false);
            break;
          case InputSource::Kind::kTask: {
            const std::vector<Tensor>* outputs = nullptr;
            switch (hand_off->await(source.task, run, options.timeout_seconds, &outputs)) {
              case ValueHandOff::Wait::kReady:
                break;
              case ValueHandOff::Wait::kStopped:
                return;
              case ValueHandOff::Wait::kTimedOut:
                fail(fmt::format(
                    "worker {} waited more than {} s for task '{}' (node {}) on "
                    "worker {}",
                    worker, options.timeout_seconds, tasks.tasks[source.task].name,
                    graph.describe(states[source.task].node), states[source.task].worker));
                return;
            }
            inputs.push_back(&(*outputs)[source.output]);
            constant.push_back(false);
            break;
          }
        }
      }
      bool any_placed = false;
      if (in_place) {
        std::lock_guard lock(shared_mutex);  // Two workers may fill one shared buffer.
        any_placed =
            place_outputs(placement, graph.node(state.node).outputs, runners[worker][slot]->specs(),
                          shared[state.sample], pools[worker], placed);
      }
      auto start = Clock::now();
      runners[worker][slot]->run(inputs, constant, state.outputs, pools[worker], engine, stream,
                                 intra_op[worker], any_placed ? &placed : nullptr);
      placed.clear();
      stream.wait();
      auto end = Clock::now();
      hand_off->publish(task, run, state.outputs);
      if (options.release_packed_weights && !weights_checked[task]) release_packed_weights(task);
      auto seconds = [&](Clock::time_point t) {
        return std::chrono::duration<double>(t - run_start).count();
      };
      const Trace::Event event{task, worker, seconds(start), seconds(end),
                               std::chrono::duration<double>(start - wait_start).count()};
      recorder->on_task_end(event);
      for (const auto& observer : *observers) observer->on_task_end(event);
      // The last reader of a buffer hands it back to the pool by dropping the reference.
      for (const InputSource& source : state.sources) {
        if (source.kind != InputSource::Kind::kTask) continue;
        TaskState& producer = states[source.task];
        if (producer.remaining[source.output].fetch_sub(1) != 1) continue;
        Tensor& value = producer.outputs[source.output];
        if (producer.read_remotely[source.output] && value.storage() && hold_back_bytes > 0) {
          // Before the reference drops, so no acquire() sees it free in between. The storage
          // may be a shared Concat buffer or an aliased input: only its owner's pool knows it.
          for (BufferPool& pool : pools) pool.hold_back(*value.storage(), hold_back_bytes);
        }
        value = Tensor();
      }
      for (std::size_t k = 0; k < state.outputs.size(); ++k) {
        if (state.uses[k] == 0 &&
            !(k < graph.node(state.node).outputs.size() &&
              graph.value(graph.node(state.node).outputs[k]).is_graph_output)) {
          state.outputs[k] = Tensor();
        }
      }
    }
  }

  void thread_main(int thread) {
    // A folded thread runs several workers' tasks on the cores other processes left: where is
    // the scheduler's choice, not the plan's.
    if (options.pin_threads && threads == workers) pin_current_thread(worker_cpus[thread]);
    omp_set_num_threads(std::max(1, intra_op[thread]));
    dnnl::stream stream(engine);
    int64_t seen = 0;
    while (true) {
      {
        std::unique_lock lock(mutex);
        run_changed.wait(lock, [&] { return shutting_down || run_number != seen; });
        if (shutting_down) return;
        seen = run_number;
      }
      try {
        run_thread_tasks(thread, seen, stream);
      } catch (const std::exception& e) {
        fail(fmt::format("{}: {}", thread_name(thread), e.what()));
      }
      std::lock_guard lock(mutex);
      ++finished_workers;
      run_changed.notify_all();
    }
  }
};

ParallelExecutor::ParallelExecutor(const Graph& graph, const TaskGraph& tasks, const Plan& plan,
                                   ParallelOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.graph = graph;
  s.tasks = tasks;
  s.plan = plan;
  s.options = options;
  s.workers = static_cast<int>(tasks.machine.size());
  PlanInputs resolved = resolve_plan_inputs(graph, tasks, plan);
  if (static_cast<int>(plan.order.size()) != s.workers) {
    throw Error(fmt::format("plan has {} worker orders, the machine {} workers", plan.order.size(),
                            s.workers));
  }
  samples_ = resolved.samples;
  s.samples = samples_;

  s.constants.resize(graph.value_capacity());
  for (ValueId id : graph.initializers()) {
    s.constants[id] = constant_tensor(graph, id);
  }

  s.states = std::vector<TaskState>(tasks.tasks.size());
  for (std::size_t t = 0; t < tasks.tasks.size(); ++t) {
    TaskState& state = s.states[t];
    state.node = tasks.tasks[t].node;
    state.sample = static_cast<int>(tasks.tasks[t].batch_begin);
    state.worker = resolved.worker[t];
    const Node& node = graph.node(state.node);
    state.uses.assign(node.outputs.size(), 0);
    state.read_remotely.assign(node.outputs.size(), false);
    state.remaining = std::make_unique<std::atomic<int>[]>(node.outputs.size());
    state.sources = std::move(resolved.inputs[t]);
  }
  for (auto& state : s.states) {
    for (const InputSource& source : state.sources) {
      if (source.kind == InputSource::Kind::kTask) {
        ++s.states[source.task].uses[source.output];
        if (s.states[source.task].worker != state.worker)
          s.states[source.task].read_remotely[source.output] = true;
      }
    }
  }

  // Devices of unequal threads (hybrid plans) run at their own counts, unless folded threads
  // share workers, which then all run at threads_per_worker.
  s.intra_op.assign(s.workers, options.threads_per_worker);
  const bool folded = options.threads > 0 && options.threads < s.workers;
  for (int w = 1; w < s.workers && !folded; ++w) {
    if (tasks.machine.devices[w].threads != tasks.machine.devices[0].threads) {
      for (int v = 0; v < s.workers; ++v)
        s.intra_op[v] = std::max(1, tasks.machine.devices[v].threads);
      break;
    }
  }
  std::vector<int> cpus = allowed_cpus();
  s.worker_cpus.resize(s.workers);
  int first_cpu = 0;
  s.pools = std::vector<BufferPool>(s.workers);
  s.hold_back_bytes = options.remote_read_hold_back_bytes >= 0
                          ? static_cast<std::size_t>(options.remote_read_hold_back_bytes)
                          : core_cache_bytes();
  s.runners.resize(s.workers);
  s.runner_of.resize(tasks.tasks.size());
  for (int w = 0; w < s.workers; ++w) {
    const Device& device = tasks.machine.devices[w];
    if (!device.cores.empty()) {
      s.worker_cpus[w] = device.cores;
    } else if (!cpus.empty()) {
      for (int k = 0; k < s.intra_op[w]; ++k) {
        s.worker_cpus[w].push_back(cpus[(first_cpu + k) % cpus.size()]);
      }
    }
    first_cpu += s.intra_op[w];
    for (int task : plan.order[w]) {
      NodeId node = s.states[task].node;
      s.runner_of[task] = {w, s.runners[w].size()};
      bool blocked = options.blocked_layouts;
      for (ValueId output : graph.node(node).outputs)
        blocked = blocked && blocked_layout_allowed(s.graph, output);
      s.runners[w].push_back(std::make_unique<NodeRunner>(
          s.graph, node, blocked,
          options.blocked_layouts ? options.convolution_family : ConvolutionFamily::kBlocked));
    }
  }
  if (options.release_packed_weights) {
    s.packers_left = std::make_unique<std::atomic<int>[]>(graph.value_capacity());
    for (const auto& state : s.states) {
      for (const InputSource& source : state.sources)
        if (source.kind == InputSource::Kind::kConstant) ++s.packers_left[source.value];
    }
    s.weights_checked.assign(s.states.size(), 0);
  }
  s.hand_off = std::make_unique<InProcessHandOff>(static_cast<int>(tasks.tasks.size()));
  s.recorder = &trace_;
  s.observers = &observers_;
  stats_.node_seconds.assign(graph.node_capacity(), 0.0);
  s.threads = options.threads > 0 ? std::min(options.threads, s.workers) : s.workers;
  if (s.threads == s.workers) {
    s.thread_tasks = plan.order;
  } else {
    s.thread_tasks.resize(s.threads);
    for (int task : execution_order(plan, tasks))
      s.thread_tasks[plan.tasks[task].worker % s.threads].push_back(task);
  }
  s.on_caller = s.threads == 1;
  if (s.on_caller) {
    s.caller_stream = std::make_unique<dnnl::stream>(s.engine);
    return;
  }
  for (int t = 0; t < s.threads; ++t)
    s.worker_threads.emplace_back([this, t] { impl_->thread_main(t); });
}

ParallelExecutor::~ParallelExecutor() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->shutting_down = true;
    impl_->run_changed.notify_all();
  }
  for (auto& thread : impl_->worker_threads) thread.join();
}

std::vector<std::vector<Tensor>> ParallelExecutor::run(const std::vector<SampleInputs>& inputs) {
  Impl& s = *impl_;
  if (static_cast<int>(inputs.size()) != samples_) {
    throw Error(fmt::format("the plan runs {} sample(s), {} were given", samples_, inputs.size()));
  }
  for (const auto& sample : inputs) check_inputs(s.graph, sample);
  for (auto& state : s.states) {
    for (std::size_t k = 0; k < state.uses.size(); ++k) state.remaining[k].store(state.uses[k]);
  }
  std::string input_shapes;
  for (const auto& sample : inputs) input_shapes += input_shape_signature(sample);
  s.in_place =
      s.options.in_place_concat && input_shapes == s.placement_inputs && !s.placement.empty();
  s.shared.assign(s.in_place ? samples_ : 0,
                  std::vector<std::shared_ptr<Buffer>>(s.graph.value_capacity()));
  const int task_count = static_cast<int>(s.states.size());
  trace_.on_run_begin(s.workers, task_count);
  for (const auto& observer : observers_) observer->on_run_begin(s.workers, task_count);
  int64_t run;
  {
    std::unique_lock lock(s.mutex);
    s.hand_off->begin_run(s.run_number + 1);
    s.failed = false;
    s.failure.clear();
    s.finished_workers = 0;
    s.run_inputs = &inputs;
    s.run_start = Clock::now();
    run = ++s.run_number;
    if (!s.on_caller) {
      s.run_changed.notify_all();
      s.run_changed.wait(lock, [&] { return s.finished_workers == s.threads; });
    }
  }
  if (s.on_caller) {
    omp_set_num_threads(std::max(1, s.intra_op.front()));
    try {
      s.run_thread_tasks(0, run, *s.caller_stream);
    } catch (const std::exception& e) {
      s.fail(fmt::format("{}: {}", s.thread_name(0), e.what()));
    }
  }
  double makespan = 0;
  for (const auto& event : trace_.trace().events) makespan = std::max(makespan, event.end);
  trace_.on_run_end(makespan);
  for (const auto& observer : observers_) observer->on_run_end(makespan);
  if (s.failed) throw Error(s.failure);
  s.shared.clear();
  if (s.options.in_place_concat && input_shapes != s.placement_inputs) {
    s.plan_in_place_concats();
    s.placement_inputs = input_shapes;
  }

  for (const auto& event : trace_.trace().events) {
    if (event.task >= 0) stats_.node_seconds[s.states[event.task].node] += event.end - event.start;
  }
  stats_.peak_activation_bytes = peak_activation_bytes();
  stats_.concat_inputs_in_place = concat_inputs_in_place();
  ++stats_.runs;

  dnnl::stream stream(s.engine);
  std::vector<std::vector<Tensor>> outputs(samples_);
  for (int sample = 0; sample < samples_; ++sample) {
    for (ValueId id : s.graph.outputs()) {
      const Value& v = s.graph.value(id);
      if (v.initializer) {
        outputs[sample].push_back(s.constants[id]);
      } else if (v.producer < 0) {
        outputs[sample].push_back(inputs[sample].at(v.name));
      } else {
        const auto& node_outputs = s.graph.node(v.producer).outputs;
        auto index = std::find(node_outputs.begin(), node_outputs.end(), id) - node_outputs.begin();
        for (std::size_t t = 0; t < s.states.size(); ++t) {
          if (s.states[t].node == v.producer && s.states[t].sample == sample) {
            outputs[sample].push_back(to_plain(s.states[t].outputs[index], s.engine, stream));
            break;
          }
        }
      }
    }
  }
  (void)run;
  return outputs;
}

void ParallelExecutor::reset_stats() {
  stats_.node_seconds.assign(impl_->graph.node_capacity(), 0.0);
  stats_.runs = 0;
}

std::vector<Tensor> ParallelExecutor::run(const SampleInputs& inputs) {
  return run(std::vector<std::map<std::string, Tensor>>{inputs}).front();
}

int ParallelExecutor::threads() const {
  return impl_->threads;
}

int ParallelExecutor::threads_per_worker() const {
  return impl_->options.threads_per_worker;
}

int ParallelExecutor::concat_inputs_in_place() const {
  return impl_->placement.values_in_place;
}

std::size_t ParallelExecutor::released_weight_bytes() const {
  return impl_->released_weight_bytes;
}

std::size_t ParallelExecutor::peak_activation_bytes() const {
  std::size_t bytes = 0;
  for (const BufferPool& pool : impl_->pools) bytes += pool.reserved_bytes();
  return bytes;
}

}  // namespace cleave
