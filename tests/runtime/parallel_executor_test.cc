// The parallel executor: bitwise-equal outputs, refused plans, errors that stop every worker.
#include "runtime/parallel_executor.h"
#include "runtime/pinning.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "cost/cost_table.h"
#include "frontend/costs.h"
#include "frontend/model_plan.h"
#include "ir/text.h"
#include "modelgen/inception.h"
#include "runtime/random_inputs.h"
#include "support/system_load.h"

namespace cleave {
namespace {

Graph small_inception(int blocks = 2) {
  InceptionOptions options;
  options.blocks = blocks;
  options.channels = 16;
  options.height = 8;
  options.width = 8;
  return generate_inception(options);
}

void expect_bitwise_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape());
    ASSERT_EQ(a[i].byte_size(), b[i].byte_size());
    EXPECT_EQ(std::memcmp(a[i].raw(), b[i].raw(), a[i].byte_size()), 0) << "output " << i;
  }
}

ModelPlan plan_for(const Graph& graph, const std::string& strategy, int samples = 1,
                   int workers = 2) {
  ModelPlanOptions options;
  options.strategy = strategy;
  options.workers = workers;
  options.samples = samples;
  return plan_model(graph, static_costs(graph), options);
}

// A plan of two workers running the graph's nodes in topological order, node `name` on worker
// `worker_of(name)`.
Plan plan_by_name(const Graph& graph, const TaskGraph& tasks,
                  const std::function<int(const std::string&)>& worker_of) {
  Plan plan;
  plan.order.resize(2);
  plan.tasks.resize(tasks.tasks.size());
  for (NodeId node : graph.topological_order()) {
    const int worker = worker_of(graph.node(node).name);
    for (std::size_t t = 0; t < tasks.tasks.size(); ++t) {
      if (tasks.tasks[t].node != node) continue;
      plan.order[worker].push_back(static_cast<int>(t));
      plan.tasks[t] = {static_cast<int>(t), worker, 0, 0};
    }
  }
  return plan;
}

int task_named(const Graph& graph, const TaskGraph& tasks, const std::string& name) {
  for (std::size_t t = 0; t < tasks.tasks.size(); ++t) {
    if (graph.node(tasks.tasks[t].node).name == name) return static_cast<int>(t);
  }
  ADD_FAILURE() << "no task for node " << name;
  return -1;
}

TEST(ParallelExecutor, OutputsEqualTheSequentialRunBitForBit) {
  Graph graph = small_inception();
  ModelPlan plan = plan_for(graph, "lc");
  ASSERT_GT(plan.plan.order[1].size(), 0u) << "the plan should use both workers";
  auto inputs = random_inputs(graph, 7);
  Executor sequential(graph);
  ParallelExecutor parallel(graph, plan.tasks, plan.plan);
  std::vector<Tensor> expected = sequential.run(inputs);
  for (int round = 0; round < 3; ++round) expect_bitwise_equal(parallel.run(inputs), expected);
  EXPECT_EQ(parallel.last_trace().events.size(), plan.tasks.tasks.size());
}

TEST(ParallelExecutor, ClonedPlansComputeTheSameOutputs) {
  Graph graph = small_inception();
  ModelPlan plan = plan_for(graph, "clone");
  auto inputs = random_inputs(graph, 3);
  Executor sequential(graph);
  ParallelExecutor parallel(graph, plan.tasks, plan.plan);
  expect_bitwise_equal(parallel.run(inputs), sequential.run(inputs));
}

// A consumer reads a cloned producer's copy on its own worker only if that copy runs before
// it there; here the copy runs after, so the consumer must read the copy its edge names.
TEST(ParallelExecutor, AConsumerIgnoresACloneThatRunsAfterItOnItsWorker) {
  Graph graph = parse_graph(R"(graph g (%x: f32[64]) {
  %a = "a" Relu(%x)
  %b = "b" Neg(%a)
  %c = "c" Exp(%a)
  %d = "d" Add(%b, %c)
  return %d
}
)");
  TaskGraph tasks = task_graph_for(graph, static_costs(graph), cpu_workers(2, 1));
  const int a = task_named(graph, tasks, "a"), b = task_named(graph, tasks, "b"),
            c = task_named(graph, tasks, "c"), d = task_named(graph, tasks, "d");
  tasks.tasks.push_back(tasks.tasks[a]);  // The clone of a, with no edges of its own.
  const int clone = static_cast<int>(tasks.tasks.size()) - 1;
  Plan plan;
  plan.strategy = "clone";
  plan.order = {{a, c, d}, {b, clone}};
  plan.tasks.resize(tasks.tasks.size());
  for (int worker = 0; worker < 2; ++worker) {
    for (int task : plan.order[worker]) plan.tasks[task] = {task, worker, 0, 0};
  }
  ParallelOptions options;
  options.timeout_seconds = 10;  // A regression waits for the clone: fail, do not hang.
  ParallelExecutor parallel(graph, tasks, plan, options);
  auto inputs = random_inputs(graph, 5);
  Executor sequential(graph);
  expect_bitwise_equal(parallel.run(inputs), sequential.run(inputs));
}

