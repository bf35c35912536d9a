// Generated worker-thread programs of several samples at run time: an instance per worker,
// double-buffered hand-offs, the executable's main.
#include "codegen_runtime/sample_stream.h"

#include <fmt/core.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <span>
#include <thread>

#include "codegen_runtime/program_main.h"
#include "codegen_runtime/worker_permits.h"
#include "runtime/pinning.h"
#include "runtime/tensor.h"
#include "runtime/wait_policy.h"
#include "support/error.h"

namespace cleave {

namespace {

// One buffer of a channel. The writer fills it only while `filled` equals `emptied`; the reader
// takes it only while `filled` is ahead. Each count is changed by one side only.
struct Slot {
  std::unique_ptr<Buffer> bytes;
  std::size_t used = 0;
  std::optional<dnnl::memory::desc> layout;
  int64_t position = -1;  // Which sample of which run it holds: run x samples + sample.
  std::atomic<int64_t> filled{0};
  std::atomic<int64_t> emptied{0};
};

// After a failure every count jumps by this much, so that each waiter wakes and sees it.
constexpr int64_t kWakeAll = int64_t{1} << 40;

std::size_t value_capacity(const StaticValue& value) {
  return std::max(static_cast<std::size_t>(value.bytes),
                  plain_byte_size(static_cast<DataType>(value.dtype),
                                  std::span<const int64_t>(value.dims, value.dims + value.rank)));
}

}  // namespace

namespace {

// One call of a generated worker function, as a dry pass over it records it: the functions'
// loops have fixed bounds, so their calls do not depend on the values.
struct StreamCall {
  enum Kind { kStep, kInputs, kOutput, kSend, kReceive };
  Kind kind = kStep;
  int index = 0;  // Step, graph output or channel.
  int slot = 0;
  int sample = 0;
};

}  // namespace

struct SampleStreamWorker::Impl {
  SampleStreamProgram::Impl* owner = nullptr;
  int worker = 0;
  std::vector<StreamCall>* recording = nullptr;  // Set: calls are recorded, not run.
};

struct SampleStreamProgram::Impl {
  const SampleStreamTables& tables;
  const StaticProgramTables& program_tables;
  int samples = 1;
  std::vector<std::unique_ptr<StaticProgram>> programs;  // Per worker.
  WorkerPermits permits;  // Folded by set_threads: fewer cores than workers.
  // Folded onto one core: the caller runs every worker's recorded calls, none woken.
  bool one_thread = false;
  int threads_per_worker = 1;
  std::vector<std::vector<StreamCall>> calls;  // Per worker, for one_thread.
  std::vector<SampleStreamWorker::Impl> worker_impls;
  std::vector<SampleStreamWorker> workers;
  std::vector<std::vector<std::unique_ptr<Slot>>> slots;  // Per channel.
  std::vector<std::unique_ptr<Buffer>> received;  // Per channel: null, or the reader's copy.

  const void* const* inputs = nullptr;
  void* const* outputs = nullptr;
  int64_t run = -1;
  std::chrono::steady_clock::time_point start;
  std::vector<double> sample_seconds;
  std::mutex seconds_mutex;

  std::mutex mutex;
  std::condition_variable changed;
  int64_t run_number = 0;
  std::atomic<int> finished{0};  // Threads of workers 1.. done with this run; spun on first.
  bool shutting_down = false;
  std::atomic<bool> failed{false};
  bool broken = false;
  std::string failure;
  std::vector<std::thread> threads;

  Impl(const SampleStreamTables& t, const std::string& weights_path)
      : tables(t),
        program_tables(*t.program),
        samples(std::max(1, t.samples)),
        threads_per_worker(std::max(1, t.program->threads_per_worker)) {
    const int count = program_tables.workers;
    for (int w = 0; w < count; ++w) {
      programs.push_back(std::make_unique<StaticProgram>(program_tables, weights_path,
                                                         /*worker_threads=*/false));
    }
    worker_impls.resize(static_cast<std::size_t>(count));
    for (int w = 0; w < count; ++w) {
      worker_impls[w].owner = this;
      worker_impls[w].worker = w;
      workers.push_back(SampleStreamWorker(&worker_impls[w]));
    }
    slots.resize(static_cast<std::size_t>(t.channel_count));
    for (int c = 0; c < t.channel_count; ++c) {
      const std::size_t capacity = value_capacity(program_tables.values[t.channels[c].value]);
      for (int k = 0; k < std::max(1, t.channels[c].slots); ++k) {
        slots[c].push_back(std::make_unique<Slot>());
        slots[c].back()->bytes = std::make_unique<Buffer>(capacity, Buffer::Fill::kUninitialised);
      }
      // A value with no arena place (a run-time one) is received into a buffer of its own.
      received.push_back(programs[t.channels[c].to]->arena_place(t.channels[c].value)
                             ? nullptr
                             : std::make_unique<Buffer>(capacity, Buffer::Fill::kUninitialised));
    }
    sample_seconds.assign(static_cast<std::size_t>(samples), 0.0);
  }

