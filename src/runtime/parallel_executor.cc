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
#include "runtime/pinning.h"
#include "runtime/plan_inputs.h"
#include "runtime/task_concat_placement.h"
#include "runtime/task_loop.h"
#include "runtime/value_hand_off.h"
#include "runtime/wait_policy.h"

namespace cleave {

namespace {
using Clock = std::chrono::steady_clock;
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
  TaskLoop loop;                               // Per task: node, sample, worker, values.

  // In-place Concat (see place_concat_inputs), planned after the first run for its inputs'
  // shapes. A shared buffer is acquired by whichever worker first writes into it.
  ConcatPlacement placement;
  std::string placement_inputs;
  std::string stats_inputs;  // Input shapes of the run that filled RunStats::implementations.
  std::vector<std::vector<int>> worker_cpus;
  // One pool per worker: a buffer is only ever rewritten by the core that allocated it. With one
  // shared pool, a buffer freed on one core was reused by the other, and every write first
  // pulled the cache lines back across cores (on the 2-core EPYC VM a 400 KB Relu took 200 us
  // instead of 13 us). The last reader drops its reference wherever it runs; the buffer goes back
  // to its owner's pool. A buffer read on another core is rewritten only after
  // TaskLoop::hold_back_bytes more bytes from its pool. inception_x8's lc plan: each Concat of
  // worker 0 rewrote the buffer worker 1 had just read, 100-112 us instead of 31; held back
  // one L2 (1 MiB), the run took 2.69 ms instead of 3.16, with 2.2 MiB of activations, not 1.0.
  std::vector<BufferPool> pools;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};

  // Run control, guarded by mutex. The hand-off wakes the workers blocked on an input with a
  // condition variable of its own, never the caller waiting for the whole run (waking it per
  // task cost ~5% at batch 1: it competed for the cores with the workers' kernels).
  std::mutex mutex;
  std::condition_variable run_changed;  // New run, shutdown, a worker finished, failure.
  int64_t run_number = 0;
  // Threads other than the caller's that finished this run; atomic so that the caller can spin
  // on it before it sleeps.
  std::atomic<int> finished_workers{0};
  bool shutting_down = false;
  std::atomic<bool> failed{false};
  std::string failure;
  const std::vector<std::map<std::string, Tensor>>* run_inputs = nullptr;
  Clock::time_point run_start;
  std::unique_ptr<ValueHandOff> hand_off;
  TraceRecorder* recorder = nullptr;
  const std::vector<std::shared_ptr<ExecutorObserver>>* observers = nullptr;
  // Threads 1.. of the plan; thread 0 is the caller's.
  std::vector<std::thread> worker_threads;
  // Thread 0 (worker 0's tasks, all of a one-worker plan's) runs on the caller's thread, in the
  // caller's OpenMP pool. A thread of its own would start a second pool: libgomp then counts
  // more threads than cores and stops spinning between parallel regions, and GoogLeNet at 2
  // threads took 22 ms instead of 13 ms in any process that also ran an executor on its main
  // thread (cleave bench, a profile). And every run would pay two wake-ups on its critical path,
  // the caller waking worker 0 and worker 0 waking the caller: on the 2-vCPU EPYC VM a wake-up
  // on the other CPU took 60-85 us (median, under load) and a system call 2.6-3.1 us, and
  // main's runs of a plan with every task on worker 0 made 14-17 futex calls each, this 0.
  // The caller is pinned to worker 0's cores only for the run, and only where worker 0 runs
  // one thread (see run()).
  std::unique_ptr<dnnl::stream> caller_stream;

  std::string thread_name(int thread) const {
    return threads == workers ? fmt::format("worker {}", thread) : fmt::format("thread {}", thread);
  }

  void fail(const std::string& message) {
    std::lock_guard lock(mutex);
    if (!failed.exchange(true)) failure = message;
    run_changed.notify_all();
    hand_off->stop();
  }

  // Plans in-place Concats from the kernels the last run prepared, over every task.
  void plan_in_place_concats() {
    std::vector<int> all(loop.tasks.size());
    for (std::size_t t = 0; t < all.size(); ++t) all[t] = static_cast<int>(t);
    placement = place_concat_inputs_of_tasks(graph, loop, all, samples);
  }