// Worker 1 runs "side" at once, then waits for worker 0's chain of 512x512 products (about
// 20 ms, far longer than "side" even in a sanitizer build: long past its spin, so it sleeps). Only
// the chain's last task has a sleeper; its producer must wake it. A lost wake-up would leave the
// sleeper to its 5 s deadline, where it finds its input ready and goes on: so the test bounds the
// time from that input to its start.
TEST(ParallelExecutor, AWorkerAsleepOnAnInputIsWokenWhenItIsReady) {
  std::string text = "graph g (%x: f32[512,512]) {\n  %t0 = \"t0\" Tanh(%x)\n";
  const int products = 8;
  for (int i = 1; i <= products; ++i) {
    text += fmt::format("  %m{0} = \"m{0}\" MatMul(%t{1}, %t{1})\n", i, i - 1);
    text += fmt::format("  %t{0} = \"t{0}\" Tanh(%m{0})\n", i);
  }
  text += fmt::format("  %s = \"side\" Relu(%x)\n  %y = \"join\" Add(%t{}, %s)\n", products);
  text += "  return %y\n}\n";
  Graph graph = parse_graph(text);
  TaskGraph tasks = task_graph_for(graph, static_costs(graph), cpu_workers(2, 1));
  const Plan plan = plan_by_name(graph, tasks, [](const std::string& name) {
    return name == "side" || name == "join" ? 1 : 0;
  });
  const int join = task_named(graph, tasks, "join");
  const int last_product = task_named(graph, tasks, fmt::format("t{}", products));
  ParallelOptions options;
  options.timeout_seconds = 5;
  ParallelExecutor parallel(graph, tasks, plan, options);
  auto inputs = random_inputs(graph, 2);
  Executor sequential(graph);
  const std::vector<Tensor> expected = sequential.run(inputs);
  for (int round = 0; round < 3; ++round) {
    expect_bitwise_equal(parallel.run(inputs), expected);
    const auto& events = parallel.last_trace().events;
    // It waited long enough to have gone to sleep (the spin lasts well under 1 ms), and
    // started soon after its input was ready.
    EXPECT_GT(events[join].wait, 1e-3) << "round " << round;
    EXPECT_LT(events[join].start - events[last_product].end, 0.5) << "round " << round;
  }
}

TEST(ParallelExecutor, HyperclusteredSamplesEachMatchTheirSequentialRun) {
  Graph graph = small_inception();
  ModelPlan plan = plan_for(graph, "switched-hypercluster", 3);
  std::vector<std::map<std::string, Tensor>> samples;
  for (int s = 0; s < 3; ++s) samples.push_back(random_inputs(graph, 100 + s));
  ParallelExecutor parallel(graph, plan.tasks, plan.plan);
  ASSERT_EQ(parallel.samples(), 3);
  auto outputs = parallel.run(samples);
  Executor sequential(graph);
  for (int s = 0; s < 3; ++s) expect_bitwise_equal(outputs[s], sequential.run(samples[s]));
}

