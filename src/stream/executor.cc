// The stream executor: data-driven firing of filters on worker threads over bounded channels.
#include "stream/executor.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>

#include <sys/resource.h>
#include <time.h>

#include "ir/text.h"
#include "runtime/executor.h"
#include "stream/node_work.h"
#include "support/timing.h"

namespace cleave {

namespace {

using Clock = std::chrono::steady_clock;

// CPU seconds the calling thread has used, and how often the OS preempted it.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
int64_t thread_preemptions() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_nivcsw;
}

struct ChannelState {
  std::deque<Item> items;
  int64_t capacity = 0;
  int64_t reserved = 0;            // room promised to a firing in progress
  bool closed = false;             // the producer will push no more
  bool abandoned = false;          // the consumer is done: what is pushed is dropped
  std::vector<double> push_times;  // program output only
};

}  // namespace

std::vector<std::optional<ItemType>> infer_channel_items(const StreamGraph& graph,
                                                         const std::optional<ItemType>& input,
                                                         const std::string& origin,
                                                         bool mixed_items) {
  std::vector<std::optional<ItemType>> items(graph.channels.size());
  items[graph.input_channel] = input;
  for (const StreamNode& node : graph.nodes) {
    const std::optional<ItemType> in = items[node.inputs[0]];
    const auto fail = [&](const std::string& why) {
      throw Error(fmt::format("{}: {} \"{}\": {}", origin,
                              node.kind == StreamNodeKind::kFilter ? "filter" : "splitjoin",
                              node.kind == StreamNodeKind::kFilter ? node.name : node.stream->name,
                              why));
    };
    const auto name = [](const std::optional<ItemType>& t) {
      return t ? print_item_type(*t) : std::string("mixed items");
    };
    if (node.kind == StreamNodeKind::kSplitter) {
      for (int c : node.outputs) items[c] = in;
      continue;
    }
    if (node.kind == StreamNodeKind::kJoiner) {
      std::optional<ItemType> out = in;
      for (int c : node.inputs) {
        if (items[c] != in) {
          if (!mixed_items) {
            fail(fmt::format("joiner receives {} from one branch and {} from another", name(in),
                             name(items[c])));
          }
          out.reset();
        }
      }
      items[node.outputs[0]] = out;
      continue;
    }
    const Stream& s = *node.stream;
    if (s.input_item && in && !(*s.input_item == *in)) {
      fail(fmt::format("declares input items {} but its channel carries {}",
                       print_item_type(*s.input_item), name(in)));
    }
    std::optional<ItemType> out = in;
    if (s.op == FilterOp::kConcat && in) {
      const int64_t axis = s.args.empty() ? 0 : s.args[0];
      if (out->shape.empty()) out->shape = {1};
      if (axis < 0 || axis >= static_cast<int64_t>(out->shape.size())) {
        fail(fmt::format("concat axis {} is outside items of {}", axis, name(in)));
      }
      out->shape[axis] *= s.pop;
    } else if (s.op == FilterOp::kConcat) {
      out.reset();
    } else if (s.op == FilterOp::kModel) {
      const Graph& g = *s.graph;
      const int64_t per_input = s.peek / static_cast<int64_t>(g.inputs().size());
      for (ValueId id : g.inputs()) {
        const Value& v = g.value(id);
        if (in &&
            (v.dtype != in->dtype || v.shape.element_count() != per_input * in->element_count())) {
          fail(fmt::format("model input \"{}\" is {} but a window gives it {} items of {}", v.name,
                           print_type(v.dtype, v.shape), per_input, name(in)));
        }
      }
      const int64_t per_output = s.push / static_cast<int64_t>(g.outputs().size());
      out = model_output_item(s, g.value(g.outputs()[0]), per_output);
      for (ValueId id : g.outputs()) {
        const ItemType other = model_output_item(s, g.value(id), per_output);
        if (!(other == *out)) {
          if (!mixed_items) {
            fail(
                fmt::format("model outputs give items of {} and {}; one channel carries one "
                            "type",
                            name(out), print_item_type(other)));
          }
          out.reset();
          break;
        }
      }
    } else if (!s.reads.empty()) {
      out.reset();  // the published value's items, whatever it pops
    } else if (s.op == FilterOp::kSeparator && mixed_items) {
      out.reset();  // picks among items that may differ
    }
    if (s.output_item && out && !(*s.output_item == *out)) {
      fail(fmt::format("declares output items {} but pushes {}", print_item_type(*s.output_item),
                       name(out)));
    }
    items[node.outputs[0]] = out;
  }
  return items;
}