  std::string channel_text(int c) const {
    const SampleStreamChannel& channel = tables.channels[c];
    return fmt::format("value '{}' from worker {} to worker {}",
                       program_tables.values[channel.value].name, channel.from, channel.to);
  }

  // Waits until `ready()`, spinning first, then sleeping on `count`'s changes; folded, sleeping
  // at once, the permit given back meanwhile.
  template <typename Ready>
  void wait_for(std::atomic<int64_t>& count, Ready&& ready) {
    const auto sleep = [&] {
      for (int64_t seen = count.load(std::memory_order_acquire); !ready();
           seen = count.load(std::memory_order_acquire)) {
        if (failed.load()) break;
        count.wait(seen);
      }
    };
    if (!ready()) {
      wait_as_worker(permits, sleep, [&] {
        if (!spin_until(ready)) sleep();
      });
    }
    if (failed.load()) throw Error("stopped: another worker failed");
  }

  void fail(const std::string& message) {
    {
      std::lock_guard lock(mutex);
      if (!failed.exchange(true)) failure = message;
    }
    for (auto& channel : slots) {
      for (auto& slot : channel) {
        slot->filled.fetch_add(kWakeAll);
        slot->filled.notify_all();
        slot->emptied.fetch_add(kWakeAll);
        slot->emptied.notify_all();
      }
    }
  }

  void run_worker(int w) {
    try {
      const WorkerPermit permit(permits);
      programs[w]->run_worker_here(w, [&] { tables.worker_functions[w](workers[w]); });
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }

  // Every worker's calls on the caller's thread, as the thread executor's one folded thread
  // runs the plan's tasks in one order: each worker's calls in its order, each as soon as it
  // would not wait (a receive once its buffer is full, a send once its buffer is free), so
  // that no hand-off pays a wake-up. Any such order is one the worker threads could take.
  void run_one_thread() {
    const auto ready = [&](const StreamCall& call) {
      if (call.kind != StreamCall::kSend && call.kind != StreamCall::kReceive) return true;
      const Slot& place = *slots[call.index][call.slot];
      const int64_t filled = place.filled.load(), emptied = place.emptied.load();
      return call.kind == StreamCall::kSend ? filled == emptied : filled > emptied;
    };
    std::vector<std::size_t> next(calls.size(), 0);
    for (bool left = true; left;) {
      bool progressed = false;
      left = false;
      int waiting = -1;
      for (std::size_t w = 0; w < calls.size(); ++w) {
        SampleStreamWorker& worker = workers[w];
        for (; next[w] < calls[w].size() && ready(calls[w][next[w]]); ++next[w]) {
          const StreamCall& call = calls[w][next[w]];
          try {
            switch (call.kind) {
              case StreamCall::kStep:
                worker.step(call.index);
                break;
              case StreamCall::kInputs:
                worker.use_inputs(call.sample);
                break;
              case StreamCall::kOutput:
                worker.take_output(call.index, call.sample);
                break;
              case StreamCall::kSend:
                worker.send(call.index, call.slot, call.sample);
                break;
              case StreamCall::kReceive:
                worker.receive(call.index, call.slot, call.sample);
                break;
            }
          } catch (const std::exception& e) {
            throw Error(fmt::format("worker {}: {}", w, e.what()));
          }
          progressed = true;
        }
        if (next[w] < calls[w].size()) {
          left = true;
          waiting = static_cast<int>(w);
        }
      }
      if (left && !progressed) {
        const StreamCall& call = calls[waiting][next[waiting]];
        throw Error(
            fmt::format("worker {} waits on {} (sample {}) and no other worker can go "
                        "on: the workers cannot be folded onto one thread",
                        waiting, channel_text(call.index), call.sample));
      }
    }
  }

  // As StaticProgram's workers: pinned to the plan's cores (or the allowed CPUs in turn) unless
  // folded, each run started by a new run number, its end counted under the mutex.
  void pin_worker(int w) {
    if (!permits.folded()) pin_current_thread(static_worker_cores(program_tables, w));
  }

  void worker_main(int w) {
    int64_t seen = 0;
    while (true) {
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return shutting_down || run_number != seen; });
        if (shutting_down) return;
        // Pinned at the first run: set_threads, which may fold the workers, comes before it.
        if (seen == 0) pin_worker(w);
        seen = run_number;
      }
      run_worker(w);
      std::lock_guard lock(mutex);
      finished.fetch_add(1);
      changed.notify_all();
    }
  }
};

void SampleStreamWorker::step(int index) {
  if (impl_->recording) {
    impl_->recording->push_back({StreamCall::kStep, index, 0, 0});
    return;
  }
  impl_->owner->programs[impl_->worker]->step(index);
}