TEST(ParallelExecutor, InPlaceConcatKeepsEveryPlanBitwiseEqual) {
  // Plain layouts make every Inception branch a contiguous slice of its Concat.
  Graph graph = small_inception();
  ExecutorOptions copying;
  copying.blocked_layouts = false;
  copying.in_place_concat = false;
  for (const char* strategy : {"lc", "clone", "switched-hypercluster"}) {
    SCOPED_TRACE(strategy);
    int samples = std::string(strategy) == "lc" || std::string(strategy) == "clone" ? 1 : 2;
    ModelPlan plan = plan_for(graph, strategy, samples);
    ParallelOptions options;
    options.blocked_layouts = false;
    ParallelExecutor parallel(graph, plan.tasks, plan.plan, options);
    std::vector<std::map<std::string, Tensor>> inputs;
    for (int s = 0; s < samples; ++s) inputs.push_back(random_inputs(graph, 40 + s));
    Executor sequential(graph, copying);
    for (int round = 0; round < 3; ++round) {
      auto outputs = parallel.run(inputs);
      for (int s = 0; s < samples; ++s) expect_bitwise_equal(outputs[s], sequential.run(inputs[s]));
    }
    EXPECT_GT(parallel.stats().concat_inputs_in_place, 0);
  }
}

TEST(ParallelExecutor, RefusesAPlanWhoseOrdersWouldDeadlock) {
  Graph graph = small_inception();
  ModelPlan plan = plan_for(graph, "sequential");
  // One worker running a consumer before its producer can never finish.
  std::swap(plan.plan.order[0][0], plan.plan.order[0][1]);
  EXPECT_THROW(ParallelExecutor(graph, plan.tasks, plan.plan), Error);
}

TEST(ParallelExecutor, RefusesATaskGraphMissingAnEdgeBetweenWorkers) {
  Graph graph = small_inception();
  ModelPlan plan = plan_for(graph, "lc");
  auto& edges = plan.tasks.edges;
  auto crossing = std::find_if(edges.begin(), edges.end(), [&](const auto& edge) {
    return plan.plan.tasks[edge.first].worker != plan.plan.tasks[edge.second].worker;
  });
  ASSERT_NE(crossing, edges.end());
  const std::string consumer = plan.tasks.tasks[crossing->second].name;
  if (!plan.tasks.edge_bytes.empty())
    plan.tasks.edge_bytes.erase(plan.tasks.edge_bytes.begin() + (crossing - edges.begin()));
  edges.erase(crossing);
  try {
    ParallelExecutor executor(graph, plan.tasks, plan.plan);
    FAIL() << "a consumer reading across workers without an edge was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("plan task '" + consumer + "' reads task"),
              std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("no edge"), std::string::npos) << error.what();
  }
}

TEST(ParallelExecutor, RefusesAPlanThatLeavesANodeOut) {
  Graph graph = small_inception();
  ModelPlan plan = plan_for(graph, "lc");
  plan.tasks.tasks[0].node = plan.tasks.tasks[1].node;
  EXPECT_THROW(ParallelExecutor(graph, plan.tasks, plan.plan), Error);
}

// A one-worker plan runs on the caller's thread (no worker threads): same outputs.
TEST(ParallelExecutor, AOneWorkerPlanRunsOnTheCallerAndMatches) {
  Graph graph = small_inception();
  ModelPlan plan = plan_for(graph, "lc", 1, /*workers=*/1);
  ASSERT_EQ(plan.plan.order.size(), 1u);
  auto inputs = random_inputs(graph, 5);
  Executor sequential(graph);
  ParallelExecutor parallel(graph, plan.tasks, plan.plan);
  std::vector<Tensor> expected = sequential.run(inputs);
  for (int round = 0; round < 2; ++round) expect_bitwise_equal(parallel.run(inputs), expected);
  EXPECT_EQ(parallel.last_trace().events.size(), plan.tasks.tasks.size());
}

Graph graph_with_a_broken_reshape();

// Which thread ran each task of a run (on_task_end runs on the task's worker's thread).
class ThreadsOfTasks : public ExecutorObserver {
 public:
  void on_run_begin(int /*workers*/, int tasks) override { threads.assign(tasks, {}); }
  void on_task_end(const Trace::Event& event) override {
    threads[event.task] = {event.worker, std::this_thread::get_id()};
  }
  void on_run_end(double /*makespan*/) override {}
  std::vector<std::pair<int, std::thread::id>> threads;  // Per task: worker, thread.
};

