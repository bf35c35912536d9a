// Runtime of generated C++ programs: mapped weights, one arena, prepared kernels, ready flags.
#include "codegen_runtime/static_program.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <fmt/format.h>
#include <omp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <span>
#include <thread>

#include "codegen_runtime/worker_permits.h"
#include "ir/text.h"
#include "runtime/concat_placement.h"
#include "runtime/executor.h"
#include "runtime/intra_op_team.h"
#include "runtime/kernel.h"
#include "runtime/pinning.h"
#include "runtime/task_loop.h"
#include "runtime/tensor.h"
#include "runtime/wait_policy.h"

namespace cleave {

namespace {

// The weights file, read-only and shared with every other process that maps it.
class MappedFile {
 public:
  MappedFile(const std::string& path, int64_t expected_bytes) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) {
      throw Error(fmt::format("{}: cannot open the weights file: {}", path, std::strerror(errno)));
    }
    struct stat info {};
    if (::fstat(fd, &info) != 0 || info.st_size != expected_bytes) {
      ::close(fd);
      throw Error(fmt::format("{}: the weights file has {} bytes, the program was generated for {}",
                              path, static_cast<int64_t>(info.st_size), expected_bytes));
    }
    size_ = static_cast<std::size_t>(info.st_size);
    if (size_ > 0) {
      void* data = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (data == MAP_FAILED) {
        ::close(fd);
        throw Error(fmt::format("{}: cannot map the weights file: {}", path, std::strerror(errno)));
      }
      data_ = static_cast<const std::byte*>(data);
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
  }
  const std::byte* data() const { return data_; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

std::vector<int64_t> dims_of(const StaticValue& value) {
  return std::vector<int64_t>(value.dims, value.dims + value.rank);
}

}  // namespace

struct StaticProgram::Impl {
  struct Step {
    NodeId node = -1;
    const KernelInfo* info = nullptr;
    bool blocked_outputs_allowed = false;
    std::unique_ptr<Kernel> kernel;
    int team = 1;  // The kernel's intra-op threads, chosen as `cleave run` chooses them.
    std::vector<const Tensor*> inputs;
    std::vector<bool> constant;
    std::vector<Tensor*> outputs;
    // Run-time steps only: `cleave run`'s runner of the node and the outputs it made.
    std::unique_ptr<NodeRunner> runner;
    std::vector<Tensor> made;
  };

  const StaticProgramTables& tables;
  int threads_per_worker = 1;  // The tables' count unless set_threads lowered it.
  WorkerPermits permits;       // Folded by set_threads: fewer cores than workers.
  // Folded onto one core: the caller runs one_thread_steps alone, no worker woken.
  bool one_thread = false;
  std::vector<int> one_thread_steps;
  Graph graph;
  ConvolutionFamily family = ConvolutionFamily::kBlocked;
  MappedFile weights;
  Buffer arena;
  std::vector<Tensor> tensors;  // Per value index.
  std::vector<Step> steps;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::vector<std::unique_ptr<dnnl::stream>> streams;  // Per worker.
  std::vector<BufferPool> pools;                       // Per worker: run-time steps' outputs.
  std::vector<Tensor> last_outputs;                    // Graph outputs of the last run, plain.
  std::unique_ptr<std::atomic<int64_t>[]> channels;

  std::mutex mutex;
  std::condition_variable changed;
  int64_t run_number = 0;
  std::atomic<int> finished{0};  // Threads of workers 1.. done with this run; spun on first.
  bool shutting_down = false;
  std::atomic<bool> failed{false};
  std::string failure;
  std::vector<std::thread> threads;