void SampleStreamWorker::use_inputs(int sample) {
  if (impl_->recording) {
    impl_->recording->push_back({StreamCall::kInputs, 0, 0, sample});
    return;
  }
  SampleStreamProgram::Impl& s = *impl_->owner;
  s.programs[impl_->worker]->set_inputs(
      s.inputs + static_cast<std::size_t>(sample) *
                     static_cast<std::size_t>(s.program_tables.graph_input_count));
}

void SampleStreamWorker::take_output(int index, int sample) {
  if (impl_->recording) {
    impl_->recording->push_back({StreamCall::kOutput, index, 0, sample});
    return;
  }
  SampleStreamProgram::Impl& s = *impl_->owner;
  const std::size_t outputs = static_cast<std::size_t>(s.program_tables.graph_output_count);
  s.programs[impl_->worker]->get_output(
      index,
      s.outputs[static_cast<std::size_t>(sample) * outputs + static_cast<std::size_t>(index)]);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - s.start).count();
  std::lock_guard lock(s.seconds_mutex);
  double& done = s.sample_seconds[static_cast<std::size_t>(sample)];
  done = std::max(done, seconds);
}

void SampleStreamWorker::send(int c, int slot, int sample) {
  if (impl_->recording) {
    impl_->recording->push_back({StreamCall::kSend, c, slot, sample});
    return;
  }
  SampleStreamProgram::Impl& s = *impl_->owner;
  Slot& place = *s.slots[c][slot];
  s.wait_for(place.emptied, [&] {
    return place.emptied.load(std::memory_order_acquire) ==
           place.filled.load(std::memory_order_relaxed);
  });
  const Tensor& value = s.programs[impl_->worker]->value(s.tables.channels[c].value);
  const std::size_t bytes = value.byte_size();
  if (bytes > place.bytes->size()) {
    throw Error(fmt::format("{} takes {} bytes, more than its buffer's {}", s.channel_text(c),
                            bytes, place.bytes->size()));
  }
  std::memcpy(place.bytes->data(), value.raw(), bytes);
  place.used = bytes;
  place.layout = value.layout();
  place.position = s.run * s.samples + sample;
  place.filled.fetch_add(1, std::memory_order_release);
  place.filled.notify_all();
}

void SampleStreamWorker::receive(int c, int slot, int sample) {
  if (impl_->recording) {
    impl_->recording->push_back({StreamCall::kReceive, c, slot, sample});
    return;
  }
  SampleStreamProgram::Impl& s = *impl_->owner;
  Slot& place = *s.slots[c][slot];
  s.wait_for(place.filled, [&] {
    return place.filled.load(std::memory_order_acquire) >
           place.emptied.load(std::memory_order_relaxed);
  });
  const int64_t expected = s.run * s.samples + sample;
  if (place.position != expected) {
    throw Error(fmt::format("{}: buffer {} holds sample {} of run {}, not sample {}",
                            s.channel_text(c), slot, place.position % s.samples,
                            place.position / s.samples, sample));
  }
  // Into the value's own place in this worker's arena: where the generator placed a Concat
  // input, that is its slice of the Concat's output, and the Concat's kernel skips the copy.
  const int v = s.tables.channels[c].value;
  const StaticValue& entry = s.program_tables.values[v];
  void* home = s.programs[impl_->worker]->arena_place(v);
  void* target = home ? home : s.received[c]->data();
  if (home && static_cast<int64_t>(place.used) > entry.bytes) {
    throw Error(fmt::format("{}: {} bytes arrived for a value of {} planned bytes",
                            s.channel_text(c), place.used, entry.bytes));
  }
  std::memcpy(target, place.bytes->data(), place.used);
  Tensor& value = s.programs[impl_->worker]->value(v);
  value = Tensor::borrow(static_cast<DataType>(entry.dtype),
                         std::vector<int64_t>(entry.dims, entry.dims + entry.rank), target);
  value.set_layout(place.layout);
  place.emptied.fetch_add(1, std::memory_order_release);
  place.emptied.notify_all();
}

SampleStreamProgram::SampleStreamProgram(const SampleStreamTables& tables,
                                         const std::string& weights_path)
    : impl_(std::make_unique<Impl>(tables, weights_path)) {
  // Worker 0 runs on the caller's thread (StaticProgram's rule): no wake-up of a worker 0
  // thread starts a run and none of the caller ends it.
  if (tables.program->workers > 1) {
    for (int w = 1; w < tables.program->workers; ++w)
      impl_->threads.emplace_back([this, w] { impl_->worker_main(w); });
  }
}

SampleStreamProgram::~SampleStreamProgram() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->shutting_down = true;
    impl_->changed.notify_all();
  }
  for (auto& thread : impl_->threads) thread.join();
}

