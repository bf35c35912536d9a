// `auto`'s candidate table on small graphs with fixed costs: families, splits of the cores,
// hybrid threads, memory, data parallelism, plan files and planning time.
#include "frontend/auto_search.h"

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "ir/text.h"
#include "modelgen/rwnn.h"
#include "plan/simulator.h"
#include "small_graphs.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

// Seconds per op type at one thread; on t threads a node takes seconds * (serial + (1 -
// serial) / t) (Amdahl), so threads help but less than linearly.
CostTable fixed_costs(const Graph& graph, const std::map<std::string, double>& seconds,
                      double serial = 0.3, double weight_bytes = 0) {
  CostTable table;
  table.source = "fixed";
  table.nodes.resize(graph.node_capacity());
  for (NodeId id : graph.node_ids()) {
    const double one = seconds.at(graph.node(id).op_type);
    for (int t = 1; t <= 16; ++t)
      table.nodes[id].seconds.push_back(one * (serial + (1 - serial) / t));
    table.nodes[id].output_bytes = 64;
    table.nodes[id].weight_bytes = weight_bytes;
  }
  return table;
}

using testing::four_branches;

// One heavy branch (Tanh) and one light (Relu).
Graph heavy_and_light() {
  return parse_graph(R"(graph g (%x: f32[1,64]) {
  %a = Tanh(%x)
  %b = Relu(%x)
  %y = Add(%a, %b)
  return %y
}
)");
}

Graph chain() {
  return parse_graph(R"(graph g (%x: f32[1,64]) {
  %a = Relu(%x)
  %b = Sigmoid(%a)
  %y: f32[1,64] = Tanh(%b)
  return %y
}
)");
}

ModelPlanOptions on_cores(int cores) {
  ModelPlanOptions options;
  options.workers = cores;
  options.threads_per_worker = 1;
  return options;
}

const PlanCandidate& chosen_row(const ModelPlan& plan) {
  for (const PlanCandidate& row : plan.candidates)
    if (row.chosen) return row;
  throw Error("no chosen row");
}