  Impl(const StaticProgramTables& t, const std::string& weights_path)
      : tables(t),
        threads_per_worker(std::max(1, t.threads_per_worker)),
        graph(parse_graph(t.graph_text)),
        weights(weights_path, t.weights_bytes),
        arena(static_cast<std::size_t>(std::max<int64_t>(t.arena_bytes, 1))) {
    auto parsed = parse_convolution_family(t.convolution_family);
    if (!parsed) throw Error(fmt::format("unknown convolution family '{}'", t.convolution_family));
    family = *parsed;
    tensors.resize(t.value_count);
    for (int v = 0; v < t.value_count; ++v) {
      const StaticValue& value = t.values[v];
      const auto dtype = static_cast<DataType>(value.dtype);
      if (value.kind == StaticValue::kConstant) {
        tensors[v] = Tensor::borrow(dtype, dims_of(value), weights.data() + value.offset);
      } else if (value.kind == StaticValue::kGraphInput) {
        tensors[v] = Tensor::borrow(dtype, dims_of(value), arena.data() + value.offset);
      }
    }
    steps.resize(t.step_count);
    for (int s = 0; s < t.step_count; ++s) {
      const StaticStep& entry = t.steps[s];
      Step& step = steps[s];
      auto output = graph.find_value(entry.output);
      if (!output || graph.value(*output).producer < 0) {
        throw Error(fmt::format("step {}: the graph text has no node writing '{}'", entry.node,
                                entry.output));
      }
      step.node = graph.value(*output).producer;
      step.info = &kernel_for(graph, step.node);
      step.blocked_outputs_allowed = t.blocked_layouts != 0;
      for (ValueId value : graph.node(step.node).outputs) {
        step.blocked_outputs_allowed =
            step.blocked_outputs_allowed && blocked_layout_allowed(graph, value);
      }
      for (int i = entry.inputs_begin; i < entry.inputs_end; ++i) {
        const int v = t.step_values[i];
        step.inputs.push_back(v < 0 ? nullptr : &tensors[v]);
        step.constant.push_back(v >= 0 && t.values[v].kind == StaticValue::kConstant);
      }
      for (int i = entry.outputs_begin; i < entry.outputs_end; ++i)
        step.outputs.push_back(&tensors[t.step_values[i]]);
      if (entry.outputs_begin < entry.outputs_end &&
          t.values[t.step_values[entry.outputs_begin]].kind == StaticValue::kRunTime) {
        step.runner = make_runner(graph, step.node, t.blocked_layouts != 0, family);
      }
    }
    channels = std::make_unique<std::atomic<int64_t>[]>(std::max(1, t.channel_count));
    for (int c = 0; c < t.channel_count; ++c) channels[c].store(0);
    for (int w = 0; w < t.workers; ++w) {
      streams.push_back(std::make_unique<dnnl::stream>(engine));
      pools.emplace_back(false);  // Shapes may change from run to run: no static plan.
    }
    last_outputs.resize(t.graph_output_count);
  }

  // Makes the kernel of a step for the inputs its producers prepared, and places its outputs
  // where the generator planned them.
  void prepare(int index) {
    Step& step = steps[index];
    const StaticStep& entry = tables.steps[index];
    const Node& node = graph.node(step.node);
    step.team = intra_op_team(node_work(node, step.inputs), threads_per_worker);
    KernelContext context{graph,
                          step.node,
                          node,
                          opset_of(graph, node),
                          step.inputs,
                          step.constant,
                          engine,
                          step.team,
                          step.blocked_outputs_allowed,
                          tables.blocked_layouts ? family : ConvolutionFamily::kBlocked};
    {
      const IntraOpTeamScope team(step.team);
      step.kernel = step.info->create(context);
    }
    const std::vector<OutputSpec> specs = step.kernel->output_specs();
    if (specs.size() != step.outputs.size()) {
      throw Error(fmt::format("step {}: the kernel makes {} outputs, the program planned {}",
                              entry.node, specs.size(), step.outputs.size()));
    }
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const OutputSpec& spec = specs[i];
      const int v = tables.step_values[entry.outputs_begin + static_cast<int>(i)];
      const StaticValue& value = tables.values[v];
      const std::size_t bytes =
          spec.layout ? spec.layout->get_size() : plain_byte_size(spec.dtype, spec.shape);
      if (spec.shape != dims_of(value) || static_cast<int>(spec.dtype) != value.dtype ||
          (spec.alias_of < 0 && static_cast<int64_t>(bytes) > value.bytes) ||
          (spec.alias_of >= 0) != (value.alias_of >= 0)) {
        throw Error(fmt::format(
            "step {}: output {} is {} [{}] of {} bytes{} here, the program was generated for {} "
            "[{}] of {} bytes; regenerate it on this machine",
            entry.node, value.name, dtype_name(spec.dtype), fmt::join(spec.shape, ","), bytes,
            spec.alias_of >= 0 ? " (a view)" : "", dtype_name(static_cast<DataType>(value.dtype)),
            fmt::join(dims_of(value), ","), value.bytes));
      }
      if (spec.alias_of >= 0) {
        tensors[v] = Tensor::borrow(spec.dtype, spec.shape, step.inputs.at(spec.alias_of)->raw());
      } else {
        tensors[v] = Tensor::borrow(spec.dtype, spec.shape, arena.data() + value.offset);
      }
      tensors[v].set_layout(spec.layout);
    }
    check_concat_in_place(index);
  }

