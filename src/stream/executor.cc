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

// One item on a channel. A Tensor is large (its optional oneDNN layout descriptor alone is
// hundreds of bytes), so channels, windows, splitters and joiners pass shared handles: a hop
// moves a pointer, not a Tensor (deque nodes of one Tensor each cost a malloc per item).
using Item = std::shared_ptr<const Tensor>;

ItemType item_of(const Tensor& t) {
  return ItemType{t.dtype(), t.shape()};
}

// A contiguous tensor of `shape` holding the items back to back: a view when they already
// lie back to back in one shared storage, else a copy.
Tensor gather(const std::vector<Item>& items, std::size_t first, std::size_t count, DataType dtype,
              const std::vector<int64_t>& shape) {
  // Items that sit side by side in one buffer (rows cut from one tensor) need no copy.
  bool adjacent = items[first]->storage() != nullptr && !items[first]->is_blocked();
  for (std::size_t i = first + 1; i < first + count && adjacent; ++i) {
    adjacent = items[i]->storage() == items[first]->storage() && !items[i]->is_blocked() &&
               static_cast<const std::byte*>(items[i]->raw()) ==
                   static_cast<const std::byte*>(items[i - 1]->raw()) + items[i - 1]->byte_size();
  }
  std::size_t total = 0;
  for (std::size_t i = first; i < first + count; ++i) total += items[i]->byte_size();
  int64_t elements = 1;
  for (int64_t d : shape) elements *= d;
  if (total != static_cast<std::size_t>(elements) * element_size(dtype)) {
    throw Error(fmt::format("{} items of {} bytes do not fill {}", count, total,
                            print_type(dtype, Shape::of(shape))));
  }
  if (adjacent) {
    const Tensor& t = *items[first];
    const auto offset =
        static_cast<std::size_t>(static_cast<const std::byte*>(t.raw()) - t.storage()->data());
    return Tensor::view(dtype, shape, t.storage(), offset);
  }
  Tensor out = Tensor::allocate(dtype, shape);
  auto* dst = static_cast<std::byte*>(out.raw());
  for (std::size_t i = first; i < first + count; ++i) {
    const std::size_t bytes = items[i]->byte_size();
    std::memcpy(dst, items[i]->raw(), bytes);
    dst += bytes;
  }
  return out;
}

// Cuts a plain tensor into `count` items of `shape`, as views of its storage when it has one.
std::vector<Item> scatter(const Tensor& whole, int64_t count, const std::vector<int64_t>& shape) {
  Tensor source = whole;
  if (!source.storage()) {
    source = Tensor::allocate(whole.dtype(), whole.shape());
    std::memcpy(source.raw(), whole.raw(), whole.byte_size());
  }
  const std::size_t item_bytes = source.byte_size() / static_cast<std::size_t>(count);
  const auto base = static_cast<std::size_t>(static_cast<const std::byte*>(source.raw()) -
                                             source.storage()->data());
  std::vector<Item> out;
  out.reserve(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    out.push_back(std::make_shared<const Tensor>(Tensor::view(
        source.dtype(), shape, source.storage(), base + static_cast<std::size_t>(i) * item_bytes)));
  }
  return out;
}

Item concat_items(const std::vector<Item>& items, int64_t axis) {
  const Tensor& first = *items.front();
  std::vector<int64_t> shape = first.shape();
  if (shape.empty()) shape = {1};
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (std::size_t d = axis; d < shape.size(); ++d) inner *= shape[d];
  shape[axis] *= static_cast<int64_t>(items.size());
  Tensor out = Tensor::allocate(first.dtype(), shape);
  const std::size_t chunk = static_cast<std::size_t>(inner) * element_size(first.dtype());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (const Item& t : items) {
      std::memcpy(dst, static_cast<const std::byte*>(t->raw()) + o * chunk, chunk);
      dst += chunk;
    }
  }
  return std::make_shared<const Tensor>(std::move(out));
}

// What a model filter's output items look like: the declared type, else the output's shape
// without its leading dim when that dim counts the items, else flat.
ItemType model_output_item(const Stream& s, const Value& v, int64_t per_output) {
  if (s.output_item) return *s.output_item;
  const std::vector<int64_t> sizes = v.shape.sizes();
  if (!sizes.empty() && sizes[0] == per_output) {
    return ItemType{v.dtype, std::vector<int64_t>(sizes.begin() + 1, sizes.end())};
  }
  return ItemType{v.dtype, {v.shape.element_count() / per_output}};
}

