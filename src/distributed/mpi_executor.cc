// MPI executor: this rank's tasks in plan order, values through the MPI hand-off, runs pipelined.
#include "distributed/mpi_executor.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <span>

#include "distributed/emulated_speed.h"
#include "distributed/fault_injection.h"
#include "distributed/mpi_hand_off.h"
#include "distributed/mpi_routes.h"
#include "distributed/mpi_session.h"
#include "runtime/concat_placement.h"
#include "runtime/executor.h"
#include "runtime/plan_inputs.h"
#include "runtime/task_concat_placement.h"
#include "runtime/task_loop.h"

namespace cleave {

namespace {

using Clock = std::chrono::steady_clock;

// Rank 0: a run whose outputs are not all in yet.
struct PendingRun {
  int64_t run = 0;
  Clock::time_point start;
  std::vector<std::vector<Tensor>> outputs;  // Per plan sample, graph outputs.
  std::vector<std::vector<bool>> missing;    // Per plan sample, per output: still remote.
  int missing_count = 0;
  bool assembled = false;  // Rank 0's tasks have run and its own outputs are listed.
};

int tag_limit(MPI_Comm comm) {
  int* value = nullptr;
  int found = 0;
  if (MPI_Comm_get_attr(comm, MPI_TAG_UB, &value, &found) == MPI_SUCCESS && found && value)
    return *value;
  return 32767;
}

}  // namespace

struct MpiExecutor::Impl : TaskHooks {
  Graph graph;
  TaskGraph tasks;
  MpiOptions options;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int ranks = 1;
  PlanInputs plan;
  MpiRoutes routes;
  std::unique_ptr<MpiHandOff> hand_off;
  std::vector<int> order;  // This rank's tasks in plan order.
  TaskLoop loop;           // Per task; only this rank's have runners and values.
  // In-place Concat, planned after the first run from the kernels this rank prepared (as the
  // thread executors plan it) and the layouts its messages came in: a value from another rank
  // is received into its slice where concat_inputs_received_in_place says so.
  ConcatPlacement placement;
  bool placement_planned = false;
  std::map<int, BufferSlot> received_slots;  // Channel to this rank -> where it is received.
  std::set<ValueId> received_values;         // ... the values of those channels.
  double copied_per_run = 0;  // Bytes of received values this rank's Concats copy, per run.
  BufferPool pool;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::unique_ptr<dnnl::stream> stream;
  std::deque<PendingRun> pending;  // Rank 0, oldest first.
  FaultInjection fault;
  EmulatedSpeed pace;  // CLEAVE_EMULATED_SPEEDS: this rank as a slower device.
  int64_t current_run = 0;
  std::vector<std::shared_ptr<ExecutorObserver>>* observers = nullptr;

  std::string task_text(int task) const {
    return fmt::format("task '{}' (node {})", tasks.tasks[task].name,
                       graph.describe(tasks.tasks[task].node));
  }

  [[noreturn]] void waited_too_long(const std::string& what, int from, int64_t run,
                                    const std::string& needed_by) const {
    throw RankTimeout(
        fmt::format("waited more than {} s for {} from rank {} (run {}), needed by {}",
                    options.rank_timeout_seconds, what, from, run, needed_by));
  }

  const std::vector<Tensor>& outputs_of_task(int task, int64_t run, const std::string& needed_by) {
    const std::vector<Tensor>* outputs = nullptr;
    switch (hand_off->await(task, run, options.rank_timeout_seconds, &outputs)) {
      case ValueHandOff::Wait::kReady:
        return *outputs;
      case ValueHandOff::Wait::kStopped:
        throw Error(fmt::format("the run stopped while {} waited", needed_by));
      case ValueHandOff::Wait::kTimedOut:
        break;
    }
    waited_too_long("the outputs of " + task_text(task), plan.worker[task], run, needed_by);
  }