  // The generator lets the steps before a Concat write its inputs straight into its output
  // (place_concat_inputs), and the Concat's kernel skips an input whose bytes already are where
  // it would copy them. That holds while the kernels prepared here lay out the values as the
  // generator's did: an input inside the output anywhere else would be copied over itself.
  void check_concat_in_place(int index) const {
    const Step& step = steps[index];
    const Node& node = graph.node(step.node);
    if (node.op_type != "Concat" || step.outputs.size() != 1) return;
    const Tensor& whole = *step.outputs[0];
    const auto* begin = static_cast<const std::byte*>(whole.raw());
    const std::byte* end = begin + whole.byte_size();
    std::optional<std::vector<std::optional<std::size_t>>> offsets;
    bool offsets_found = false;
    for (std::size_t i = 0; i < step.inputs.size() && i < node.inputs.size(); ++i) {
      const Tensor* input = step.inputs[i];
      if (!input || !input->raw()) continue;
      const auto* at = static_cast<const std::byte*>(input->raw());
      if (at + input->byte_size() <= begin || at >= end) continue;  // A buffer of its own.
      if (!offsets_found) {
        std::vector<OutputSpec> specs(node.inputs.size());
        for (std::size_t k = 0; k < specs.size() && k < step.inputs.size(); ++k) {
          if (step.inputs[k])
            specs[k] = {step.inputs[k]->dtype(), step.inputs[k]->shape(), step.inputs[k]->layout()};
        }
        offsets = concat_input_offsets(
            graph, node, {whole.dtype(), whole.shape(), whole.layout()},
            [&](ValueId value) -> const OutputSpec* {
              const auto k = static_cast<std::size_t>(
                  std::find(node.inputs.begin(), node.inputs.end(), value) - node.inputs.begin());
              return k < step.inputs.size() && step.inputs[k] ? &specs[k] : nullptr;
            });
        offsets_found = true;
      }
      // A value the Concat reads twice is placed at one of its slices and copied to the other.
      const std::size_t placed_at = static_cast<std::size_t>(at - begin);
      bool in_its_slice = false;
      for (std::size_t k = 0; offsets && k < offsets->size(); ++k)
        in_its_slice =
            in_its_slice || (node.inputs[k] == node.inputs[i] && (*offsets)[k] == placed_at);
      if (in_its_slice) continue;
      throw Error(fmt::format(
          "step {}: input {} ('{}', {}) was placed at byte {} of the Concat's output, where the "
          "kernels prepared here do not put it ({}); regenerate the program on this machine",
          tables.steps[index].node, i, graph.value(node.inputs[i]).name, input->describe(),
          placed_at,
          offsets && (*offsets)[i] ? fmt::format("its slice starts at byte {}", *(*offsets)[i])
                                   : std::string("its bytes are no slice of the output")));
    }
  }