// Worker 0 runs on the caller's thread: no wake-up of a worker 0 thread starts a run, and none
// of the caller ends it. The other workers keep threads of their own.
TEST(ParallelExecutor, WorkerZeroRunsOnTheCallersThreadTheOthersOnTheirOwn) {
  Graph graph = parse_graph(R"(graph g (%x: f32[4,8]) {
  %a = "a" Relu(%x)
  %b = "b" Neg(%x)
  %c = "c" Add(%a, %b)
  return %c
}
)");
  TaskGraph tasks = task_graph_for(graph, static_costs(graph), cpu_workers(2, 1));
  const Plan plan =
      plan_by_name(graph, tasks, [](const std::string& name) { return name == "b" ? 1 : 0; });
  ParallelExecutor parallel(graph, tasks, plan);
  auto observer = std::make_shared<ThreadsOfTasks>();
  parallel.add_observer(observer);
  auto inputs = random_inputs(graph, 3);
  Executor sequential(graph);
  const std::vector<Tensor> expected = sequential.run(inputs);
  for (int round = 0; round < 2; ++round) {
    expect_bitwise_equal(parallel.run(inputs), expected);
    ASSERT_EQ(observer->threads.size(), 3u);
    for (const auto& [worker, thread] : observer->threads) {
      if (worker == 0) {
        EXPECT_EQ(thread, std::this_thread::get_id()) << "round " << round;
      } else {
        EXPECT_NE(thread, std::this_thread::get_id()) << "round " << round;
      }
    }
  }
}

// A worker without tasks (lc keeps a small model on worker 0) gets no thread: nothing to wake.
TEST(ParallelExecutor, AWorkerWithoutTasksGetsNoThread) {
  Graph graph = parse_graph(R"(graph g (%x: f32[4,8]) {
  %a = "a" Relu(%x)
  %b = "b" Neg(%a)
  return %b
}
)");
  TaskGraph tasks = task_graph_for(graph, static_costs(graph), cpu_workers(2, 1));
  const Plan plan = plan_by_name(graph, tasks, [](const std::string&) { return 0; });
  const int before = process_threads();
  ASSERT_GT(before, 0) << "/proc/self/task should be readable";
  ParallelExecutor parallel(graph, tasks, plan);
  auto inputs = random_inputs(graph, 3);
  Executor sequential(graph);
  const std::vector<Tensor> expected = sequential.run(inputs);
  for (int round = 0; round < 2; ++round) {
    expect_bitwise_equal(parallel.run(inputs), expected);
    EXPECT_EQ(process_threads(), before) << "round " << round;
  }
}

// The caller's OpenMP team is its own again after a run that set it for worker 0.
TEST(ParallelExecutor, ARunGivesTheCallerItsOpenMPTeamBack) {
  Graph graph = small_inception(1);
  const int before = omp_get_max_threads();
  omp_set_num_threads(3);
  for (int workers : {1, 2}) {
    ModelPlan plan = plan_for(graph, "lc", 1, workers);
    ParallelExecutor parallel(graph, plan.tasks, plan.plan);
    parallel.run(random_inputs(graph, 4));
    EXPECT_EQ(omp_get_max_threads(), 3) << workers << " worker(s)";
  }
  omp_set_num_threads(before);
}

// A kernel error on worker 1 while the caller (worker 0) waits for its value: the wait ends
// and the error names the node.
TEST(ParallelExecutor, AnErrorOnAnotherWorkerEndsTheCallersWait) {
  Graph graph = graph_with_a_broken_reshape();
  TaskGraph tasks = task_graph_for(graph, static_costs(graph), cpu_workers(2, 1));
  const Plan plan =
      plan_by_name(graph, tasks, [](const std::string& name) { return name == "broken" ? 1 : 0; });
  ParallelExecutor parallel(graph, tasks, plan);
  auto inputs = random_inputs(graph, 1);
  for (int round = 0; round < 2; ++round) {
    try {
      parallel.run(inputs);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("broken"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("waited more than"), std::string::npos) << e.what();
    }
  }
}

// Tasks that overlap in time in the last run, at most.
int most_tasks_at_once(const Trace& trace) {
  std::vector<std::pair<double, int>> edges;
  for (const auto& event : trace.events) {
    edges.emplace_back(event.start, 1);
    edges.emplace_back(event.end, -1);
  }
  std::sort(edges.begin(), edges.end());  // An end before a start at the same instant.
  int running = 0, most = 0;
  for (const auto& [time, step] : edges) most = std::max(most, running += step);
  return most;
}