// The runnable side of one node: a work function from input windows to output items.
// Model filters that run the same graph on the same worker (fission's copies) share one
// executor: one set of prepared primitives and packed weights, warm in that core's caches.
class NodeWork {
 public:
  NodeWork(const StreamNode& node, std::shared_ptr<Executor> executor = nullptr)
      : node_(node), executor_(std::move(executor)) {
    if (!executor_ && node.kind == StreamNodeKind::kFilter && node.stream->op == FilterOp::kModel) {
      executor_ = std::make_shared<Executor>(*node.stream->graph);
    }
  }

  // windows[port] holds peek[port] items, which the firing may move from; returns pushed
  // items per output port. Items are moved, not copied, wherever one consumer takes them.
  std::vector<std::vector<Item>> fire(std::vector<std::vector<Item>>& windows) {
    std::vector<std::vector<Item>> out(node_.outputs.size());
    if (node_.kind == StreamNodeKind::kSplitter) {
      const Stream& sj = *node_.stream;
      if (sj.split.kind == SplitKind::kDuplicate) {
        for (auto& port : out) port.push_back(windows[0][0]);
      } else {
        std::size_t next = 0;
        for (std::size_t b = 0; b < out.size(); ++b) {
          out[b].reserve(sj.split.weights[b]);
          for (int64_t i = 0; i < sj.split.weights[b]; ++i) {
            out[b].push_back(std::move(windows[0][next++]));
          }
        }
      }
      return out;
    }
    if (node_.kind == StreamNodeKind::kJoiner) {
      for (auto& window : windows) {
        out[0].insert(out[0].end(), std::make_move_iterator(window.begin()),
                      std::make_move_iterator(window.end()));
      }
      return out;
    }
    const Stream& s = *node_.stream;
    std::vector<Item>& w = windows[0];
    switch (s.op) {
      case FilterOp::kIdentity:
        out[0].assign(std::make_move_iterator(w.begin()),
                      std::make_move_iterator(w.begin() + s.pop));
        break;
      case FilterOp::kSlice: {
        const int64_t begin = s.args.empty() ? 0 : s.args[0];
        out[0].assign(w.begin() + begin, w.begin() + begin + s.push);
        break;
      }
      case FilterOp::kConcat:
        out[0].push_back(concat_items(w, s.args.empty() ? 0 : s.args[0]));
        break;
      case FilterOp::kSeparator:
        for (int64_t index : s.args) out[0].push_back(w[index]);
        break;
      case FilterOp::kModel:
        out[0] = run_model(s, w);
        break;
    }
    return out;
  }

 private:
  std::vector<Item> run_model(const Stream& s, const std::vector<Item>& window) {
    const Graph& g = executor_->graph();
    const std::size_t m = g.inputs().size();
    const std::size_t per_input = static_cast<std::size_t>(s.peek) / m;
    std::map<std::string, Tensor> inputs;
    for (std::size_t i = 0; i < m; ++i) {
      const Value& v = g.value(g.inputs()[i]);
      inputs[v.name] = gather(window, i * per_input, per_input, v.dtype, v.shape.sizes());
    }
    const std::vector<Tensor> results = executor_->run(inputs);
    const int64_t per_output = s.push / static_cast<int64_t>(results.size());
    std::vector<Item> items;
    items.reserve(static_cast<std::size_t>(s.push));
    for (std::size_t o = 0; o < results.size(); ++o) {
      const ItemType type = model_output_item(s, g.value(g.outputs()[o]), per_output);
      std::vector<Item> part = scatter(results[o], per_output, type.shape);
      items.insert(items.end(), part.begin(), part.end());
    }
    return items;
  }

  const StreamNode& node_;
  std::shared_ptr<Executor> executor_;
};

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

std::vector<int> place_stream(const std::vector<double>& node_cost, int workers) {
  return place_longest_first(node_cost, workers);
}

std::vector<int64_t> channel_item_bytes(const std::vector<std::optional<ItemType>>& items) {
  std::vector<int64_t> bytes;
  for (const std::optional<ItemType>& t : items) {
    bytes.push_back(t ? t->element_count() * static_cast<int64_t>(element_size(t->dtype)) : 0);
  }
  return bytes;
}