  // A run-time step runs as the executor runs a node: prepared again when its inputs' shapes
  // or shape-deciding values changed, outputs in buffers of the size this run needs.
  void run_time_step(int index) {
    Step& step = steps[index];
    const StaticStep& entry = tables.steps[index];
    dnnl::stream& stream = *streams[entry.worker];
    step.runner->run(step.inputs, step.constant, step.made, pools[entry.worker], engine, stream,
                     threads_per_worker);
    stream.wait();
    if (step.made.size() < step.outputs.size()) {
      throw Error(fmt::format("the kernel made {} outputs, the program planned {}",
                              step.made.size(), step.outputs.size()));
    }
    for (std::size_t i = 0; i < step.outputs.size(); ++i) *step.outputs[i] = step.made[i];
  }

  void fail(const std::string& message) {
    {
      std::lock_guard lock(mutex);
      if (!failed.exchange(true)) failure = message;
    }
    // Wake every worker waiting on a channel; receive() then sees the failure.
    for (int c = 0; c < tables.channel_count; ++c) {
      channels[c].store(run_number);
      channels[c].notify_all();
    }
  }

  void run_worker(int worker) {
    try {
      const WorkerPermit permit(permits);
      tables.worker_functions[worker](*owner);
    } catch (const std::exception& e) {
      fail(fmt::format("worker {}: {}", worker, e.what()));
    }
  }

  // Pinned to its cores as the parallel executor's workers are, unless the workers are folded
  // (as the executor's folded threads, where they run is the scheduler's choice).
  void pin_worker(int worker) {
    if (permits.folded()) return;
    // Best effort, as in the parallel executor.
    pin_current_thread(static_worker_cores(tables, worker));
  }

  void worker_main(int worker) {
    int64_t seen = 0;
    while (true) {
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return shutting_down || run_number != seen; });
        if (shutting_down) return;
        // Pinned at the first run: set_threads, which may fold the workers, comes before it.
        if (seen == 0) pin_worker(worker);
        seen = run_number;
      }
      omp_set_num_threads(threads_per_worker);
      run_worker(worker);
      std::lock_guard lock(mutex);
      finished.fetch_add(1);
      changed.notify_all();
    }
  }

  // Every worker's steps on one thread, as the thread executor's one folded thread runs the
  // plan's tasks in one order: each worker's steps in its order, a step as soon as the values
  // it reads from other workers are made. Any such order keeps the order of the concurrent
  // program's hand-offs, so the arena's reuse stays safe, and no wake-up is paid.
  std::vector<int> one_thread_order() const {
    std::vector<int> producer(static_cast<std::size_t>(tables.value_count), -1);
    std::vector<std::vector<int>> queues(static_cast<std::size_t>(std::max(1, tables.workers)));
    for (int s = 0; s < tables.step_count; ++s) {
      const StaticStep& entry = tables.steps[s];
      for (int i = entry.outputs_begin; i < entry.outputs_end; ++i)
        producer[tables.step_values[i]] = s;
      queues.at(static_cast<std::size_t>(entry.worker)).push_back(s);
    }
    std::vector<bool> made(static_cast<std::size_t>(tables.step_count), false);
    std::vector<std::size_t> next(queues.size(), 0);
    std::vector<int> order;
    while (static_cast<int>(order.size()) < tables.step_count) {
      bool progressed = false;
      int waiting = -1;
      for (std::size_t w = 0; w < queues.size(); ++w) {
        for (; next[w] < queues[w].size(); ++next[w]) {
          const int s = queues[w][next[w]];
          const StaticStep& entry = tables.steps[s];
          bool ready = true;
          for (int i = entry.inputs_begin; i < entry.inputs_end && ready; ++i) {
            const int v = tables.step_values[i];
            ready = v < 0 || producer[v] < 0 || made[producer[v]];
          }
          if (!ready) {
            waiting = s;
            break;
          }
          made[s] = true;
          order.push_back(s);
          progressed = true;
        }
      }
      if (!progressed) {
        throw Error(
            fmt::format("step {} waits for a value no other step can make first: the "
                        "workers cannot be folded onto one thread",
                        tables.steps[waiting].node));
      }
    }
    return order;
  }

  StaticProgram* owner = nullptr;
};