std::vector<double> measure_node_costs(const StreamGraph& graph, const StreamSchedule& schedule) {
  std::vector<double> cost(graph.nodes.size(), 0.0);
  for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
    const StreamNode& node = graph.nodes[v];
    if (node.kind != StreamNodeKind::kFilter || node.stream->op != FilterOp::kModel) {
      cost[v] = 1e-7 * static_cast<double>(schedule.repetitions[v]);  // moving pointers
      continue;
    }
    NodeWork work(node);
    // Items sized so that each model input gets its elements (the item shape does not matter:
    // the work function reshapes the window).
    const Graph& g = *node.stream->graph;
    const int64_t per_input = node.peek[0] / static_cast<int64_t>(g.inputs().size());
    std::vector<std::vector<Item>> windows(1);
    for (ValueId id : g.inputs()) {
      const Value& value = g.value(id);
      for (int64_t i = 0; i < per_input; ++i) {
        windows[0].push_back(std::make_shared<const Tensor>(
            Tensor::allocate(value.dtype, {value.shape.element_count() / per_input})));
      }
    }
    std::vector<std::vector<Item>> copy = windows;
    work.fire(copy);  // prepares the kernels
    // The thread's CPU seconds, the least of 3 firings: other processes' load neither
    // stretches it (time-slicing) nor lets one slow firing skew the placement.
    double least = std::numeric_limits<double>::infinity();
    for (int r = 0; r < 3; ++r) {
      copy = windows;
      const double before = thread_cpu_seconds();
      work.fire(copy);
      least = std::min(least, thread_cpu_seconds() - before);
    }
    cost[v] = least * static_cast<double>(schedule.repetitions[v]);
  }
  return cost;
}

std::vector<int64_t> channel_item_bytes(const std::vector<std::optional<ItemType>>& items) {
  std::vector<int64_t> bytes;
  for (const std::optional<ItemType>& t : items) {
    bytes.push_back(t ? t->element_count() * static_cast<int64_t>(element_size(t->dtype)) : 0);
  }
  return bytes;
}

StreamSetup prepare_stream(const StreamProgram& program, const std::vector<Tensor>& inputs,
                           bool mixed_items) {
  if (inputs.empty()) throw Error(fmt::format("{}: no input items to stream", program.origin));
  StreamSetup setup{flatten_stream(program.root), {}, {}};
  setup.schedule = schedule_stream(setup.graph, program.origin);
  require_bounded_iteration(setup.schedule, program.origin);
  setup.channel_items = infer_channel_items(
      setup.graph, mixed_items ? std::nullopt : std::optional(item_of(inputs.front())),
      program.origin, mixed_items);
  for (std::size_t i = 1; i < inputs.size() && !mixed_items; ++i) {
    if (!(item_of(inputs[i]) == item_of(inputs.front()))) {
      throw Error(fmt::format("{}: input item {} is {} but item 0 is {}", program.origin, i,
                              print_item_type(item_of(inputs[i])),
                              print_item_type(item_of(inputs.front()))));
    }
  }
  return setup;
}

namespace {

// One run of a program: the channels and references every worker shares under one mutex,
// and the loop each worker thread runs over the nodes the plan gives it.
class StreamRun {
 public:
  StreamRun(const StreamProgram& program, const StreamSetup& setup,
            const std::vector<Tensor>& inputs, const StreamPlan& plan,
            const StreamRunOptions& options, StreamRunResult& result);

  // Runs every worker (worker 0 on the calling thread) to the end; Error on a failure.
  void run();
  // Fills the outputs, throughput, busy shares and iteration latencies of the result.
  void collect();

 private:
  enum class Step { kWaiting, kChanged, kFailed };
  // By reference: per published name, the items of each publisher firing not yet read by
  // every reader.
  struct Published {
    std::map<int64_t, std::vector<Item>> firings;
    std::map<int64_t, int> reads_left;
    int readers = 0;
  };

  void worker_loop(int w);
  bool feed_input();
  Step step_node(int v, int w, std::unique_lock<std::mutex>& lock);
  bool ready(const StreamNode& node, int v, const std::string* reads, bool& exhausted);
  void close_node(const StreamNode& node, int v);
  std::vector<std::vector<Item>> take_windows(const StreamNode& node);
  std::vector<Item> take_published(const std::string& name, int64_t firing);
  void finish_firing(const StreamNode& node, int64_t firing,
                     std::vector<std::vector<Item>>& pushed);
  void progress();
  bool stalled(int w);