TEST(AutoSearch, EveryCandidateNamesItsFamilyAndEverySplitOfTheCoresIsTried) {
  const Graph graph = four_branches();
  const std::map<std::string, double> ms{
      {"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}, {"Exp", 1e-3}, {"Add", 1e-4}};
  const ModelPlan plan = plan_model(graph, fixed_costs(graph, ms), on_cores(4));
  std::set<std::string> configurations;
  for (const PlanCandidate& row : plan.candidates) {
    EXPECT_EQ(row.family, family_of(row.strategy)) << row.configuration;
    configurations.insert(row.configuration);
  }
  for (const char* split : {"1 worker x 4 threads", "lc, 2 workers x 2 threads",
                            "lc, 3 workers x 1 thread", "lc, 4 workers x 1 thread"}) {
    EXPECT_EQ(configurations.count(split), 1u) << split;
  }
}

TEST(AutoSearch, FixedWorkersPlanOnlyThatManyWorkers) {
  const Graph graph = four_branches();
  const std::map<std::string, double> ms{
      {"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}, {"Exp", 1e-3}, {"Add", 1e-4}};
  ModelPlanOptions options = on_cores(3);
  options.fixed_workers = true;
  const ModelPlan plan = plan_model(graph, fixed_costs(graph, ms), options);
  for (const PlanCandidate& row : plan.candidates) {
    if (row.family == "task") {
      EXPECT_THAT(row.configuration, HasSubstr(", 3 workers x 1 thread"));
    }
  }
  // Sequential on 3, 1 and 2 threads, lc and clone.
  EXPECT_EQ(plan.candidates.size(), 5u);
}

// Nodes that take longer on two threads than on one (a small model's, where splitting each
// node costs more than it saves): the sequential plan on one thread beats every core.
TEST(AutoSearch, NodesSlowerOnTwoThreadsRunSequentiallyOnOne) {
  const Graph graph = chain();
  const std::map<std::string, double> ms{{"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}};
  // serial 1.5: t threads take 1.5 - 0.5 / t of one thread's time.
  const ModelPlan plan = plan_model(graph, fixed_costs(graph, ms, 1.5), on_cores(2));
  EXPECT_EQ(plan.family, "sequential");
  EXPECT_EQ(plan.configuration, "1 worker x 1 thread");
  EXPECT_EQ(plan.threads_per_worker, 1);
  EXPECT_NEAR(plan.plan.makespan, 3e-3, 1e-9);
  EXPECT_EQ(chosen_row(plan).configuration, "1 worker x 1 thread");
}

// Equal predictions keep every core: fewer threads must be faster, not as fast.
TEST(AutoSearch, SequentialOnFewerThreadsMustBeFasterNotEqual) {
  const Graph graph = chain();
  const std::map<std::string, double> ms{{"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}};
  const ModelPlan plan = plan_model(graph, fixed_costs(graph, ms, 1.0), on_cores(4));
  EXPECT_EQ(plan.configuration, "1 worker x 4 threads");
  std::set<std::string> sequential_rows;
  for (const PlanCandidate& row : plan.candidates)
    if (row.family == "sequential") sequential_rows.insert(row.configuration);
  EXPECT_EQ(sequential_rows, (std::set<std::string>{"1 worker x 4 threads", "1 worker x 1 thread",
                                                    "1 worker x 2 threads"}));
}

TEST(AutoSearch, ABranchyGraphOnFourCoresRunsItsBranchesAsTasks) {
  const Graph graph = four_branches();
  // Threads barely help these ops; four branches on four workers do.
  const std::map<std::string, double> ms{
      {"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}, {"Exp", 1e-3}, {"Add", 1e-4}};
  const ModelPlan plan = plan_model(graph, fixed_costs(graph, ms, 0.9), on_cores(4));
  EXPECT_EQ(plan.family, "task");
  EXPECT_EQ(chosen_row(plan).configuration, plan.configuration);
  EXPECT_EQ(plan.plan.notes["family"], "task");
}

// As an in-context profile: each node's 1-thread time beside busy cores is `slowdown` times
// its time alone.
CostTable with_busy_neighbours(CostTable table, double slowdown) {
  table.context = "in-context";
  for (NodeCost& cost : table.nodes)
    if (!cost.seconds.empty()) cost.busy_seconds = cost.seconds.front() * slowdown;
  return table;
}

const PlanCandidate& row_named(const ModelPlan& plan, const std::string& configuration) {
  for (const PlanCandidate& row : plan.candidates)
    if (row.configuration == configuration) return row;
  throw Error("no row " + configuration);
}

TEST(AutoSearch, TaskPlansArePricedBesideBusyCoresAndSequentialInContext) {
  const Graph graph = four_branches();
  const std::map<std::string, double> ms{
      {"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}, {"Exp", 1e-3}, {"Add", 1e-4}};
  const CostTable alone = fixed_costs(graph, ms, 0.9);
  const ModelPlan before = plan_model(graph, alone, on_cores(2));
  ASSERT_EQ(before.family, "task");  // Two branches per worker beat 0.95 ms per op on 2 threads.
  const ModelPlan after = plan_model(graph, with_busy_neighbours(alone, 2.5), on_cores(2));
  EXPECT_EQ(after.family, "sequential");
  EXPECT_EQ(after.plan.notes["node_costs"], "in-context");
  // Sequential rows keep their times; the task row's tasks cost 2.5x (its hand-offs do not).
  const std::string sequential = "1 worker x 2 threads";
  EXPECT_DOUBLE_EQ(row_named(after, sequential).predicted_seconds,
                   row_named(before, sequential).predicted_seconds);
  const std::string lc = "lc, 2 workers x 1 thread";
  EXPECT_GT(row_named(after, lc).predicted_seconds, 2.4 * row_named(before, lc).predicted_seconds);
}

TEST(AutoSearch, ANamedTaskPlanRecordsItWasPricedBesideBusyCores) {
  const Graph graph = four_branches();
  const std::map<std::string, double> ms{
      {"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}, {"Exp", 1e-3}, {"Add", 1e-4}};
  ModelPlanOptions options = on_cores(2);
  options.strategy = "lc";
  const CostTable alone = fixed_costs(graph, ms, 0.9);
  const ModelPlan plain = plan_model(graph, alone, options);
  const ModelPlan busy = plan_model(graph, with_busy_neighbours(alone, 2.0), options);
  EXPECT_EQ(busy.plan.notes["node_costs"], "beside-busy");
  EXPECT_FALSE(plain.plan.notes.contains("node_costs"));  // Fixed costs name no context.
  // Exactly the plan simulated with every task at its busy time.
  TaskGraph beside = busy.tasks;
  for (Task& task : beside.tasks) {
    task.time = task.busy_time;
    task.busy_time.clear();
  }
  EXPECT_DOUBLE_EQ(busy.plan.makespan, simulate(busy.plan, beside).makespan);
  EXPECT_GT(busy.plan.makespan, 1.9 * plain.plan.makespan);
}

// A profile whose busy run timed faster than alone (the host changed speed between the two):
// the plan is priced at the alone level, exactly as if the busy times were the times alone,
// and its row says so.
TEST(AutoSearch, ABusyRunTimedFasterThanAloneIsPricedAtTheAloneLevel) {
  const Graph graph = four_branches();
  const std::map<std::string, double> ms{
      {"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}, {"Exp", 1e-3}, {"Add", 1e-4}};
  ModelPlanOptions options = on_cores(2);
  options.strategy = "lc";
  CostTable level = with_busy_neighbours(fixed_costs(graph, ms, 0.9), 1.0);
  level.source = "profile";
  level.run_seconds = {level.total_seconds(1)};
  level.busy_run_seconds = level.run_seconds.front();
  CostTable fast = with_busy_neighbours(level, 0.8);
  fast.busy_run_seconds = 0.8 * level.run_seconds.front();
  const ModelPlan at_level = plan_model(graph, level, options);
  const ModelPlan from_fast = plan_model(graph, fast, options);
  EXPECT_EQ(from_fast.plan.notes["node_costs"], "beside-busy");
  EXPECT_NEAR(from_fast.plan.makespan, at_level.plan.makespan, 1e-12);
  EXPECT_EQ(from_fast.plan.order, at_level.plan.order);
  // Without the level the fast busy times would predict it about 0.8x.
  CostTable unlevelled = fast;
  unlevelled.busy_run_seconds = 0;
  EXPECT_LT(plan_model(graph, unlevelled, options).plan.makespan, 0.9 * at_level.plan.makespan);
  // Auto's table: the task row predicted alike, and its costs say how.
  const std::string lc = "lc, 2 workers x 1 thread";
  const ModelPlan table_fast = plan_model(graph, fast, on_cores(2));
  const ModelPlan table_level = plan_model(graph, level, on_cores(2));
  EXPECT_NEAR(row_named(table_fast, lc).predicted_seconds,
              row_named(table_level, lc).predicted_seconds, 1e-12);
  const std::string source = row_named(table_fast, lc).costs.source;
  EXPECT_NE(source.find("busy times x 1.25, the busy run timed faster than alone"),
            std::string::npos)
      << source;
  EXPECT_EQ(row_named(table_level, lc).costs.source.find("busy times x"), std::string::npos);
}

TEST(AutoSearch, AChainRunsSequentiallyWithEveryCoreIntraOp) {
  const Graph graph = chain();
  const std::map<std::string, double> ms{{"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}};
  const ModelPlan plan = plan_model(graph, fixed_costs(graph, ms), on_cores(4));
  EXPECT_EQ(plan.family, "sequential");
  EXPECT_EQ(plan.threads_per_worker, 4);
  for (const PlanCandidate& row : plan.candidates)
    EXPECT_TRUE(row.chosen || !row.rejected.empty()) << row.configuration;
}

TEST(AutoSearch, HybridThreadsFollowTheClustersWeight) {
  const Graph graph = heavy_and_light();
  // Tanh weighs three times Relu: of four cores its worker should get three.
  const std::map<std::string, double> ms{{"Tanh", 3e-3}, {"Relu", 1e-3}, {"Add", 1e-5}};
  const ModelPlan plan = plan_model(graph, fixed_costs(graph, ms), on_cores(4));
  EXPECT_EQ(plan.configuration, "hybrid lc, threads 3+1");
  ASSERT_EQ(plan.tasks.machine.size(), 2u);
  for (std::size_t t = 0; t < plan.tasks.tasks.size(); ++t) {
    const Node& node = graph.node(plan.tasks.tasks[t].node);
    const int worker = plan.plan.tasks[t].worker;
    const int threads = plan.tasks.machine.devices[worker].threads;
    if (node.op_type == "Tanh") {
      EXPECT_EQ(threads, 3);
    } else if (node.op_type == "Relu") {
      EXPECT_EQ(threads, 1);
    }
  }
  // 3 ms at 3 threads: 3 * (0.3 + 0.7 / 3) = 1.6 ms, plus the Add.
  EXPECT_NEAR(plan.plan.makespan, 1.6e-3 + 1e-5, 1e-4);
}

TEST(AutoSearch, ACandidateOverADevicesMemoryIsRejectedWithTheReason) {
  const Graph graph = four_branches();
  const std::map<std::string, double> ms{
      {"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}, {"Exp", 1e-3}, {"Add", 1e-4}};
  ModelPlanOptions options;
  options.machine = cpu_workers(2, 1);
  // Seven nodes of 1 MiB each: one device of 5 MiB cannot hold them all.
  for (Device& device : options.machine->devices) device.memory_bytes = 5.0 * 1024 * 1024;
  const ModelPlan plan = plan_model(graph, fixed_costs(graph, ms, 0.3, 1024.0 * 1024.0), options);
  ASSERT_FALSE(plan.candidates.empty());
  EXPECT_EQ(plan.candidates.front().family, "sequential");
  EXPECT_THAT(plan.candidates.front().rejected, HasSubstr("memory"));
  EXPECT_THAT(plan.candidates.front().rejected, HasSubstr("7340032 bytes"));
  EXPECT_NE(plan.family, "sequential");
}

TEST(AutoSearch, CandidatesReportPeakActivationsPerDevice) {
  const Graph graph = chain();
  const std::map<std::string, double> ms{{"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}};
  const ModelPlan plan = plan_model(graph, fixed_costs(graph, ms), on_cores(2));
  for (const PlanCandidate& row : plan.candidates) {
    if (row.family != "sequential") continue;
    // Outputs of 64 bytes: each node holds its input and its output, never three.
    EXPECT_EQ(row.activation_bytes, std::vector<double>{128}) << row.configuration;
    return;
  }
  ADD_FAILURE() << "no sequential row";
}

TEST(AutoSearch, ActivationsOverADevicesMemoryRejectTheCandidate) {
  const Graph graph = four_branches();
  const std::map<std::string, double> ms{
      {"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}, {"Exp", 1e-3}, {"Add", 1e-4}};
  CostTable costs = fixed_costs(graph, ms);
  for (NodeCost& node : costs.nodes) node.output_bytes = 1024.0 * 1024.0;
  ModelPlanOptions options;
  options.machine = cpu_workers(2, 1);
  // Outputs of 1 MiB: one worker running the branches one after another holds five at once,
  // two workers each hold four.
  for (Device& device : options.machine->devices) device.memory_bytes = 4.5 * 1024 * 1024;
  const ModelPlan plan = plan_model(graph, costs, options);
  bool sequential = false;
  for (const PlanCandidate& row : plan.candidates) {
    if (row.family != "sequential") continue;
    sequential = true;
    EXPECT_THAT(row.rejected, HasSubstr("MiB of activations")) << row.rejected;
  }
  EXPECT_TRUE(sequential);
  EXPECT_NE(plan.family, "sequential");
}

TEST(AutoSearch, ThirtyTwoSamplesOfAChainRunDataParallel) {
  const Graph graph = chain();
  const std::map<std::string, double> ms{{"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}};
  ModelPlanOptions options = on_cores(2);
  options.samples = 32;
  const ModelPlan plan = plan_model(graph, fixed_costs(graph, ms), options);
  EXPECT_EQ(plan.family, "data-parallel");
  // 16 samples per worker, 3 ms each at one thread.
  EXPECT_NEAR(plan.plan.makespan, 16 * 3e-3, 1e-6);
  EXPECT_NEAR(chosen_row(plan).samples_per_second, 32 / (16 * 3e-3), 1e-3);
}

// Both workers of a data-parallel stream compute at once: every sample is priced at the
// busy-neighbour times (as a task plan's nodes are), on the auto row and by name alike.
TEST(AutoSearch, ADataParallelStreamIsPricedBesideBusyCores) {
  const Graph graph = chain();
  const std::map<std::string, double> ms{{"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}};
  ModelPlanOptions options = on_cores(2);
  options.samples = 32;
  const ModelPlan plan =
      plan_model(graph, with_busy_neighbours(fixed_costs(graph, ms), 1.5), options);
  // 16 samples per worker, 3 ms each at one thread alone, 4.5 ms beside the other worker.
  const PlanCandidate& row = row_named(plan, "2 workers x 1 thread");
  EXPECT_EQ(row.family, "data-parallel");
  EXPECT_NEAR(row.predicted_seconds, 16 * 4.5e-3, 1e-6);
  options.strategy = "data-parallel";
  const ModelPlan named =
      plan_model(graph, with_busy_neighbours(fixed_costs(graph, ms), 1.5), options);
  EXPECT_NEAR(named.plan.makespan, 16 * 4.5e-3, 1e-6);
  EXPECT_EQ(named.plan.notes["node_costs"], "beside-busy");
}

// A worker runs its samples one after another (what the profile timed), not each node for all
// of its samples before the next node.
TEST(AutoSearch, ADataParallelWorkerRunsItsSamplesOneAfterAnother) {
  const Graph graph = chain();
  const std::map<std::string, double> ms{{"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}};
  ModelPlanOptions options = on_cores(2);
  options.strategy = "data-parallel";
  options.samples = 8;
  const ModelPlan plan = plan_model(graph, fixed_costs(graph, ms), options);
  ASSERT_EQ(plan.plan.order.size(), 2u);
  for (std::size_t worker = 0; worker < plan.plan.order.size(); ++worker) {
    const std::vector<int>& order = plan.plan.order[worker];
    ASSERT_EQ(order.size(), 4u * 3u) << "four samples of three nodes";
    for (std::size_t i = 0; i < order.size(); ++i) {
      const Task& task = plan.tasks.tasks[order[i]];
      EXPECT_EQ(task.batch_begin, static_cast<int64_t>(2 * (i / 3) + worker)) << task.name;
    }
  }
}

TEST(AutoSearch, TheSequentialPlanRunsItsSamplesOneAfterAnother) {
  const Graph graph = chain();
  const std::map<std::string, double> ms{{"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}};
  ModelPlanOptions options = on_cores(2);
  options.strategy = "sequential";
  options.samples = 4;
  const ModelPlan plan = plan_model(graph, fixed_costs(graph, ms), options);
  ASSERT_EQ(plan.plan.order.size(), 1u);
  const std::vector<int>& order = plan.plan.order.front();
  ASSERT_EQ(order.size(), 4u * 3u) << "four samples of three nodes";
  for (std::size_t i = 0; i < order.size(); ++i)
    EXPECT_EQ(plan.tasks.tasks[order[i]].batch_begin, static_cast<int64_t>(i / 3)) << i;
}

// Two ranks joined by a link of 1 ms and 1 MB/s: 1 ms + 256 bytes / 1 MB/s for x or y.
Machine two_ranks() {
  Machine machine = cpu_workers(2, 1);
  machine.bandwidth = {{0, 1e6}, {1e6, 0}};
  machine.latency = {{0, 1e-3}, {1e-3, 0}};
  return machine;
}

TEST(AutoSearch, OnRanksEachTaskListsTheModelValuesRankZeroSendsOrGets) {
  const Graph graph = four_branches();
  const std::map<std::string, double> ms{
      {"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}, {"Exp", 1e-3}, {"Add", 1e-4}};
  const CostTable costs = fixed_costs(graph, ms);
  const TaskGraph ranks = task_graph_for(graph, costs, two_ranks(), ModelValues::kFromRank0);
  const TaskGraph threads = task_graph_for(graph, costs, two_ranks());
  int readers = 0, producers = 0;
  for (std::size_t t = 0; t < ranks.tasks.size(); ++t) {
    const std::string& op = graph.node(ranks.tasks[t].node).op_type;
    const bool reads_x = op != "Add";
    const std::vector<ModelValue> expected =
        reads_x ? std::vector<ModelValue>{{"x", 256}} : std::vector<ModelValue>{};
    EXPECT_EQ(ranks.tasks[t].model_inputs, expected) << ranks.tasks[t].name;
    readers += reads_x;
    producers += !ranks.tasks[t].model_outputs.empty();
    EXPECT_TRUE(threads.tasks[t].model_inputs.empty());
    EXPECT_TRUE(threads.tasks[t].model_outputs.empty());
  }
  EXPECT_EQ(readers, 4);
  EXPECT_EQ(producers, 1);
}

TEST(AutoSearch, OnRanksAConcatCopiesItsInputsFromOtherRanksUnlessReceivedInPlace) {
  // The MPI executor receives a Concat's inputs from other ranks into its output where each
  // is one contiguous run of it (concat_inputs_received_in_place: 64 + 64 channels of batch 1),
  // else copies them (8 + 8: the second would start inside a 16-channel block); on threads
  // every worker shares the output, and nothing is flagged.
  for (const int channels : {8, 64}) {
    const Graph graph = parse_graph(fmt::format(R"(graph g (%x: f32[1,{0}]) {{
  %a: f32[1,{0}] = Relu(%x)
  %b: f32[1,{0}] = Sigmoid(%x)
  %y: f32[1,{1}] = Concat[axis=1](%a, %b)
  return %y
}}
)",
                                                channels, 2 * channels));
    const CostTable costs =
        fixed_costs(graph, {{"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Concat", 1e-5}});
    const TaskGraph ranks = task_graph_for(graph, costs, two_ranks(), ModelValues::kFromRank0);
    const TaskGraph threads = task_graph_for(graph, costs, two_ranks());
    for (std::size_t t = 0; t < ranks.tasks.size(); ++t) {
      const bool concat = graph.node(ranks.tasks[t].node).op_type == "Concat";
      EXPECT_EQ(ranks.tasks[t].copies_remote_inputs, concat && channels == 8)
          << ranks.tasks[t].name << " of " << channels << " channels";
      EXPECT_FALSE(threads.tasks[t].copies_remote_inputs) << threads.tasks[t].name;
    }
  }
}

TEST(AutoSearch, OnRanksADataParallelSampleOffRankZeroPaysForItsInputAndOutput) {
  // Sample 1 runs on rank 1: x reaches it, and y comes back, each 1 ms + 256 B / 1 MB/s after
  // the start and the chain's end; sample 0, all on rank 0, sends nothing.
  const Graph graph = chain();
  const std::map<std::string, double> ms{{"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}};
  const CostTable costs = fixed_costs(graph, ms);
  ModelPlanOptions options;
  options.strategy = "data-parallel";
  options.samples = 2;
  options.machine = two_ranks();
  const ModelPlan plan = plan_model(graph, costs, options);
  EXPECT_EQ(plan.family, "data-parallel");
  EXPECT_EQ(plan.configuration, "data-parallel, 2 devices");
  const double today =
      plan_data_parallel(graph, costs, two_ranks(), 2, ModelValues::kShared).plan.makespan;
  EXPECT_NEAR(today, 3e-3, 1e-12);
  EXPECT_NEAR(plan.plan.makespan - today, 2 * (1e-3 + 256 / 1e6), 1e-12);
  options.strategy = "sequential";
  EXPECT_NEAR(plan_model(graph, costs, options).plan.makespan, 2 * 3e-3, 1e-12);
}

TEST(AutoSearch, DataParallelByNameNeedsSeveralSamples) {
  const Graph graph = chain();
  const std::map<std::string, double> ms{{"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}};
  ModelPlanOptions options = on_cores(2);
  options.strategy = "data-parallel";
  try {
    plan_model(graph, fixed_costs(graph, ms), options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("--samples N with N >= 2 (got 1)"));
  }
}

TEST(AutoSearch, PlanFilesKeepTheFamilyAndOldFilesStillLoad) {
  const Graph graph = heavy_and_light();
  const std::map<std::string, double> ms{{"Tanh", 3e-3}, {"Relu", 1e-3}, {"Add", 1e-5}};
  const ModelPlan plan = plan_model(graph, fixed_costs(graph, ms), on_cores(2));
  nlohmann::json json = model_plan_to_json(plan, graph);
  ASSERT_TRUE(json["candidates"].is_array());
  EXPECT_TRUE(json["candidates"][0].contains("family"));
  const ModelPlan read = model_plan_from_json(json, graph, "plan.json", false);
  EXPECT_EQ(read.family, plan.family);
  EXPECT_EQ(read.configuration, plan.configuration);
  json.erase("family");
  json.erase("configuration");
  json.erase("candidates");
  EXPECT_EQ(model_plan_from_json(json, graph, "old.json", false).plan.order, plan.plan.order);
}

// The search stays fast on large graphs by bounding its work (clone tried only at lc's best
// split, at most 128 trials; one candidate per family and split), not by luck: a bounded
// table here; the time itself is measured by `cleave plan --explain` (planning time), not in
// a unit test, which runs under sanitizers too.
TEST(AutoSearch, AFifteenHundredNodeGraphIsPlannedWithABoundedCandidateTable) {
  RwnnOptions options;
  options.dag.model = RandomGraphModel::kWattsStrogatz;
  options.dag.modules = 12;
  options.dag.nodes_per_module = 50;
  options.dag.ws_neighbors = 4;
  options.channels = 4;
  options.height = 4;
  options.width = 4;
  const Graph graph = generate_rwnn(options);
  ASSERT_GE(graph.node_count(), 1500u);
  const ModelPlan plan = plan_model(graph, static_costs(graph), on_cores(4));
  EXPECT_GT(plan.planning_seconds, 0);
  EXPECT_GE(plan.candidates.size(), 7u);
  EXPECT_LE(plan.candidates.size(), 32u) << graph.node_count() << " nodes";
}

// The timed check and `bench --families` run the plans beside the choice: the fastest of
// each family and the runner-up, each once, fastest first, the choice not among them.
TEST(AutoSearch, AlternativesKeepTheFastestOfEachFamilyAndTheRunnerUp) {
  const Graph graph = four_branches();
  const std::map<std::string, double> ms{
      {"Relu", 1e-3}, {"Sigmoid", 1e-3}, {"Tanh", 1e-3}, {"Exp", 1e-3}, {"Add", 1e-4}};
  const ModelPlan plan = plan_model(graph, fixed_costs(graph, ms), on_cores(4));
  ASSERT_FALSE(plan.alternatives.empty());
  std::set<std::string> kept;
  for (std::size_t i = 0; i < plan.alternatives.size(); ++i) {
    const ModelPlan& alternative = plan.alternatives[i];
    EXPECT_NE(alternative.configuration, plan.configuration);
    EXPECT_TRUE(kept.insert(alternative.configuration).second) << alternative.configuration;
    if (i > 0) {
      EXPECT_LE(plan.alternatives[i - 1].plan.makespan, alternative.plan.makespan);
    }
  }
  std::map<std::string, const PlanCandidate*> fastest_of_family;
  const PlanCandidate* runner_up = nullptr;
  for (const PlanCandidate& row : plan.candidates) {
    const PlanCandidate*& best = fastest_of_family[row.family];
    if (!best || row.predicted_seconds < best->predicted_seconds) best = &row;
    if (!row.chosen && (!runner_up || row.predicted_seconds < runner_up->predicted_seconds))
      runner_up = &row;
  }
  ASSERT_NE(runner_up, nullptr);
  EXPECT_DOUBLE_EQ(plan.alternatives.front().plan.makespan, runner_up->predicted_seconds);
  for (const auto& [family, row] : fastest_of_family) {
    EXPECT_TRUE(row->chosen || kept.count(row->configuration) == 1) << family;
  }
}

}  // namespace
}  // namespace cleave