StaticProgram::StaticProgram(const StaticProgramTables& tables, const std::string& weights_path,
                             bool worker_threads)
    : impl_(std::make_unique<Impl>(tables, weights_path)) {
  impl_->owner = this;
  // Worker 0 runs on the caller's thread (as the thread executor's): no wake-up of a worker 0
  // thread starts a run and none of the caller ends it.
  if (worker_threads && tables.workers > 1) {
    for (int w = 1; w < tables.workers; ++w)
      impl_->threads.emplace_back([this, w] { impl_->worker_main(w); });
  }
}

StaticProgram::~StaticProgram() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->shutting_down = true;
    impl_->changed.notify_all();
  }
  for (auto& thread : impl_->threads) thread.join();
}

void StaticProgram::set_threads(const PlanThreads& threads) {
  std::lock_guard lock(impl_->mutex);
  impl_->threads_per_worker = std::max(1, threads.threads_per_worker);
  impl_->permits.set(threads.threads, impl_->tables.workers);
  impl_->one_thread = threads.threads == 1 && impl_->tables.workers > 1;
  if (impl_->one_thread && impl_->one_thread_steps.empty())
    impl_->one_thread_steps = impl_->one_thread_order();
}

const StaticProgramTables& StaticProgram::tables() const {
  return impl_->tables;
}

void StaticProgram::set_inputs(const void* const* inputs) {
  Impl& s = *impl_;
  for (int i = 0; i < s.tables.graph_input_count; ++i) {
    const StaticValue& value = s.tables.values[s.tables.graph_inputs[i]];
    std::memcpy(s.arena.data() + value.offset, inputs[i], static_cast<std::size_t>(value.bytes));
  }
}

void StaticProgram::get_outputs(void* const* outputs) {
  for (int i = 0; i < impl_->tables.graph_output_count; ++i) get_output(i, outputs[i]);
}

void StaticProgram::get_output(int index, void* buffer) {
  Impl& s = *impl_;
  dnnl::stream stream(s.engine);
  const int v = s.tables.graph_outputs[index];
  const Tensor& plain = s.last_outputs[index] = to_plain(s.tensors[v], s.engine, stream);
  if (s.tables.values[v].kind == StaticValue::kRunTime) {
    if (buffer) {
      throw Error(fmt::format(
          "output '{}' has a shape known only at run time ({} this run): its buffer must be "
          "null, and the output is read after the run (model_output in the C API)",
          s.tables.values[v].name, plain.describe()));
    }
    return;
  }
  if (!buffer) return;
  std::memcpy(buffer, plain.raw(),
              plain_byte_size(plain.dtype(), std::span<const int64_t>(plain.shape())));
}

const Tensor& StaticProgram::output(int index) const {
  return impl_->last_outputs.at(static_cast<std::size_t>(index));
}

Tensor& StaticProgram::value(int index) {
  return impl_->tensors.at(static_cast<std::size_t>(index));
}

void* StaticProgram::arena_place(int index) {
  if (index < 0 || index >= impl_->tables.value_count) return nullptr;
  const StaticValue& value = impl_->tables.values[index];
  if (value.kind != StaticValue::kActivation || value.alias_of >= 0) return nullptr;
  return impl_->arena.data() + value.offset;
}

void StaticProgram::run_worker_here(int worker, const std::function<void()>& function) {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mutex);
    s.failed = false;
    s.failure.clear();
    ++s.run_number;
  }
  omp_set_num_threads(s.threads_per_worker);
  try {
    function();
  } catch (const std::exception& e) {
    throw Error(fmt::format("worker {}: {}", worker, e.what()));
  }
}