  // A Concat input is placed where the Concat runs here and its producer does too, or sends
  // it here in the layout of the first run's message.
  void plan_in_place_concats() {
    std::map<ValueId, int> channel_of;
    for (std::size_t c = 0; c < routes.channels.size(); ++c) {
      const Channel& channel = routes.channels[c];
      if (channel.to == rank && channel.producer >= 0)
        channel_of.emplace(channel.value, static_cast<int>(c));
    }
    placement = place_concat_inputs_of_tasks(
        graph, loop, order, plan.samples, [&](ValueId value) -> const OutputSpec* {
          const auto found = channel_of.find(value);
          return found == channel_of.end() ? nullptr : hand_off->arrived_spec(found->second);
        });
    placement_planned = true;
    std::vector<char> made_here(graph.node_capacity(), 0);
    for (int t : order) made_here[loop.tasks[t].node] = 1;
    received_slots.clear();
    received_values.clear();
    for (std::size_t c = 0; c < routes.channels.size(); ++c) {
      const Channel& channel = routes.channels[c];
      if (channel.to != rank || channel.producer < 0) continue;
      const std::optional<BufferSlot>& slot = placement.slots[channel.value];
      if (slot && !made_here[graph.value(channel.value).producer]) {
        received_slots.emplace(static_cast<int>(c), *slot);
        received_values.insert(channel.value);
      }
    }
    copied_per_run = concat_copies();
  }

  // Bytes of the values received from other ranks that this rank's Concats copy in one run.
  double concat_copies() const {
    double bytes = 0;
    for (int t : order) {
      const Node& node = graph.node(loop.tasks[t].node);
      if (node.op_type != "Concat") continue;
      for (const TaskInput& source : loop.tasks[t].sources) {
        if (source.kind != TaskInput::Kind::kTask || plan.worker[source.task] == rank) continue;
        const Value& value = graph.value(source.value);
        const std::optional<BufferSlot>& mine = placement.slots[source.value];
        const std::optional<BufferSlot>& whole = placement.slots[node.outputs[0]];
        if (placement_planned && received_values.count(source.value) && mine && whole &&
            mine->root == whole->root)
          continue;  // Received into this Concat's output (or the one it is a view of).
        if (value.shape.is_static()) bytes += plain_byte_size(value.dtype, value.shape.sizes());
      }
    }
    return bytes;
  }

  // Where this run receives the values placed in a Concat's output: their roots' buffers,
  // acquired now for the run.
  std::map<int, ReceivePlace> receive_places() {
    std::map<int, ReceivePlace> places;
    for (const auto& [channel, slot] : received_slots) {
      const Channel& c = routes.channels[channel];
      std::shared_ptr<Buffer>& root = loop.shared[static_cast<std::size_t>(c.sample)][slot.root];
      if (!root) root = pool.acquire(placement.root_bytes[slot.root]);
      places[channel] = ReceivePlace{root, slot.byte_offset, *hand_off->arrived_spec(channel)};
    }
    return places;
  }

  void before_task(int position) override { fault.before_task(current_run, position); }
  void after_compute(double seconds) override { pace.after_compute(seconds); }
  void after_task() override {
    if (rank == 0 && pending.size() > 1) gather_outputs(-1);
  }

  void run_tasks(int64_t run, std::span<const SampleInputs> inputs, Clock::time_point stream_start,
                 std::vector<Trace::Event>& events) {
    current_run = run;
    WorkerRun worker;
    worker.order = order;
    worker.run = run;
    worker.pool = &pool;
    worker.engine = &engine;
    worker.stream = stream.get();
    worker.hand_off = hand_off.get();
    worker.inputs = inputs;  // Empty off rank 0: rank 0 sends the graph inputs read here.
    worker.start = stream_start;
    worker.events = &events;
    worker.observers = observers;
    worker.hooks = this;
    const LoopEnd end = run_worker_tasks(loop, worker);
    if (end.wait == ValueHandOff::Wait::kReady) return;
    const std::string needed_by = task_text(end.task);
    if (end.wait == ValueHandOff::Wait::kStopped)
      throw Error(fmt::format("the run stopped while {} waited", needed_by));
    if (end.awaited.kind == TaskInput::Kind::kTask) {
      waited_too_long("the outputs of " + task_text(end.awaited.task),
                      plan.worker[end.awaited.task], run, needed_by);
    }
    waited_too_long(fmt::format("graph input '{}' (sample {})", graph.value(end.awaited.value).name,
                                loop.tasks[end.task].sample),
                    0, run, needed_by);
  }