  void run_thread_tasks(int thread, int64_t run, dnnl::stream& stream) {
    WorkerRun worker;
    worker.order = thread_tasks[thread];
    worker.run = run;
    worker.engine = &engine;
    worker.stream = &stream;
    worker.hand_off = hand_off.get();
    worker.inputs = *run_inputs;
    worker.start = run_start;
    worker.recorder = recorder;
    worker.observers = observers;
    const LoopEnd end = run_worker_tasks(loop, worker);
    if (end.wait != ValueHandOff::Wait::kTimedOut) return;  // kStopped: failed elsewhere.
    const int awaited = end.awaited.task;
    fail(fmt::format("worker {} waited more than {} s for task '{}' (node {}) on worker {}",
                     loop.tasks[end.task].worker, options.timeout_seconds,
                     tasks.tasks[awaited].name, graph.describe(loop.tasks[awaited].node),
                     loop.tasks[awaited].worker));
  }

  // `seen`: the run number when the thread starts; it waits for the next one. Not thread 0.
  void thread_main(int thread, int64_t seen) {
    // A folded thread runs several workers' tasks on the cores other processes left: where is
    // the scheduler's choice, not the plan's.
    if (options.pin_threads && threads == workers) pin_current_thread(worker_cpus[thread]);
    omp_set_num_threads(std::max(1, intra_op[thread]));
    dnnl::stream stream(engine);
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
      finished_workers.fetch_add(1);
      run_changed.notify_all();
    }
  }

  // After the caller's own tasks: the other threads' end, spun on first (they usually finished
  // before the caller, whose worker has the critical path), so that no wake-up is paid.
  void wait_for_workers() {
    const int others = busy_threads();
    if (others == 0) return;
    spin_then_wait(mutex, run_changed, [&] { return finished_workers.load() == others; });
  }

  // Threads other than the caller's that have tasks: those start_threads starts.
  int busy_threads() const {
    int busy = 0;
    for (int t = 1; t < threads; ++t) busy += thread_tasks[t].empty() ? 0 : 1;
    return busy;
  }

  // Not while a run is under way (ExecutorInterface's contract: one run at a time).
  void start_threads() {
    int64_t current = 0;
    {
      std::lock_guard lock(mutex);
      shutting_down = false;
      current = run_number;
    }
    // A thread without tasks (lc keeps a small model on worker 0) is not started: waking it
    // each run would cost its core a wake-up and the caller a futex call, for nothing.
    for (int t = 1; t < threads; ++t) {
      if (!thread_tasks[t].empty())
        worker_threads.emplace_back([this, t, current] { thread_main(t, current); });
    }
  }

  void join_threads() {
    {
      std::lock_guard lock(mutex);
      shutting_down = true;
      run_changed.notify_all();
    }
    for (auto& thread : worker_threads) thread.join();
    worker_threads.clear();
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

  TaskLoop& loop = s.loop;
  loop.graph = &s.graph;
  loop.threads = options.threads_per_worker;
  loop.concurrent = true;
  loop.timeout_seconds = options.timeout_seconds;
  loop.constants.resize(graph.value_capacity());
  for (ValueId id : graph.initializers()) loop.constants[id] = constant_tensor(graph, id);
  loop.tasks.resize(tasks.tasks.size());
  for (std::size_t t = 0; t < tasks.tasks.size(); ++t) {
    LoopTask& task = loop.tasks[t];
    task.node = tasks.tasks[t].node;
    task.sample = static_cast<int>(tasks.tasks[t].batch_begin);
    task.worker = resolved.worker[t];
    task.sources = std::move(resolved.inputs[t]);
    for (ValueId output : graph.node(task.node).outputs)
      task.keep.push_back(graph.value(output).is_graph_output);
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
  loop.worker_threads = s.intra_op;
  std::vector<int> cpus = allowed_cpus();
  s.worker_cpus.resize(s.workers);
  int first_cpu = 0;
  s.pools = std::vector<BufferPool>(s.workers);
  loop.pools = &s.pools;
  loop.hold_back_bytes = options.remote_read_hold_back_bytes >= 0
                             ? static_cast<std::size_t>(options.remote_read_hold_back_bytes)
                             : core_cache_bytes();
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
      loop.tasks[task].runner = make_runner(s.graph, loop.tasks[task].node, options.blocked_layouts,
                                            options.convolution_family);
    }
  }
  mark_run_time_outputs(loop);
  count_uses(loop);
  if (options.release_packed_weights) count_packers(loop);
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
  s.caller_stream = std::make_unique<dnnl::stream>(s.engine);
  s.start_threads();
}