  const StreamProgram& program_;
  const StreamGraph& graph_;
  const StreamSchedule& schedule_;
  const std::vector<Tensor>& inputs_;
  const StreamRunOptions& options_;
  StreamRunResult& result_;
  const int workers_;
  std::vector<std::unique_ptr<NodeWork>> work_;
  std::vector<ChannelState> channels_;
  std::map<std::string, Published> published_;
  std::vector<int64_t> firings_;  // per node: how many times it fired (its reference index)

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<bool> node_done_;
  std::vector<bool> idle_;    // workers that found nothing to do since the last change
  std::vector<bool> active_;  // workers whose loop has not ended
  // Worker 0 (the calling thread) also feeds the program input, so one worker needs no
  // hand-over between threads at all.
  std::size_t next_input_ = 0;
  std::string failure_;
  std::vector<double> input_times_;
  std::vector<double> busy_;
  Clock::time_point start_;
};

StreamRun::StreamRun(const StreamProgram& program, const StreamSetup& setup,
                     const std::vector<Tensor>& inputs, const StreamPlan& plan,
                     const StreamRunOptions& options, StreamRunResult& result)
    : program_(program),
      graph_(setup.graph),
      schedule_(setup.schedule),
      inputs_(inputs),
      options_(options),
      result_(result),
      workers_(plan.workers),
      channels_(setup.graph.channels.size()),
      firings_(setup.graph.nodes.size(), 0),
      node_done_(setup.graph.nodes.size(), false),
      idle_(plan.workers, false),
      active_(plan.workers, true),
      busy_(plan.workers, 0.0) {
  std::map<std::pair<int, const Graph*>, std::shared_ptr<Executor>> executors;
  for (std::size_t v = 0; v < graph_.nodes.size(); ++v) {
    const StreamNode& node = graph_.nodes[v];
    std::shared_ptr<Executor> executor;
    if (v < plan.executors.size() && plan.executors[v]) {
      executor = plan.executors[v];
    } else if (node.kind == StreamNodeKind::kFilter && node.stream->op == FilterOp::kModel) {
      std::shared_ptr<Executor>& shared =
          executors[{result_.placement[v], node.stream->graph.get()}];
      if (!shared) shared = std::make_shared<Executor>(*node.stream->graph);
      executor = shared;
    }
    work_.push_back(std::make_unique<NodeWork>(node, executor));
  }
  for (std::size_t c = 0; c < channels_.size(); ++c) {
    channels_[c].capacity = std::max<int64_t>(1, options_.capacity_factor * schedule_.buffers[c]);
  }
  channels_[graph_.output_channel].capacity = INT64_MAX;
  for (const StreamNode& node : graph_.nodes) {
    if (node.kind == StreamNodeKind::kFilter && !node.stream->reads.empty()) {
      ++published_[node.stream->reads].readers;
    }
  }
  result_.worker_cpu_seconds.assign(workers_, 0.0);
  result_.worker_wait_seconds.assign(workers_, 0.0);
  result_.worker_waits.assign(workers_, 0);
  result_.worker_preempted.assign(workers_, 0);
}

void StreamRun::progress() {
  std::fill(idle_.begin(), idle_.end(), false);
  changed_.notify_all();
}

// Marks worker `w` idle and reports whether every live worker is (a deadlock).
bool StreamRun::stalled(int w) {
  idle_[w] = true;
  for (int i = 0; i < workers_; ++i) {
    if (active_[i] && !idle_[i]) return false;
  }
  return true;
}

// Worker 0 moves input items into the program's input channel while it has room.
bool StreamRun::feed_input() {
  ChannelState& in = channels_[graph_.input_channel];
  bool fed = false;
  const double now = seconds_since(start_);
  while (next_input_ < inputs_.size() && static_cast<int64_t>(in.items.size()) < in.capacity) {
    in.items.push_back(std::make_shared<const Tensor>(inputs_[next_input_++]));
    input_times_.push_back(now);
    fed = true;
  }
  if (next_input_ == inputs_.size()) {
    in.closed = true;
    fed = true;
  }
  if (fed) progress();
  return fed;
}

// Whether node v can fire: full windows, room on its outputs and, for a reader, the
// publisher's items of this firing. `exhausted`: an input will never fill its window.
bool StreamRun::ready(const StreamNode& node, int v, const std::string* reads, bool& exhausted) {
  bool fires = true;
  for (std::size_t p = 0; p < node.inputs.size(); ++p) {
    const ChannelState& in = channels_[node.inputs[p]];
    if (static_cast<int64_t>(in.items.size()) < node.peek[p]) {
      fires = false;
      exhausted = exhausted || in.closed;
    }
  }
  for (std::size_t p = 0; p < node.outputs.size() && fires; ++p) {
    const ChannelState& out = channels_[node.outputs[p]];
    if (!out.abandoned &&
        static_cast<int64_t>(out.items.size()) + out.reserved + node.push[p] > out.capacity) {
      fires = false;
    }
  }
  if (fires && reads && !published_[*reads].firings.count(firings_[v])) fires = false;
  return fires;
}

void StreamRun::close_node(const StreamNode& node, int v) {
  node_done_[v] = true;
  for (int c : node.outputs) channels_[c].closed = true;
  // Other branches may still produce for a joiner that is done: let them drain.
  for (int c : node.inputs) {
    channels_[c].abandoned = true;
    channels_[c].items.clear();
  }
  progress();
}

// The popped items move into the window; the peeked rest stay and are copied. Room for the
// pushes is reserved on the outputs.
std::vector<std::vector<Item>> StreamRun::take_windows(const StreamNode& node) {
  std::vector<std::vector<Item>> windows(node.inputs.size());
  for (std::size_t p = 0; p < node.inputs.size(); ++p) {
    ChannelState& in = channels_[node.inputs[p]];
    windows[p].reserve(node.peek[p]);
    windows[p].insert(windows[p].end(), std::make_move_iterator(in.items.begin()),
                      std::make_move_iterator(in.items.begin() + node.pop[p]));
    windows[p].insert(windows[p].end(), in.items.begin() + node.pop[p],
                      in.items.begin() + node.peek[p]);
    in.items.erase(in.items.begin(), in.items.begin() + node.pop[p]);
  }
  for (std::size_t p = 0; p < node.outputs.size(); ++p) {
    channels_[node.outputs[p]].reserved += node.push[p];
  }
  return windows;
}

// The reader pushes the publisher's items of the same firing; the last reader frees them.
std::vector<Item> StreamRun::take_published(const std::string& name, int64_t firing) {
  Published& ref = published_[name];
  std::vector<Item> items = ref.firings.at(firing);
  if (--ref.reads_left.at(firing) == 0) {
    ref.firings.erase(firing);
    ref.reads_left.erase(firing);
  }
  return items;
}

// Under the lock, after a firing: its items published for readers and pushed on its outputs.
void StreamRun::finish_firing(const StreamNode& node, int64_t firing,
                              std::vector<std::vector<Item>>& pushed) {
  if (node.kind == StreamNodeKind::kFilter && !node.stream->publishes.empty()) {
    Published& ref = published_[node.stream->publishes];
    if (ref.readers > 0) {
      ref.firings[firing] = pushed[0];
      ref.reads_left[firing] = ref.readers;
    }
  }
  const double now = seconds_since(start_);
  for (std::size_t p = 0; p < node.outputs.size(); ++p) {
    ChannelState& out = channels_[node.outputs[p]];
    out.reserved -= node.push[p];
    if (out.abandoned) continue;
    const bool program_output = node.outputs[p] == graph_.output_channel;
    for (Item& t : pushed[p]) {
      if (program_output) out.push_times.push_back(now);
      if (!program_output || options_.keep_outputs) out.items.push_back(std::move(t));
    }
  }
  progress();
}

// Fires node v once if it can (its work outside the lock), or closes it when its input
// is exhausted.
StreamRun::Step StreamRun::step_node(int v, int w, std::unique_lock<std::mutex>& lock) {
  const StreamNode& node = graph_.nodes[v];
  const std::string* reads = node.kind == StreamNodeKind::kFilter && !node.stream->reads.empty()
                                 ? &node.stream->reads
                                 : nullptr;
  bool exhausted = false;
  if (!ready(node, v, reads, exhausted)) {
    if (!exhausted) return Step::kWaiting;
    close_node(node, v);
    return Step::kChanged;  // a change: scan again before waiting
  }
  std::vector<std::vector<Item>> windows = take_windows(node);
  progress();
  const int64_t firing = firings_[v]++;
  std::vector<std::vector<Item>> pushed;
  if (reads) pushed.push_back(take_published(*reads, firing));
  lock.unlock();
  const Clock::time_point begin = Clock::now();
  try {
    if (!reads) pushed = work_[v]->fire(windows);
  } catch (const std::exception& e) {
    lock.lock();
    failure_ = fmt::format("{}: \"{}\": {}", program_.origin, node.name, e.what());
    progress();
    return Step::kFailed;
  }
  const Clock::time_point end = Clock::now();
  busy_[w] += std::chrono::duration<double>(end - begin).count();
  windows.clear();  // the last reader of an item frees it outside the lock
  lock.lock();
  if (options_.trace) {
    result_.firings.push_back({v, w, std::chrono::duration<double>(begin - start_).count(),
                               std::chrono::duration<double>(end - start_).count()});
  }
  finish_firing(node, firing, pushed);
  return Step::kChanged;
}

void StreamRun::worker_loop(int w) {
  std::vector<int> mine;
  for (std::size_t v = 0; v < graph_.nodes.size(); ++v) {
    if (result_.placement[v] == w) mine.push_back(static_cast<int>(v));
  }
  const double cpu_start = thread_cpu_seconds();
  const int64_t preempted_start = thread_preemptions();
  std::unique_lock lock(mutex_);
  while (failure_.empty()) {
    bool fired = false, all_done = true;
    if (w == 0 && !channels_[graph_.input_channel].closed) {
      all_done = false;
      fired = feed_input();
    }
    for (int v : mine) {
      if (node_done_[v]) continue;
      all_done = false;
      const Step step = step_node(v, w, lock);
      if (step == Step::kFailed) return;
      fired = fired || step == Step::kChanged;
    }
    if (all_done) break;
    if (fired) continue;
    if (stalled(w)) {
      failure_ = fmt::format("{}: the stream deadlocked (channels too small for the rates)",
                             program_.origin);
      progress();
      break;
    }
    const Clock::time_point sleep = Clock::now();
    changed_.wait(lock);
    result_.worker_wait_seconds[w] += seconds_since(sleep);
    ++result_.worker_waits[w];
  }
  result_.worker_cpu_seconds[w] = thread_cpu_seconds() - cpu_start;
  result_.worker_preempted[w] = thread_preemptions() - preempted_start;
  active_[w] = false;
  progress();
}

void StreamRun::run() {
  start_ = Clock::now();
  std::vector<std::thread> threads;
  for (int w = 1; w < workers_; ++w) threads.emplace_back(&StreamRun::worker_loop, this, w);
  worker_loop(0);
  for (std::thread& t : threads) t.join();
  if (!failure_.empty()) throw Error(failure_);
  result_.seconds = seconds_since(start_);
}

void StreamRun::collect() {
  ChannelState& out = channels_[graph_.output_channel];
  result_.outputs.reserve(out.items.size());
  for (const Item& item : out.items) result_.outputs.push_back(*item);
  result_.output_count = static_cast<int64_t>(out.push_times.size());
  if (result_.output_count == 0) {
    throw Error(fmt::format(
        "{}: {} input items gave no output item; one steady-state iteration needs {} input "
        "items, after {} that fill the peek windows",
        program_.origin, inputs_.size(), schedule_.input_per_iteration, schedule_.input_for_init));
  }
  result_.items_per_second = static_cast<double>(inputs_.size()) / result_.seconds;
  for (double b : busy_) result_.worker_busy.push_back(b / result_.seconds);
  // Iteration k is complete when its last output left; its last input entered at index
  // input_for_init + (k + 1) * input_per_iteration - 1.
  const int64_t per_out = schedule_.output_per_iteration;
  const int64_t per_in = schedule_.input_per_iteration;
  for (int64_t k = 0;; ++k) {
    const int64_t last_out = (k + 1) * per_out - 1;
    const int64_t last_in = schedule_.input_for_init + (k + 1) * per_in - 1;
    if (last_out >= static_cast<int64_t>(out.push_times.size()) ||
        last_in >= static_cast<int64_t>(input_times_.size())) {
      break;
    }
    result_.iteration_latency.push_back(
        std::max(0.0, out.push_times[last_out] - input_times_[last_in]));
  }
}

}  // namespace

StreamRunResult execute_stream(const StreamProgram& program, const StreamSetup& setup,
                               const std::vector<Tensor>& inputs, const StreamPlan& plan,
                               const StreamRunOptions& options) {
  const std::vector<int>& worker = plan.placement.worker;
  if (worker.size() != setup.graph.nodes.size() || plan.workers < 1) {
    throw Error(fmt::format("{}: the plan places {} nodes on {} workers; the program has {} nodes",
                            program.origin, worker.size(), plan.workers, setup.graph.nodes.size()));
  }
  for (int w : worker) {
    if (w < 0 || w >= plan.workers) {
      throw Error(
          fmt::format("{}: the plan names worker {} of {}", program.origin, w, plan.workers));
    }
  }
  StreamRunResult result;
  result.plan = plan.placement;
  result.placement = worker;
  result.node_cost = plan.node_cost;
  result.predicted_items_per_second = plan.placement.predicted_items_per_second;
  StreamRun run(program, setup, inputs, plan, options, result);
  run.run();
  run.collect();
  return result;
}

}  // namespace cleave