  // Rank 0: lists the outputs of `run` it holds itself; the others come from the ranks.
  void assemble_outputs(PendingRun& run, std::span<const SampleInputs> inputs) {
    const int samples = plan.samples;
    run.outputs.assign(samples, {});
    run.missing.assign(samples, std::vector<bool>(graph.outputs().size(), false));
    for (int sample = 0; sample < samples; ++sample) {
      for (const OutputRoute& route : routes.outputs[sample]) {
        Tensor value;
        if (route.kind == OutputRoute::Kind::kConstant) {
          value = loop.constants[route.value];
        } else if (route.kind == OutputRoute::Kind::kGraphInput) {
          value = inputs[sample].at(graph.value(route.value).name);
        } else if (plan.worker[route.task] == 0) {
          const Tensor& produced = loop.tasks[route.task].outputs[route.output];
          value = to_plain(produced, engine, *stream);
          if (value.raw() == produced.raw()) {
            // Already plain: copy, so the pool may reuse the buffer in the next run.
            Tensor copy = Tensor::allocate(value.dtype(), value.shape());
            std::memcpy(copy.raw(), value.raw(), value.byte_size());
            value = copy;
          }
        } else {
          ++run.missing_count;
          run.missing[sample][run.outputs[sample].size()] = true;
        }
        run.outputs[sample].push_back(value);
      }
    }
    run.assembled = true;
  }

  // Rank 0: takes the remote outputs that have come (those of runs up to `until_run` are
  // waited for) and moves the runs that are complete into the results.
  void gather_outputs(int64_t until_run) {
    while (!pending.empty()) {
      PendingRun& run = pending.front();
      if (!run.assembled) break;
      for (int sample = 0; sample < plan.samples && run.missing_count > 0; ++sample) {
        for (std::size_t i = 0; i < routes.outputs[sample].size(); ++i) {
          if (!run.missing[sample][i]) continue;
          const OutputRoute& route = routes.outputs[sample][i];
          if (run.run > until_run && !hand_off->arrived(route.task, run.run)) continue;
          run.outputs[sample][i] =
              outputs_of_task(route.task, run.run, "the outputs on rank 0")[route.output];
          run.missing[sample][i] = false;
          --run.missing_count;
        }
      }
      if (run.missing_count > 0) break;
      const double seconds = std::chrono::duration<double>(Clock::now() - run.start).count();
      for (int sample = 0; sample < plan.samples; ++sample) {
        const std::size_t index = static_cast<std::size_t>(run.run) * plan.samples + sample;
        (*results)[index] = std::move(run.outputs[sample]);
        (*sample_seconds)[index] = seconds;
      }
      hand_off->end_run(run.run);
      pending.pop_front();
    }
  }