ParallelExecutor::~ParallelExecutor() {
  impl_->join_threads();
}

void ParallelExecutor::end_threads() {
  impl_->join_threads();
}

std::vector<std::vector<Tensor>> ParallelExecutor::run(const std::vector<SampleInputs>& inputs) {
  Impl& s = *impl_;
  if (static_cast<int>(inputs.size()) != samples_) {
    throw Error(fmt::format("the plan runs {} sample(s), {} were given", samples_, inputs.size()));
  }
  for (const auto& sample : inputs) check_inputs(s.graph, sample);
  if (static_cast<int>(s.worker_threads.size()) != s.busy_threads()) s.start_threads();
  reset_reads(s.loop);
  std::string input_shapes;
  for (const auto& sample : inputs) input_shapes += input_shape_signature(sample);
  const bool in_place =
      s.options.in_place_concat && input_shapes == s.placement_inputs && !s.placement.empty();
  s.loop.placement = in_place ? &s.placement : nullptr;
  s.loop.shared.assign(in_place ? samples_ : 0,
                       std::vector<std::shared_ptr<Buffer>>(s.graph.value_capacity()));
  const int task_count = static_cast<int>(s.loop.tasks.size());
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
    if (!s.worker_threads.empty()) s.run_changed.notify_all();
  }
  {
    // The caller's team for worker 0, given back after the run (a session's next call may run
    // the sequential executor at its own count).
    const int caller_team = omp_get_max_threads();
    omp_set_num_threads(std::max(1, s.intra_op.front()));
    // Pinned to worker 0's cores for the run, so that it never shares a core with a worker
    // spinning on its next input. Only on one thread: a team the caller made while pinned would
    // keep the binding after the run.
    const bool pin = s.options.pin_threads && s.threads == s.workers && s.intra_op.front() == 1 &&
                     !s.worker_threads.empty();
    const ThreadPinScope pinned(pin ? s.worker_cpus.front() : std::vector<int>());
    try {
      s.run_thread_tasks(0, run, *s.caller_stream);
    } catch (const std::exception& e) {
      s.fail(fmt::format("{}: {}", s.thread_name(0), e.what()));
    }
    omp_set_num_threads(caller_team);
  }
  s.wait_for_workers();
  double makespan = 0;
  for (const auto& event : trace_.trace().events) makespan = std::max(makespan, event.end);
  trace_.on_run_end(makespan);
  for (const auto& observer : observers_) observer->on_run_end(makespan);
  if (s.failed) throw Error(s.failure);
  s.loop.shared.clear();
  if (s.options.in_place_concat && input_shapes != s.placement_inputs) {
    s.plan_in_place_concats();
    s.placement_inputs = input_shapes;
  }

  add_node_seconds(s.loop, trace_.trace(), stats_);
  stats_.peak_activation_bytes = 0;
  for (const BufferPool& pool : s.pools) stats_.peak_activation_bytes += pool.reserved_bytes();
  stats_.concat_inputs_in_place = s.placement.values_in_place;
  stats_.released_weight_bytes = s.loop.released_weight_bytes;
  if (input_shapes != s.stats_inputs || stats_.implementations.empty()) {
    stats_.implementations = implementations(s.loop, s.graph.node_capacity());
    s.stats_inputs = input_shapes;
  }
  ++stats_.runs;

  dnnl::stream stream(s.engine);
  std::vector<std::vector<Tensor>> outputs(samples_);
  for (int sample = 0; sample < samples_; ++sample) {
    for (ValueId id : s.graph.outputs()) {
      const Value& v = s.graph.value(id);
      if (v.initializer) {
        outputs[sample].push_back(s.loop.constants[id]);
      } else if (v.producer < 0) {
        outputs[sample].push_back(inputs[sample].at(v.name));
      } else {
        const auto& node_outputs = s.graph.node(v.producer).outputs;
        auto index = std::find(node_outputs.begin(), node_outputs.end(), id) - node_outputs.begin();
        for (const LoopTask& task : s.loop.tasks) {
          if (task.node == v.producer && task.sample == sample) {
            outputs[sample].push_back(to_plain(task.outputs[index], s.engine, stream));
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

}  // namespace cleave