// Two workers folded onto one thread (as when other processes hold a core) run on the
// caller, one task at a time, with the same outputs; the trace still names the plan's workers.
TEST(ParallelExecutor, TwoWorkersFoldedOntoOneThreadMatch) {
  Graph graph = small_inception();
  ModelPlan plan = plan_for(graph, "lc");
  ASSERT_GT(plan.plan.order[1].size(), 0u) << "the plan should use both workers";
  ParallelOptions options;
  options.threads = 1;
  options.timeout_seconds = 10;  // A fold that waits on its own queue fails, does not hang.
  ParallelExecutor parallel(graph, plan.tasks, plan.plan, options);
  EXPECT_EQ(parallel.threads(), 1);
  auto inputs = random_inputs(graph, 7);
  Executor sequential(graph);
  const std::vector<Tensor> expected = sequential.run(inputs);
  for (int round = 0; round < 2; ++round) expect_bitwise_equal(parallel.run(inputs), expected);
  const Trace& trace = parallel.last_trace();
  ASSERT_EQ(trace.events.size(), plan.tasks.tasks.size());
  EXPECT_EQ(most_tasks_at_once(trace), 1);
  std::set<int> workers;
  for (const auto& event : trace.events) workers.insert(event.worker);
  EXPECT_EQ(workers, (std::set<int>{0, 1}));
}

TEST(ParallelExecutor, FourWorkersFoldedOntoTwoThreadsMatch) {
  Graph graph = small_inception(3);
  ModelPlan plan = plan_for(graph, "lc", 1, /*workers=*/4);
  int used = 0;
  for (const auto& order : plan.plan.order) used += order.empty() ? 0 : 1;
  ASSERT_GT(used, 2) << "the plan should use more workers than the threads";
  ParallelOptions options;
  options.threads = 2;
  options.timeout_seconds = 10;
  ParallelExecutor parallel(graph, plan.tasks, plan.plan, options);
  EXPECT_EQ(parallel.threads(), 2);
  auto inputs = random_inputs(graph, 8);
  Executor sequential(graph);
  const std::vector<Tensor> expected = sequential.run(inputs);
  for (int round = 0; round < 2; ++round) expect_bitwise_equal(parallel.run(inputs), expected);
  EXPECT_LE(most_tasks_at_once(parallel.last_trace()), 2);
}

// Worker 0 runs a then c, worker 1 b then d, and c needs b, which needs a: running worker 0's
// queue and then worker 1's on one thread would wait on b forever. The fold interleaves them.
TEST(ParallelExecutor, AFoldFollowsTheEdgesBetweenTheWorkersItJoins) {
  Graph graph = parse_graph(R"(graph g (%x: f32[4,8]) {
  %a = "a" Relu(%x)
  %b = "b" Tanh(%a)
  %c = "c" Sigmoid(%b)
  %d = "d" Add(%c, %b)
  return %d
})");
  TaskGraph tasks = task_graph_for(graph, static_costs(graph), cpu_workers(2, 1));
  const Plan plan = plan_by_name(
      graph, tasks, [](const std::string& name) { return name == "a" || name == "c" ? 0 : 1; });
  ParallelOptions options;
  options.threads = 1;
  options.timeout_seconds = 2;
  ParallelExecutor parallel(graph, tasks, plan, options);
  auto inputs = random_inputs(graph, 3);
  Executor sequential(graph);
  expect_bitwise_equal(parallel.run(inputs), sequential.run(inputs));
}

// Loaded weights go once every task reading them has packed them; the outputs stay those of the
// sequential run, run after run.
TEST(ParallelExecutor, ReleasedWeightsLeaveTheOutputsAsTheyWere) {
  Graph graph = small_inception();
  ModelPlan plan = plan_for(graph, "lc");
  auto inputs = random_inputs(graph, 9);
  const std::vector<Tensor> expected = Executor(graph).run(inputs);
  ValueId weight = kNoValue;
  for (NodeId node : graph.topological_order()) {
    if (graph.node(node).op_type == "Conv") weight = graph.node(node).inputs[1];
  }
  ASSERT_NE(weight, kNoValue);
  const std::weak_ptr<const std::vector<std::byte>> bytes = graph.value(weight).initializer->bytes;
  ParallelOptions options;
  options.release_packed_weights = true;
  ParallelExecutor parallel(graph, plan.tasks, plan.plan, options);
  for (ValueId id : graph.initializers()) graph.value(id).initializer->bytes.reset();
  for (int round = 0; round < 3; ++round) expect_bitwise_equal(parallel.run(inputs), expected);
  EXPECT_GT(parallel.stats().released_weight_bytes, 0u);
  EXPECT_TRUE(bytes.expired());
}