void StaticProgram::run(const void* const* inputs, void* const* outputs) {
  Impl& s = *impl_;
  set_inputs(inputs);
  if (s.one_thread) {
    // No new run number: the worker threads sleep through the program's runs.
    omp_set_num_threads(s.threads_per_worker);
    for (int index : s.one_thread_steps) step(index);
    get_outputs(outputs);
    return;
  }
  {
    std::unique_lock lock(s.mutex);
    s.failed = false;
    s.failure.clear();
    s.finished = 0;
    ++s.run_number;
    if (s.tables.workers > 1) s.changed.notify_all();
  }
  // Worker 0 on the caller's thread and OpenMP pool, as the thread executor runs it: pinned to
  // worker 0's cores for the run, so that it never shares a core with a worker spinning on its
  // next input, and only on one thread (a team made while pinned would keep the binding).
  omp_set_num_threads(s.threads_per_worker);
  {
    const bool pin = s.threads.size() > 0 && s.threads_per_worker == 1 && !s.permits.folded();
    const ThreadPinScope pinned(pin ? static_worker_cores(s.tables, 0) : std::vector<int>());
    s.run_worker(0);
  }
  const int others = s.tables.workers - 1;
  const auto done = [&] { return s.finished.load() == others; };
  if (others > 0) wait_for_other_workers(s.mutex, s.changed, s.permits.folded(), done);
  if (s.failed) throw Error(s.failure);
  get_outputs(outputs);
}

void StaticProgram::step(int index) {
  Impl& s = *impl_;
  Impl::Step& step = s.steps[index];
  if (!step.kernel && !step.runner) s.prepare(index);
  try {
    if (step.runner) {
      s.run_time_step(index);
      return;
    }
    dnnl::stream& stream = *s.streams[s.tables.steps[index].worker];
    {
      const IntraOpTeamScope team(step.team);
      step.kernel->run(step.inputs, step.outputs, stream);
    }
    stream.wait();
  } catch (const Error& e) {
    throw Error(fmt::format("step {}: {}", s.tables.steps[index].node, e.what()));
  }
}

void StaticProgram::send(int channel) {
  std::atomic<int64_t>& flag = impl_->channels[channel];
  flag.store(impl_->run_number, std::memory_order_release);
  flag.notify_all();
}

void StaticProgram::receive(int channel) {
  Impl& s = *impl_;
  std::atomic<int64_t>& flag = s.channels[channel];
  const int64_t run = s.run_number;
  const auto sleep = [&] {
    for (int64_t seen = flag.load(std::memory_order_acquire); seen != run;
         seen = flag.load(std::memory_order_acquire)) {
      flag.wait(seen);
    }
  };
  // The runtime's spin (as the thread executor's workers wait), then the futex; folded, the
  // futex alone, the permit given back meanwhile.
  wait_as_worker(s.permits, sleep, [&] {
    spin_until([&] { return flag.load(std::memory_order_acquire) == run; });
    sleep();
  });
  if (s.failed.load()) throw Error("stopped: another worker failed");
}

std::vector<int> static_worker_cores(const StaticProgramTables& tables, int worker) {
  std::vector<int> cores;
  for (int k = 0; k < tables.threads_per_worker; ++k) {
    const int core = tables.worker_cores[worker * tables.threads_per_worker + k];
    if (core >= 0) cores.push_back(core);
  }
  if (cores.empty()) {
    // As the parallel executor: worker w takes the allowed CPUs w*threads.. in turn.
    const std::vector<int> allowed = allowed_cpus();
    for (int k = 0; k < tables.threads_per_worker && !allowed.empty(); ++k)
      cores.push_back(allowed[(worker * tables.threads_per_worker + k) % allowed.size()]);
  }
  return cores;
}

}  // namespace cleave