  std::vector<std::vector<Tensor>>* results = nullptr;
  std::vector<double>* sample_seconds = nullptr;
};

MpiExecutor::MpiExecutor(const Graph& graph, const TaskGraph& tasks, const Plan& plan,
                         MPI_Comm comm, MpiOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.graph = graph;
  s.tasks = tasks;
  s.comm = comm;
  s.options = options;
  s.observers = &observers_;
  MPI_Comm_rank(comm, &s.rank);
  MPI_Comm_size(comm, &s.ranks);
  s.plan = resolve_plan_inputs(graph, tasks, plan);
  if (static_cast<int>(plan.order.size()) != s.ranks) {
    throw Error(
        fmt::format("the plan has {} workers, but {} ranks were started; start as many "
                    "ranks as the plan has workers (mpirun -np {})",
                    plan.order.size(), s.ranks, plan.order.size()));
  }
  s.routes = route_values(graph, tasks, s.plan, tag_limit(comm));

  // This rank's part.
  TaskLoop& loop = s.loop;
  loop.graph = &s.graph;
  loop.threads = options.threads;
  loop.timeout_seconds = options.rank_timeout_seconds;
  s.order = plan.order[s.rank];
  loop.tasks.resize(tasks.tasks.size());
  for (std::size_t t = 0; t < tasks.tasks.size(); ++t) {
    LoopTask& task = loop.tasks[t];
    task.node = tasks.tasks[t].node;
    task.sample = static_cast<int>(tasks.tasks[t].batch_begin);
    task.worker = s.plan.worker[t];
    task.keep.assign(graph.node(task.node).outputs.size(), false);
  }
  for (int t : s.order) {
    LoopTask& task = loop.tasks[t];
    task.sources = s.plan.inputs[t];
    task.runner =
        make_runner(s.graph, task.node, options.blocked_layouts, options.convolution_family);
  }
  if (s.rank == 0) {
    for (const auto& per_sample : s.routes.outputs) {
      for (const OutputRoute& route : per_sample) {
        if (route.kind == OutputRoute::Kind::kTask && s.plan.worker[route.task] == 0)
          loop.tasks[route.task].keep[route.output] = true;
      }
    }
  }
  count_uses(loop);
  if (options.release_packed_weights) {
    count_packers(loop);
    if (s.rank == 0) {
      for (const auto& per_sample : s.routes.outputs) {
        for (const OutputRoute& route : per_sample)
          if (route.kind == OutputRoute::Kind::kConstant)
            ++loop.packers_left[route.value];  // Kept.
      }
    }
  }
  loop.constants.resize(graph.value_capacity());
  for (ValueId id : graph.initializers()) {
    const TensorData& data = *graph.value(id).initializer;
    if (!data.bytes) continue;  // Another rank's weights.
    loop.constants[id] = Tensor::borrow(data.dtype, data.dims, data.bytes->data());
    stats_.weight_bytes += data.bytes->size();
  }
  stats_.tasks = static_cast<int>(s.order.size());
  s.stream = std::make_unique<dnnl::stream>(s.engine);
  s.fault = FaultInjection::from_environment(s.rank);
  s.pace = EmulatedSpeed::from_environment(s.rank, s.ranks);
  stats_.emulated_speed = s.pace.speed();
  std::vector<int> output_counts;
  for (const Task& task : tasks.tasks)
    output_counts.push_back(static_cast<int>(graph.node(task.node).outputs.size()));
  s.hand_off = std::make_unique<MpiHandOff>(s.routes, s.plan.worker, std::move(output_counts), comm,
                                            s.rank, s.fault);
  stats_.node_seconds.assign(graph.node_capacity(), 0.0);
}

MpiExecutor::~MpiExecutor() = default;

int MpiExecutor::samples() const {
  return impl_->plan.samples;
}

void MpiExecutor::reset_stats() {
  stats_.node_seconds.assign(impl_->graph.node_capacity(), 0.0);
  stats_.runs = 0;
  stats_.emulated_pause_seconds = 0;
}

std::vector<Tensor> MpiExecutor::run(const SampleInputs& inputs) {
  if (impl_->plan.samples != 1) {
    throw Error(
        fmt::format("the plan runs {} samples at a time; give them all", impl_->plan.samples));
  }
  std::vector<std::vector<Tensor>> outputs = run(std::vector<SampleInputs>{inputs});
  return outputs.front();
}

std::vector<std::vector<Tensor>> MpiExecutor::run(const std::vector<SampleInputs>& inputs) {
  Impl& s = *impl_;
  const int per_run = s.plan.samples;
  if (inputs.empty() || inputs.size() % static_cast<std::size_t>(per_run) != 0) {
    throw Error(
        fmt::format("a {}-sample plan needs a positive multiple of {} input samples, {} "
                    "were given",
                    per_run, per_run, inputs.size()));
  }
  const int64_t runs = static_cast<int64_t>(inputs.size()) / per_run;
  if (s.rank == 0) {
    for (const auto& sample : inputs) check_inputs(s.graph, sample);
  }
  s.hand_off->reset_traffic();
  const double paused_before = s.pace.paused_seconds();
  std::vector<std::vector<Tensor>> results(inputs.size());
  stats_.sample_seconds.assign(s.rank == 0 ? inputs.size() : 0, 0.0);
  s.results = &results;
  s.sample_seconds = &stats_.sample_seconds;
  std::vector<Trace::Event> events;
  events.reserve(s.order.size() * static_cast<std::size_t>(runs));
  for (const auto& observer : observers_)
    observer->on_run_begin(s.ranks, static_cast<int>(s.tasks.tasks.size()));
  omp_set_num_threads(std::max(1, s.options.threads));
  const auto stream_start = Clock::now();
  const auto finish = [&] {
    trace_.events = std::move(events);
    trace_.makespan = 0;
    for (const auto& event : trace_.events) trace_.makespan = std::max(trace_.makespan, event.end);
    for (const auto& observer : observers_) observer->on_run_end(trace_.makespan);
  };
  try {
    for (int64_t run = 0; run < runs; ++run) {
      // The pipeline's depth: older runs' messages must have left before this one starts.
      s.hand_off->finish_sends(run - s.options.window, s.options.rank_timeout_seconds);
      if (s.rank == 0) s.gather_outputs(run - s.options.window);
      std::span<const SampleInputs> run_inputs;
      if (s.rank == 0) run_inputs = std::span(inputs).subspan(run * per_run, per_run);
      if (!s.placement.empty()) {
        s.loop.placement = &s.placement;
        s.loop.shared.assign(static_cast<std::size_t>(per_run),
                             std::vector<std::shared_ptr<Buffer>>(s.graph.value_capacity()));
      }
      s.hand_off->begin_run(run, s.receive_places());
      if (s.rank == 0) {
        s.pending.push_back(PendingRun{run, Clock::now(), {}, {}, 0, false});
        s.hand_off->publish_inputs(run, run_inputs);
      }
      reset_reads(s.loop);
      for (int t : s.order) s.loop.tasks[t].outputs.clear();
      s.run_tasks(run, run_inputs, stream_start, events);
      s.pace.settle();
      if (s.rank == 0) s.assemble_outputs(s.pending.back(), run_inputs);
      for (int t : s.order) s.loop.tasks[t].outputs.clear();
      s.hand_off->end_tasks(run);
      if (s.rank != 0) s.hand_off->end_run(run);
    }
    s.hand_off->finish_sends(runs, s.options.rank_timeout_seconds);
    if (s.rank == 0) s.gather_outputs(runs);
  } catch (...) {
    s.pending.clear();
    finish();
    throw;
  }
  finish();
  // This call's Concats copied with the placement they ran with.
  stats_.received_bytes_copied = s.placement_planned ? s.copied_per_run : s.concat_copies();
  if (!s.placement_planned) {
    s.plan_in_place_concats();
    stats_.concat_inputs_in_place = s.placement.values_in_place;
  }
  const Traffic& traffic = s.hand_off->traffic();
  stats_.values_received_in_place =
      static_cast<double>(traffic.received_in_place) / static_cast<double>(runs);
  stats_.bytes_sent = traffic.bytes_sent;
  stats_.bytes_received = traffic.bytes_received;
  stats_.messages_sent = traffic.messages_sent;
  stats_.messages_received = traffic.messages_received;
  add_node_seconds(s.loop, trace_, stats_);
  stats_.peak_activation_bytes = s.pool.reserved_bytes();
  stats_.released_weight_bytes = s.loop.released_weight_bytes;
  stats_.emulated_pause_seconds += s.pace.paused_seconds() - paused_before;
  if (stats_.implementations.empty())
    stats_.implementations = implementations(s.loop, s.graph.node_capacity());
  stats_.runs += runs;
  if (s.rank != 0) results.assign(inputs.size(), {});
  return results;
}

}  // namespace cleave