// Worker 0 makes %a, which only worker 1 reads; worker 1 drops it before it makes %t, which
// worker 0 waits for, so %a's buffer is free when worker 0 asks for %b's. Reusing it at once
// would rewrite memory whose lines worker 1's cache still holds; held back, %b gets a buffer of
// its own and the run needs one more buffer of the same size.
TEST(ParallelExecutor, ABufferReadOnAnotherWorkerIsNotRewrittenAtOnce) {
  Graph graph = parse_graph(R"(graph g (%x: f32[64,64]) {
  %a = "a" Relu(%x)
  %s = "s" Neg(%a)
  %t = "t" Exp(%s)
  %b = "b" Tanh(%t)
  %c = "c" Sigmoid(%b)
  return %c
}
)");
  TaskGraph tasks = task_graph_for(graph, static_costs(graph), cpu_workers(2, 1));
  const auto task_of = [&](const std::string& name) { return task_named(graph, tasks, name); };
  Plan plan;
  plan.strategy = "lc";
  plan.order = {{task_of("a"), task_of("b"), task_of("c")}, {task_of("s"), task_of("t")}};
  plan.tasks.resize(tasks.tasks.size());
  for (int worker = 0; worker < 2; ++worker) {
    for (int task : plan.order[worker]) plan.tasks[task] = {task, worker, 0, 0};
  }
  auto inputs = random_inputs(graph, 9);
  std::vector<Tensor> expected = Executor(graph).run(inputs);
  const auto peak_bytes = [&](int64_t hold_back_bytes) {
    ParallelOptions options;
    options.remote_read_hold_back_bytes = hold_back_bytes;
    ParallelExecutor parallel(graph, tasks, plan, options);
    expect_bitwise_equal(parallel.run(inputs), expected);
    return parallel.stats().peak_activation_bytes;
  };
  const std::size_t value_bytes = 64 * 64 * sizeof(float);
  EXPECT_EQ(peak_bytes(int64_t{1} << 30), peak_bytes(0) + value_bytes);
}

// The hold-back is sized by a core's private cache; a hypervisor may present the host's shared
// L3 as private to each vCPU (508 MiB on the EPYC VMs here), which held every remotely read
// buffer back for hundreds of runs.
TEST(Pinning, APinScopeBindsTheThreadAndGivesItsCpusBack) {
  const std::vector<int> before = allowed_cpus();
  ASSERT_FALSE(before.empty()) << "the affinity mask should be readable";
  {
    const ThreadPinScope pinned({before.back()});
    EXPECT_EQ(allowed_cpus(), std::vector<int>{before.back()});
  }
  EXPECT_EQ(allowed_cpus(), before);
}

// The caller runs worker 0 pinned to its core; after the run it has its own CPUs again.
TEST(ParallelExecutor, TheCallerHasItsOwnCpusAgainAfterARun) {
  const std::vector<int> before = allowed_cpus();
  ASSERT_FALSE(before.empty()) << "the affinity mask should be readable";
  Graph graph = small_inception(1);
  ModelPlan plan = plan_for(graph, "lc", 1, 2);
  ParallelExecutor parallel(graph, plan.tasks, plan.plan);
  parallel.run(random_inputs(graph, 4));
  EXPECT_EQ(allowed_cpus(), before);
}

TEST(Pinning, CoreCacheBytesIsAPrivateCacheOfAFewMegabytesAtMost) {
  EXPECT_GT(core_cache_bytes(), 0u);
  EXPECT_LE(core_cache_bytes(), kMaxCoreCacheBytes);
}