StreamRunResult run_stream(const StreamProgram& program, const std::vector<Tensor>& inputs,
                           const StreamRunOptions& options) {
  if (inputs.empty()) throw Error(fmt::format("{}: no input items to stream", program.origin));
  const StreamGraph graph = flatten_stream(program.root);
  const StreamSchedule schedule = schedule_stream(graph, program.origin);
  require_bounded_iteration(schedule, program.origin);
  const std::vector<std::optional<ItemType>> channel_items = infer_channel_items(
      graph, options.mixed_items ? std::nullopt : std::optional(item_of(inputs.front())),
      program.origin, options.mixed_items);
  for (std::size_t i = 1; i < inputs.size() && !options.mixed_items; ++i) {
    if (!(item_of(inputs[i]) == item_of(inputs.front()))) {
      throw Error(fmt::format("{}: input item {} is {} but item 0 is {}", program.origin, i,
                              print_item_type(item_of(inputs[i])),
                              print_item_type(item_of(inputs.front()))));
    }
  }
  const int workers = std::max(options.workers, 1);
  StreamRunResult result;
  PlacementCosts costs;
  costs.handoff_seconds = options.handoff_seconds;
  costs.handoff_seconds_per_byte = options.handoff_seconds_per_byte;
  costs.item_bytes = channel_item_bytes(channel_items);
  if (options.firing_seconds.empty()) {
    result.node_cost = measure_node_costs(graph, schedule);
    for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
      costs.firing_seconds.push_back(result.node_cost[v] /
                                     static_cast<double>(schedule.repetitions[v]));
    }
  } else {
    if (options.firing_seconds.size() != graph.nodes.size()) {
      throw Error(fmt::format("{}: {} firing costs for {} actors", program.origin,
                              options.firing_seconds.size(), graph.nodes.size()));
    }
    costs.firing_seconds = options.firing_seconds;
    for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
      result.node_cost.push_back(costs.firing_seconds[v] *
                                 static_cast<double>(schedule.repetitions[v]));
    }
  }
  if (options.placement.empty()) {
    result.plan = place_stream_nodes(graph, schedule, costs, workers, options.method,
                                     options.capacity_factor);
  } else {
    if (options.placement.size() != graph.nodes.size()) {
      throw Error(fmt::format("{}: placement has {} entries for {} nodes", program.origin,
                              options.placement.size(), graph.nodes.size()));
    }
    for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
      if (options.placement[v] < 0 || options.placement[v] >= workers) {
        throw Error(fmt::format("{}: node \"{}\" placed on worker {} of {}", program.origin,
                                graph.nodes[v].name, options.placement[v], workers));
      }
    }
    result.plan = evaluate_placement(graph, schedule, costs, options.placement, workers,
                                     options.capacity_factor);
  }
  result.placement = result.plan.worker;
  result.predicted_items_per_second = result.plan.predicted_items_per_second;

  std::vector<std::unique_ptr<NodeWork>> work;
  std::map<std::pair<int, const Graph*>, std::shared_ptr<Executor>> executors;
  for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
    const StreamNode& node = graph.nodes[v];
    std::shared_ptr<Executor> executor;
    if (node.kind == StreamNodeKind::kFilter && node.stream->op == FilterOp::kModel) {
      std::shared_ptr<Executor>& shared =
          executors[{result.placement[v], node.stream->graph.get()}];
      if (!shared) shared = std::make_shared<Executor>(*node.stream->graph);
      executor = shared;
    }
    work.push_back(std::make_unique<NodeWork>(node, executor));
  }
  std::vector<ChannelState> channels(graph.channels.size());
  for (std::size_t c = 0; c < channels.size(); ++c) {
    channels[c].capacity = std::max<int64_t>(1, options.capacity_factor * schedule.buffers[c]);
  }
  channels[graph.output_channel].capacity = INT64_MAX;

  // By reference: per published name, the items of each publisher firing not yet read by
  // every reader; per node, how many times it fired (its firing index for references).
  struct Published {
    std::map<int64_t, std::vector<Item>> firings;
    std::map<int64_t, int> reads_left;
    int readers = 0;
  };
  std::map<std::string, Published> published;
  for (const StreamNode& node : graph.nodes) {
    if (node.kind == StreamNodeKind::kFilter && !node.stream->reads.empty()) {
      ++published[node.stream->reads].readers;
    }
  }
  std::vector<int64_t> firings(graph.nodes.size(), 0);

  std::mutex mutex;
  std::condition_variable changed;
  std::vector<bool> node_done(graph.nodes.size(), false);
  // Workers that found nothing to do since the last change.
  std::vector<bool> idle(workers, false);
  std::vector<bool> active(workers, true);
  // Worker 0 (the calling thread) also feeds the program input, so one worker needs no
  // hand-over between threads at all.
  std::size_t next_input = 0;
  std::string failure;
  std::vector<double> input_times;
  std::vector<double> busy(workers, 0.0);
  result.worker_cpu_seconds.assign(workers, 0.0);
  result.worker_wait_seconds.assign(workers, 0.0);
  result.worker_waits.assign(workers, 0);
  result.worker_preempted.assign(workers, 0);

  const auto progress = [&] {
    std::fill(idle.begin(), idle.end(), false);
    changed.notify_all();
  };
  // Marks thread `t` idle and reports whether every live thread is (a deadlock).
  const auto stalled = [&](int t) {
    idle[t] = true;
    for (int i = 0; i < workers; ++i) {
      if (active[i] && !idle[i]) return false;
    }
    return true;
  };
  const Clock::time_point start = Clock::now();

  const auto worker_loop = [&](int w) {
    std::vector<int> mine;
    for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
      if (result.placement[v] == w) mine.push_back(static_cast<int>(v));
    }
    const double cpu_start = thread_cpu_seconds();
    const int64_t preempted_start = thread_preemptions();
    std::unique_lock lock(mutex);
    while (failure.empty()) {
      bool fired = false, all_done = true;
      if (w == 0 && !channels[graph.input_channel].closed) {
        ChannelState& in = channels[graph.input_channel];
        all_done = false;
        const double now = seconds_since(start);
        while (next_input < inputs.size() && static_cast<int64_t>(in.items.size()) < in.capacity) {
          in.items.push_back(std::make_shared<const Tensor>(inputs[next_input++]));
          input_times.push_back(now);
          fired = true;
        }
        if (next_input == inputs.size()) {
          in.closed = true;
          fired = true;
        }
        if (fired) progress();
      }
      for (int v : mine) {
        if (node_done[v]) continue;
        all_done = false;
        const StreamNode& node = graph.nodes[v];
        bool ready = true, exhausted = false;
        for (std::size_t p = 0; p < node.inputs.size(); ++p) {
          const ChannelState& in = channels[node.inputs[p]];
          if (static_cast<int64_t>(in.items.size()) < node.peek[p]) {
            ready = false;
            exhausted = exhausted || in.closed;
          }
        }
        for (std::size_t p = 0; p < node.outputs.size() && ready; ++p) {
          const ChannelState& out = channels[node.outputs[p]];
          if (!out.abandoned &&
              static_cast<int64_t>(out.items.size()) + out.reserved + node.push[p] > out.capacity) {
            ready = false;
          }
        }
        const std::string* reads =
            node.kind == StreamNodeKind::kFilter && !node.stream->reads.empty()
                ? &node.stream->reads
                : nullptr;
        if (ready && reads && !published[*reads].firings.count(firings[v])) ready = false;
        if (!ready) {
          if (exhausted) {
            node_done[v] = true;
            for (int c : node.outputs) channels[c].closed = true;
            // Other branches may still produce for a joiner that is done: let them drain.
            for (int c : node.inputs) {
              channels[c].abandoned = true;
              channels[c].items.clear();
            }
            progress();
            fired = true;  // a change: scan again before waiting
          }
          continue;
        }
        // The popped items move into the window; the peeked rest stay and are copied.
        std::vector<std::vector<Item>> windows(node.inputs.size());
        for (std::size_t p = 0; p < node.inputs.size(); ++p) {
          ChannelState& in = channels[node.inputs[p]];
          windows[p].reserve(node.peek[p]);
          windows[p].insert(windows[p].end(), std::make_move_iterator(in.items.begin()),
                            std::make_move_iterator(in.items.begin() + node.pop[p]));
          windows[p].insert(windows[p].end(), in.items.begin() + node.pop[p],
                            in.items.begin() + node.peek[p]);
          in.items.erase(in.items.begin(), in.items.begin() + node.pop[p]);
        }
        for (std::size_t p = 0; p < node.outputs.size(); ++p) {
          channels[node.outputs[p]].reserved += node.push[p];
        }
        progress();
        const int64_t firing = firings[v]++;
        std::vector<std::vector<Item>> pushed;
        if (reads) {
          // The reader pushes the publisher's items of the same firing; the last reader frees them.
          Published& ref = published[*reads];
          pushed.push_back(ref.firings.at(firing));
          if (--ref.reads_left.at(firing) == 0) {
            ref.firings.erase(firing);
            ref.reads_left.erase(firing);
          }
        }
        lock.unlock();
        const Clock::time_point begin = Clock::now();
        try {
          if (!reads) pushed = work[v]->fire(windows);
        } catch (const std::exception& e) {
          lock.lock();
          failure = fmt::format("{}: \"{}\": {}", program.origin, node.name, e.what());
          progress();
          return;
        }
        const Clock::time_point end = Clock::now();
        busy[w] += std::chrono::duration<double>(end - begin).count();
        windows.clear();  // the last reader of an item frees it outside the lock
        lock.lock();
        if (options.trace) {
          result.firings.push_back({v, w, std::chrono::duration<double>(begin - start).count(),
                                    std::chrono::duration<double>(end - start).count()});
        }
        if (node.kind == StreamNodeKind::kFilter && !node.stream->publishes.empty()) {
          Published& ref = published[node.stream->publishes];
          if (ref.readers > 0) {
            ref.firings[firing] = pushed[0];
            ref.reads_left[firing] = ref.readers;
          }
        }
        const double now = seconds_since(start);
        for (std::size_t p = 0; p < node.outputs.size(); ++p) {
          ChannelState& out = channels[node.outputs[p]];
          out.reserved -= node.push[p];
          if (out.abandoned) continue;
          const bool program_output = node.outputs[p] == graph.output_channel;
          for (Item& t : pushed[p]) {
            if (program_output) out.push_times.push_back(now);
            if (!program_output || options.keep_outputs) out.items.push_back(std::move(t));
          }
        }
        progress();
        fired = true;
      }
      if (all_done) break;
      if (fired) continue;
      if (stalled(w)) {
        failure = fmt::format("{}: the stream deadlocked (channels too small for the rates)",
                              program.origin);
        progress();
        break;
      }
      const Clock::time_point sleep = Clock::now();
      changed.wait(lock);
      result.worker_wait_seconds[w] += seconds_since(sleep);
      ++result.worker_waits[w];
    }
    result.worker_cpu_seconds[w] = thread_cpu_seconds() - cpu_start;
    result.worker_preempted[w] = thread_preemptions() - preempted_start;
    active[w] = false;
    progress();
  };

  std::vector<std::thread> threads;
  for (int w = 1; w < workers; ++w) threads.emplace_back(worker_loop, w);
  worker_loop(0);
  for (std::thread& t : threads) t.join();
  if (!failure.empty()) throw Error(failure);
  result.seconds = seconds_since(start);

  ChannelState& out = channels[graph.output_channel];
  result.outputs.reserve(out.items.size());
  for (const Item& item : out.items) result.outputs.push_back(*item);
  result.output_count = static_cast<int64_t>(out.push_times.size());
  if (result.output_count == 0) {
    throw Error(fmt::format(
        "{}: {} input items gave no output item; one steady-state iteration needs {} input "
        "items, after {} that fill the peek windows",
        program.origin, inputs.size(), schedule.input_per_iteration, schedule.input_for_init));
  }
  result.items_per_second = static_cast<double>(inputs.size()) / result.seconds;
  for (double b : busy) result.worker_busy.push_back(b / result.seconds);
  // Iteration k is complete when its last output left; its last input entered at index
  // input_for_init + (k + 1) * input_per_iteration - 1.
  const int64_t per_out = schedule.output_per_iteration;
  const int64_t per_in = schedule.input_per_iteration;
  for (int64_t k = 0;; ++k) {
    const int64_t last_out = (k + 1) * per_out - 1 + 0;
    const int64_t last_in = schedule.input_for_init + (k + 1) * per_in - 1;
    if (last_out >= static_cast<int64_t>(out.push_times.size()) ||
        last_in >= static_cast<int64_t>(input_times.size())) {
      break;
    }
    result.iteration_latency.push_back(
        std::max(0.0, out.push_times[last_out] - input_times[last_in]));
  }
  return result;
}

}  // namespace cleave