void SampleStreamProgram::set_threads(const PlanThreads& threads) {
  // Each instance runs one worker on its caller's thread: only its intra-op threads count.
  for (auto& program : impl_->programs)
    program->set_threads({impl_->program_tables.workers, threads.threads_per_worker});
  Impl& s = *impl_;
  s.permits.set(threads.threads, s.program_tables.workers);
  s.threads_per_worker = std::max(1, threads.threads_per_worker);
  s.one_thread = threads.threads == 1 && s.program_tables.workers > 1;
  if (s.one_thread && s.calls.empty()) {
    s.calls.resize(static_cast<std::size_t>(s.program_tables.workers));
    for (int w = 0; w < s.program_tables.workers; ++w) {
      s.worker_impls[w].recording = &s.calls[w];
      s.tables.worker_functions[w](s.workers[w]);
      s.worker_impls[w].recording = nullptr;
    }
  }
}

const std::vector<double>& SampleStreamProgram::sample_seconds() const {
  return impl_->sample_seconds;
}

const SampleStreamTables& SampleStreamProgram::tables() const {
  return impl_->tables;
}

void SampleStreamProgram::run(const void* const* inputs, void* const* outputs) {
  Impl& s = *impl_;
  if (s.broken) throw Error("an earlier run failed: " + s.failure);
  s.inputs = inputs;
  s.outputs = outputs;
  ++s.run;
  std::fill(s.sample_seconds.begin(), s.sample_seconds.end(), 0.0);
  s.start = std::chrono::steady_clock::now();
  if (s.one_thread) {
    // No new run number: the worker threads sleep through the program's runs.
    omp_set_num_threads(s.threads_per_worker);
    try {
      s.run_one_thread();
    } catch (const std::exception& e) {
      s.broken = true;
      s.failure = e.what();
      throw;
    }
    return;
  }
  const int others = s.program_tables.workers - 1;
  if (others > 0) {
    std::lock_guard lock(s.mutex);
    s.finished = 0;
    ++s.run_number;
    s.changed.notify_all();
  }
  // Worker 0 on the caller's thread and OpenMP pool, as the thread executor runs it (and as
  // StaticProgram::run, pinned to worker 0's cores on one thread).
  {
    const bool pin = others > 0 && s.threads_per_worker == 1 && !s.permits.folded();
    const ThreadPinScope pinned(pin ? static_worker_cores(s.program_tables, 0)
                                    : std::vector<int>());
    s.run_worker(0);
  }
  const auto done = [&] { return s.finished.load() == others; };
  if (others > 0) wait_for_other_workers(s.mutex, s.changed, s.permits.folded(), done);
  if (s.failed) {
    s.broken = true;
    throw Error(s.failure);
  }
}

namespace {

int run_stream_main(const SampleStreamTables& tables, const ProgramMainOptions& options) {
  const StaticProgramTables& p = *tables.program;
  const std::size_t baseline_rss = process_peak_rss_bytes();
  SampleStreamProgram program(tables,
                              options.weights.empty() ? default_weights_path(p) : options.weights);
  // Sample s gets seed S + s, as under `cleave run --samples N`.
  std::vector<std::vector<Tensor>> inputs, outputs;
  std::vector<const void*> input_pointers;
  std::vector<void*> output_pointers;
  for (int sample = 0; sample < std::max(1, tables.samples); ++sample) {
    ProgramMainOptions seeded = options;
    seeded.seed = options.seed + static_cast<uint64_t>(sample);
    inputs.push_back(program_inputs(p, seeded));
    outputs.push_back(program_output_buffers(p));
  }
  for (const std::vector<Tensor>& sample : inputs) {
    for (const Tensor& input : sample) input_pointers.push_back(input.raw());
  }
  for (std::vector<Tensor>& sample : outputs) {
    for (Tensor& output : sample) output_pointers.push_back(output.raw());
  }
  nlohmann::json extra = nlohmann::json::object();
  const std::vector<double> latencies =
      time_program_runs(program, p, options, input_pointers.data(), output_pointers.data(), extra);
  extra["sample_latency_ms"] = sample_latency_json(program.sample_seconds());
  return report_program_run(p, options, outputs.front(), latencies, baseline_rss, extra, outputs);
}

}  // namespace

int sample_stream_main(const SampleStreamTables& tables, int argc, char** argv) {
  apply_default_wait_policy(argv);
  const std::string name = argc > 0 ? std::filesystem::path(argv[0]).filename().string() : "model";
  try {
    bool help = false;
    const ProgramMainOptions options = parse_program_options(argc, argv, false, help);
    if (help) {
      fmt::print("{}", program_usage(name, false));
      return 0;
    }
    return run_stream_main(tables, options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: {}\n", name, e.what());
    return 1;
  }
}

}  // namespace cleave