// With the default hold-back a steady sequence of runs reaches a fixed set of buffers: once the
// pool has handed out the hold-back's bytes, every held buffer is free for reuse again.
TEST(ParallelExecutor, RepeatedRunsStopAllocatingWithTheDefaultHoldBack) {
  Graph graph = small_inception();
  ModelPlan plan = plan_for(graph, "lc", 1, /*workers=*/2);
  ASSERT_EQ(plan.plan.order.size(), 2u);
  auto inputs = random_inputs(graph, 3);
  ParallelExecutor parallel(graph, plan.tasks, plan.plan);
  std::size_t bytes_per_run = 0;
  for (std::size_t id = 0; id < graph.value_capacity(); ++id) {
    const Value& value = graph.value(static_cast<ValueId>(id));
    if (value.producer >= 0 && value.shape.is_static()) {
      bytes_per_run +=
          static_cast<std::size_t>(value.shape.element_count()) * element_size(value.dtype);
    }
  }
  ASSERT_GT(bytes_per_run, 0u);
  // Enough runs for the default hold-back (at most kMaxCoreCacheBytes) to have passed.
  const std::size_t runs = kMaxCoreCacheBytes / bytes_per_run + 3;
  for (std::size_t run = 0; run < runs; ++run) parallel.run(inputs);
  const std::size_t settled = parallel.stats().peak_activation_bytes;
  for (int run = 0; run < 20; ++run) parallel.run(inputs);
  // The workers' timing decides how many buffers are live at once, so a rare interleaving
  // may add one; with a hold-back that never passes, every run added about a run's worth.
  EXPECT_LE(parallel.stats().peak_activation_bytes, settled + bytes_per_run)
      << "settled at " << settled << " bytes, a run's values take " << bytes_per_run;
}

Graph graph_with_a_broken_reshape() {
  return parse_graph(R"(graph g (%x: f32[2,3]) {
  @bad_shape: i64[2] = [4, 4]
  %a = Relu(%x)
  %b = Neg(%x)
  %c = "broken" Reshape(%a, @bad_shape)
  %d = Add(%c, %b)
  return %d
}
)");
}

void expect_error_naming_the_broken_node(int workers) {
  Graph graph = graph_with_a_broken_reshape();
  ModelPlan plan = plan_for(graph, "lc", 1, workers);
  ParallelExecutor parallel(graph, plan.tasks, plan.plan);
  auto inputs = random_inputs(graph, 1);
  try {
    parallel.run(inputs);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("broken"), std::string::npos) << e.what();
  }
  // The executor stays usable: the same error again, no hang.
  EXPECT_THROW(parallel.run(inputs), Error);
}

TEST(ParallelExecutor, AKernelErrorStopsEveryWorkerAndNamesTheNode) {
  expect_error_naming_the_broken_node(2);
}

TEST(ParallelExecutor, AKernelErrorOnTheCallersThreadNamesTheNode) {
  expect_error_naming_the_broken_node(1);
}

TEST(ModelPlan, PlanFilesRoundTripAndAreRefusedForAnotherModel) {
  Graph graph = small_inception();
  ModelPlan plan = plan_for(graph, "lc");
  nlohmann::json json = model_plan_to_json(plan, graph);
  ModelPlan read = model_plan_from_json(json, graph, "plan.json");
  EXPECT_EQ(read.plan.order, plan.plan.order);
  EXPECT_EQ(read.tasks.tasks.size(), plan.tasks.tasks.size());
  Graph other = small_inception();
  other.node(other.node_ids()[0]).name = "renamed";
  EXPECT_THROW(model_plan_from_json(json, other, "plan.json"), Error);
}

TEST(ModelPlan, APlanKeepsTheConvolutionFamilyItsCostsWereProfiledIn) {
  Graph graph = small_inception();
  CostTable costs = static_costs(graph);
  ModelPlanOptions options;
  options.strategy = "lc";
  EXPECT_FALSE(plan_model(graph, costs, options).convolution_family);
  costs.convolution_family = ConvolutionFamily::kWinograd;
  ModelPlan plan = plan_model(graph, costs, options);
  ASSERT_EQ(plan.convolution_family, ConvolutionFamily::kWinograd);
  nlohmann::json json = model_plan_to_json(plan, graph);
  EXPECT_EQ(json["convolution_family"], "winograd");
  EXPECT_EQ(model_plan_from_json(json, graph, "plan.json").convolution_family,
            ConvolutionFamily::kWinograd);
}

TEST(ModelPlan, AutoNeverPredictsWorseThanSequential) {
  Graph chain = parse_graph(R"(graph g (%x: f32[64]) {
  %a = Relu(%x)
  %b = Neg(%a)
  %c = Exp(%b)
  return %c
}
)");
  ModelPlan plan = plan_for(chain, "auto");
  EXPECT_EQ(plan.plan.strategy, "sequential");
  // Sequential on 2 cores and on 1, lc and clone.
  EXPECT_EQ(plan.candidates.size(), 4u);
}

}  // namespace
}  // namespace cleave
