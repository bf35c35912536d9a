// The plan-and-run recipe: what `auto` keeps after its timed check, driven by a fake timer.
#include "pipeline/plan_and_run.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ir/text.h"
#include "modelgen/inception.h"
#include "runtime/parallel_executor.h"
#include "support/error.h"
#include "support/system_load.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

// Two Inception blocks: their branches are independent, so auto predicts a parallel plan
// on two workers from static costs.
Graph branchy() {
  InceptionOptions options;
  options.blocks = 2;
  options.channels = 16;
  options.height = 8;
  options.width = 8;
  return generate_inception(options);
}

// One op after another: nothing to run in parallel.
Graph chain() {
  return parse_graph(R"(graph g (%x: f32[1,64]) {
  %a = Relu(%x)
  %b = Sigmoid(%a)
  %y = Tanh(%b)
  return %y
}
)");
}

// A recipe that measures nothing: fixed layouts, static costs, and times from `fake_ms`
// (per strategy name), counting the runs it was asked to time.
struct FakeTimes {
  std::map<std::string, double> ms;
  std::map<std::string, int> calls;
};

RunRecipe auto_recipe(FakeTimes& times, std::vector<std::string>& log) {
  RunRecipe recipe;
  recipe.strategy = "auto";
  recipe.layouts = "blocked";
  recipe.costs = "static";
  recipe.workers = 2;
  recipe.timer = [&times](const std::string& strategy, ExecutorInterface&,
                          const std::vector<SampleInputs>&) {
    ++times.calls[strategy];
    const bool sequential = strategy == "sequential";
    return times.ms.at(sequential ? "sequential" : "candidate");
  };
  recipe.log = [&log](const std::string& line) { log.push_back(line); };
  return recipe;
}

bool logged(const std::vector<std::string>& log, const std::string& text) {
  for (const std::string& line : log) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(PlanAndRun, AutoFallsBackToSequentialWhenTheCandidateTimesSlower) {
  FakeTimes times{{{"candidate", 2.0}, {"sequential", 1.0}}, {}};
  std::vector<std::string> log;
  PreparedRun prepared = prepare_run(branchy(), auto_recipe(times, log));
  ASSERT_TRUE(prepared.auto_check) << "auto should have predicted a parallel plan";
  EXPECT_NE(prepared.auto_check->candidate, "sequential");
  EXPECT_DOUBLE_EQ(prepared.auto_check->candidate_ms, 2.0);
  EXPECT_DOUBLE_EQ(prepared.auto_check->sequential_ms, 1.0);
  ASSERT_TRUE(prepared.plan);
  EXPECT_EQ(prepared.plan->plan.strategy, "sequential");
  EXPECT_EQ(prepared.plan->plan.notes.value("auto_choice", ""), "sequential");
  ASSERT_NE(prepared.parallel, nullptr);
  EXPECT_EQ(prepared.executor.get(), prepared.parallel);
  EXPECT_TRUE(logged(log, "kept sequential"));
}

TEST(PlanAndRun, AutoKeepsTheCandidateWhenItTimesFaster) {
  FakeTimes times{{{"candidate", 1.0}, {"sequential", 2.0}}, {}};
  std::vector<std::string> log;
  PreparedRun prepared = prepare_run(branchy(), auto_recipe(times, log));
  ASSERT_TRUE(prepared.auto_check);
  ASSERT_TRUE(prepared.plan);
  EXPECT_EQ(prepared.plan->plan.strategy, prepared.auto_check->candidate);
  EXPECT_NE(prepared.plan->plan.strategy, "sequential");
  EXPECT_EQ(prepared.plan->tasks.machine.size(), 2u);
  EXPECT_TRUE(logged(log, "kept " + prepared.auto_check->candidate));
}

TEST(PlanAndRun, TheCheckTimesBothPlansAlikeAfterWarmUp) {
  FakeTimes times{{{"candidate", 1.0}, {"sequential", 2.0}}, {}};
  std::vector<std::string> log;
  PreparedRun prepared = prepare_run(branchy(), auto_recipe(times, log));
  ASSERT_TRUE(prepared.auto_check);
  // Two warm-up runs, then two blocks of three, for each plan.
  EXPECT_EQ(times.calls[prepared.auto_check->candidate_configuration], 8);
  EXPECT_EQ(times.calls["sequential"], 8);
  if (!prepared.auto_check->runner_up.empty()) {
    EXPECT_EQ(times.calls[prepared.auto_check->runner_up], 8);
  }
}

// While the check times one plan, the process holds the block's thread and that plan's workers
// only: not the workers of the plans timed beside it.
TEST(PlanAndRun, TheCheckTimesEachPlanWithOnlyItsThreadsAlive) {
  const int base = process_threads();
  ASSERT_GT(base, 0) << "/proc/self/task should be readable";
  FakeTimes times{{{"candidate", 1.0}, {"sequential", 2.0}}, {}};
  std::vector<std::string> log;
  RunRecipe recipe = auto_recipe(times, log);
  const RunTimer fake = recipe.timer;
  // Per plan timed, the fewest and most threads it may see (the block's thread, which runs
  // worker 0, the plan's other workers, each worker's team beside it), and those it saw.
  struct Alive {
    int fewest = 0, most = 0;
    std::vector<int> seen;
  };
  std::map<std::string, Alive> alive;
  recipe.timer = [&](const std::string& name, ExecutorInterface& executor,
                     const std::vector<SampleInputs>& inputs) {
    executor.run(inputs);
    const auto* parallel = dynamic_cast<const ParallelExecutor*>(&executor);
    if (parallel) {
      const int threads = parallel->threads();
      Alive& plan = alive[name];
      plan.fewest = base + threads;
      plan.most = plan.fewest + threads * (parallel->threads_per_worker() - 1);
      plan.seen.push_back(process_threads());
    }
    return fake(name, executor, inputs);
  };
  PreparedRun prepared = prepare_run(branchy(), recipe);
  ASSERT_TRUE(prepared.auto_check);
  ASSERT_TRUE(alive.contains("sequential"));
  ASSERT_TRUE(alive.contains(prepared.auto_check->candidate_configuration));
  for (const auto& [name, plan] : alive) {
    for (int threads : plan.seen) {
      EXPECT_GE(threads, plan.fewest) << name;
      EXPECT_LE(threads, plan.most) << name;
    }
  }
}

// The check times the two fastest predictions and sequential: when the runner-up measures
// fastest, it runs. The timer sees the predicted choice first (its warm-up), so the first
// parallel plan it times is made slow and every other fast.
TEST(PlanAndRun, AutoKeepsTheRunnerUpWhenItTimesFastest) {
  std::string first_timed;
  std::map<std::string, int> calls;
  RunRecipe recipe;
  recipe.strategy = "auto";
  recipe.layouts = "blocked";
  recipe.costs = "static";
  recipe.workers = 2;
  recipe.timer = [&](const std::string& name, ExecutorInterface&,
                     const std::vector<SampleInputs>&) {
    ++calls[name];
    if (name == "sequential") return 2.0;
    if (first_timed.empty()) first_timed = name;
    return name == first_timed ? 3.0 : 1.0;
  };
  PreparedRun prepared = prepare_run(branchy(), recipe);
  ASSERT_TRUE(prepared.auto_check);
  const AutoCheck& check = *prepared.auto_check;
  ASSERT_FALSE(check.runner_up.empty()) << "auto should have a parallel runner-up";
  EXPECT_EQ(check.candidate_configuration, first_timed);
  EXPECT_NE(check.runner_up, check.candidate_configuration);
  EXPECT_DOUBLE_EQ(check.candidate_ms, 3.0);
  EXPECT_DOUBLE_EQ(check.runner_up_ms, 1.0);
  EXPECT_DOUBLE_EQ(check.sequential_ms, 2.0);
  EXPECT_EQ(check.kept, check.runner_up);
  ASSERT_TRUE(prepared.plan);
  EXPECT_EQ(prepared.plan->configuration, check.runner_up);
  EXPECT_EQ(calls.size(), 3u);
}

TEST(PlanAndRun, WithoutTheCheckAutoKeepsItsPrediction) {
  FakeTimes times{{{"candidate", 2.0}, {"sequential", 1.0}}, {}};
  std::vector<std::string> log;
  RunRecipe recipe = auto_recipe(times, log);
  recipe.auto_check = false;
  PreparedRun prepared = prepare_run(branchy(), recipe);
  EXPECT_FALSE(prepared.auto_check);
  EXPECT_TRUE(times.calls.empty());
  ASSERT_TRUE(prepared.plan);
  EXPECT_NE(prepared.plan->plan.strategy, "sequential");
}

// The check `bench --families` makes of a run prepared without it: the runs prepare_run's
// check times, the plan it keeps, and the prepared run left as it was.
TEST(PlanAndRun, TheCheckOfAPreparedRunKeepsWhatPrepareRunKeeps) {
  FakeTimes times{{{"candidate", 2.0}, {"sequential", 1.0}}, {}};
  std::vector<std::string> log;
  RunRecipe recipe = auto_recipe(times, log);
  recipe.auto_check = false;
  const PreparedRun prepared = prepare_run(branchy(), recipe);
  ASSERT_TRUE(prepared.plan);
  const std::string predicted = prepared.plan->configuration;
  const std::optional<CheckedChoice> checked = time_auto_check(prepared, recipe);
  ASSERT_TRUE(checked) << "auto should have predicted a parallel plan";
  EXPECT_EQ(checked->check.candidate_configuration, predicted);
  EXPECT_DOUBLE_EQ(checked->check.candidate_ms, 2.0);
  EXPECT_EQ(checked->check.kept, "sequential");
  EXPECT_EQ(checked->kept.plan.strategy, "sequential");
  EXPECT_EQ(times.calls["sequential"], 8);
  EXPECT_EQ(prepared.plan->configuration, predicted);
  recipe.auto_check = true;
  const PreparedRun checked_run = prepare_run(branchy(), recipe);
  ASSERT_TRUE(checked_run.plan);
  EXPECT_EQ(checked_run.plan->configuration, checked->kept.configuration);
}

TEST(PlanAndRun, TheCheckOfAPreparedRunKeepsAPredictionTimedFaster) {
  FakeTimes times{{{"candidate", 1.0}, {"sequential", 2.0}}, {}};
  std::vector<std::string> log;
  RunRecipe recipe = auto_recipe(times, log);
  recipe.auto_check = false;
  const PreparedRun prepared = prepare_run(branchy(), recipe);
  const std::optional<CheckedChoice> checked = time_auto_check(prepared, recipe);
  ASSERT_TRUE(checked);
  EXPECT_EQ(checked->check.kept, prepared.plan->configuration);
  EXPECT_EQ(checked->kept.configuration, prepared.plan->configuration);
}

TEST(PlanAndRun, NoCheckOfASequentialPredictionOnEveryCore) {
  FakeTimes times{{{"candidate", 1.0}, {"sequential", 2.0}}, {}};
  std::vector<std::string> log;
  RunRecipe recipe = auto_recipe(times, log);
  recipe.auto_check = false;
  const PreparedRun prepared = prepare_run(chain(), recipe);
  EXPECT_FALSE(time_auto_check(prepared, recipe));
  EXPECT_TRUE(times.calls.empty());
}

TEST(PlanAndRun, TheCheckOfARunNotPlannedHereIsRefused) {
  FakeTimes times;
  std::vector<std::string> log;
  RunRecipe recipe = auto_recipe(times, log);
  recipe.strategy.clear();
  const PreparedRun prepared = prepare_run(chain(), recipe);
  try {
    time_auto_check(prepared, recipe);
    FAIL() << "a run without a plan has nothing to check";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("planned here"));
  }
}

TEST(PlanAndRun, ASequentialPredictionIsNotTimed) {
  FakeTimes times{{{"candidate", 1.0}, {"sequential", 2.0}}, {}};
  std::vector<std::string> log;
  PreparedRun prepared = prepare_run(chain(), auto_recipe(times, log));
  EXPECT_FALSE(prepared.auto_check);
  EXPECT_TRUE(times.calls.empty());
  ASSERT_TRUE(prepared.plan);
  EXPECT_EQ(prepared.plan->plan.strategy, "sequential");
}

TEST(PlanAndRun, ANamedStrategyIsNotChecked) {
  FakeTimes times{{{"candidate", 2.0}, {"sequential", 1.0}}, {}};
  std::vector<std::string> log;
  RunRecipe recipe = auto_recipe(times, log);
  recipe.strategy = "lc";
  PreparedRun prepared = prepare_run(branchy(), recipe);
  EXPECT_FALSE(prepared.auto_check);
  ASSERT_TRUE(prepared.plan);
  EXPECT_EQ(prepared.plan->plan.strategy, "lc");
}

TEST(PlanAndRun, WithoutAPlanTheSequentialExecutorRunsWithItsThreads) {
  FakeTimes times;
  std::vector<std::string> log;
  RunRecipe recipe = auto_recipe(times, log);
  recipe.strategy.clear();
  recipe.threads = 2;
  PreparedRun prepared = prepare_run(chain(), recipe);
  EXPECT_FALSE(prepared.plan);
  ASSERT_NE(prepared.sequential, nullptr);
  EXPECT_EQ(prepared.executor.get(), prepared.sequential);
  EXPECT_EQ(prepared.inputs.size(), 1u);
  EXPECT_TRUE(logged(log, "sequential executor, 2 thread(s)"));
  EXPECT_EQ(prepared.executor->run(prepared.inputs).size(), 1u);
}

// A sequential plan on fewer threads than the cores is checked like a parallel one; on every
// core it is the plan the check compares against.
TEST(PlanAndRun, SequentialOnFewerThreadsThanTheCoresIsChecked) {
  const Graph graph = chain();
  RunRecipe recipe;
  recipe.workers = 2;
  ModelPlanOptions options;
  options.strategy = "sequential";
  options.workers = 1;
  options.threads_per_worker = 1;
  const ModelPlan one_thread = plan_model(graph, static_costs(graph), options);
  EXPECT_TRUE(auto_check_needed(one_thread, recipe));
  options.threads_per_worker = 2;
  EXPECT_FALSE(auto_check_needed(plan_model(graph, static_costs(graph), options), recipe));
  options.strategy = "lc";
  options.workers = 2;
  options.threads_per_worker = 1;
  EXPECT_TRUE(auto_check_needed(plan_model(graph, static_costs(graph), options), recipe));
  // On a machine file the sequential plan is "all on device 0", whatever its threads.
  recipe.machine = cpu_machine(2, 2);
  EXPECT_FALSE(auto_check_needed(one_thread, recipe));
}

// A plan of `family` and `configuration` with `threads` per worker, for the runner-up's rule.
ModelPlan candidate_plan(const std::string& family, const std::string& configuration, int threads) {
  ModelPlan plan;
  plan.family = family;
  plan.configuration = configuration;
  plan.plan.strategy = family == "sequential" ? "sequential" : "lc";
  plan.threads_per_worker = threads;
  return plan;
}

TEST(PlanAndRun, TheRunnerUpIsTheBestOfAnotherFamily) {
  RunRecipe recipe;
  recipe.workers = 2;
  ModelPlan choice = candidate_plan("task", "lc, 2 workers x 1 thread", 1);
  choice.alternatives = {candidate_plan("task", "clone, 2 workers x 1 thread", 1),
                         candidate_plan("sequential", "1 worker x 1 thread", 1),
                         candidate_plan("sequential", "1 worker x 2 threads", 2)};
  const ModelPlan* second = check_runner_up(choice, recipe);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->configuration, "1 worker x 1 thread");
}

TEST(PlanAndRun, TheRunnerUpIsOfTheSameFamilyWhenNoOtherNeedsTheCheck) {
  RunRecipe recipe;
  recipe.workers = 2;
  ModelPlan choice = candidate_plan("task", "lc, 2 workers x 1 thread", 1);
  // Sequential on every core is timed anyway, as the fallback.
  choice.alternatives = {candidate_plan("sequential", "1 worker x 2 threads", 2),
                         candidate_plan("task", "clone, 2 workers x 1 thread", 1)};
  const ModelPlan* second = check_runner_up(choice, recipe);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->configuration, "clone, 2 workers x 1 thread");
  choice.alternatives.pop_back();
  EXPECT_EQ(check_runner_up(choice, recipe), nullptr);
}

// For a stream, a sequential pick on every core is timed against another family predicted
// within kStreamCheckMargin of it; for one sample, or further off, it is not.
TEST(PlanAndRun, AStreamTimesASequentialPickAgainstANearFamily) {
  RunRecipe recipe;
  recipe.workers = 2;
  recipe.samples = 4;
  ModelPlan choice = candidate_plan("sequential", "1 worker x 2 threads", 2);
  choice.plan.makespan = 1.0;
  ModelPlan data_parallel = candidate_plan("data-parallel", "2 workers x 1 thread", 1);
  data_parallel.plan.makespan = 1.2;
  choice.alternatives = {data_parallel};
  const ModelPlan* second = stream_runner_up(choice, recipe);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->configuration, "2 workers x 1 thread");
  choice.alternatives.front().plan.makespan = 1.3;
  EXPECT_EQ(stream_runner_up(choice, recipe), nullptr) << "1.3x is beyond the margin";
  choice.alternatives.front().plan.makespan = 1.2;
  recipe.samples = 1;
  EXPECT_EQ(stream_runner_up(choice, recipe), nullptr) << "one sample: no stream check";
  recipe.samples = 4;
  ModelPlan task = candidate_plan("task", "lc, 2 workers x 1 thread", 1);
  task.alternatives = choice.alternatives;
  EXPECT_EQ(stream_runner_up(task, recipe), nullptr) << "a task pick has its own check";
}

// A stream of 32 samples on 2 cores.
RunRecipe stream_recipe() {
  RunRecipe recipe;
  recipe.workers = 2;
  recipe.samples = 32;
  return recipe;
}

// Sequential on both cores predicted at 1.0, beside `alternatives` (family, configuration,
// predicted makespan), fastest first as auto orders them.
ModelPlan sequential_pick(
    const std::vector<std::tuple<std::string, std::string, double>>& alternatives) {
  ModelPlan choice = candidate_plan("sequential", "1 worker x 2 threads", 2);
  choice.plan.makespan = 1.0;
  for (const auto& [family, configuration, makespan] : alternatives) {
    choice.alternatives.push_back(candidate_plan(family, configuration, 1));
    choice.alternatives.back().plan.makespan = makespan;
  }
  return choice;
}

// A stream's sequential pick timed against a near data-parallel plan is also timed against the
// best of a third family predicted near it (a task plan on googlenet measured fastest there).
TEST(PlanAndRun, AStreamAlsoTimesTheBestOfAThirdNearFamily) {
  const ModelPlan choice =
      sequential_pick({{"data-parallel", "2 workers x 1 thread", 1.01},
                       {"data-parallel", "2 workers x 1 thread, b", 1.02},
                       {"task", "switched-hypercluster, 2 workers x 1 thread", 1.03},
                       {"task", "lc, 2 workers x 1 thread", 1.04}});
  const ModelPlan* second = stream_runner_up(choice, stream_recipe());
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->configuration, "2 workers x 1 thread");
  const ModelPlan* third = stream_third_family(choice, stream_recipe(), *second);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(third->configuration, "switched-hypercluster, 2 workers x 1 thread");
}

TEST(PlanAndRun, AStreamTimesNoThirdFamilyBeyondTheMargin) {
  const ModelPlan choice =
      sequential_pick({{"data-parallel", "2 workers x 1 thread", 1.01},
                       {"task", "switched-hypercluster, 2 workers x 1 thread", 1.3},
                       {"task", "lc, 2 workers x 1 thread", 1.4}});
  const ModelPlan* second = stream_runner_up(choice, stream_recipe());
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(stream_third_family(choice, stream_recipe(), *second), nullptr);
}

TEST(PlanAndRun, AStreamWithTwoFamiliesTimesNoThird) {
  const ModelPlan choice = sequential_pick({{"data-parallel", "2 workers x 1 thread", 1.01},
                                            {"sequential", "1 worker x 1 thread", 1.02}});
  const ModelPlan* second = stream_runner_up(choice, stream_recipe());
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(stream_third_family(choice, stream_recipe(), *second), nullptr)
      << "sequential on one thread is the choice's own family";
}

// The sequential plan on every core for 4 samples, with a data-parallel alternative predicted
// `ratio` times its makespan: what time_auto_check makes of it (data-parallel timed faster).
// With `task_ratio` > 0, a switched-hypercluster plan predicted that many times the makespan is
// offered as well (timed fastest of all).
std::optional<CheckedChoice> stream_check_with(double ratio, std::map<std::string, int>& calls,
                                               double task_ratio = 0) {
  FakeTimes unused;
  std::vector<std::string> log;
  RunRecipe recipe = auto_recipe(unused, log);
  recipe.strategy = "sequential";
  recipe.samples = 4;
  recipe.workers = 1;
  recipe.threads_per_worker = 2;
  recipe.timer = [&calls](const std::string& name, ExecutorInterface&,
                          const std::vector<SampleInputs>&) {
    ++calls[name];
    return name.starts_with("data-parallel") ? 1.0 : name.starts_with("switched") ? 0.5 : 2.0;
  };
  PreparedRun prepared = prepare_run(branchy(), recipe);
  EXPECT_FALSE(auto_check_needed(*prepared.plan, recipe));
  ModelPlanOptions options;
  options.strategy = "data-parallel";
  options.workers = 2;
  options.threads_per_worker = 1;
  options.samples = 4;
  ModelPlan near = plan_model(prepared.graph, *prepared.costs, options);
  EXPECT_TRUE(near.configuration.starts_with("data-parallel")) << near.configuration;
  near.plan.makespan = ratio * prepared.plan->plan.makespan;
  prepared.plan->alternatives = {near};
  if (task_ratio > 0) {
    options.strategy = "switched-hypercluster";
    ModelPlan task = plan_model(prepared.graph, *prepared.costs, options);
    EXPECT_EQ(task.family, "task");
    EXPECT_TRUE(task.configuration.starts_with("switched")) << task.configuration;
    task.plan.makespan = task_ratio * prepared.plan->plan.makespan;
    prepared.plan->alternatives.push_back(task);
  }
  return time_auto_check(prepared, recipe);
}

TEST(PlanAndRun, AStreamKeepsANearFamilyTimedFasterThanSequential) {
  std::map<std::string, int> calls;
  const std::optional<CheckedChoice> checked = stream_check_with(1.2, calls);
  ASSERT_TRUE(checked);
  EXPECT_EQ(checked->check.candidate, "sequential");
  EXPECT_TRUE(checked->check.runner_up.starts_with("data-parallel")) << checked->check.runner_up;
  EXPECT_DOUBLE_EQ(checked->check.runner_up_ms, 1.0);
  EXPECT_DOUBLE_EQ(checked->check.sequential_ms, 2.0);
  EXPECT_EQ(checked->kept.configuration, checked->check.runner_up);
  EXPECT_EQ(calls.size(), 2u) << "the sequential pick is timed once, not again as a fallback";
}

TEST(PlanAndRun, AStreamKeepsAThirdFamilyTimedFastest) {
  std::map<std::string, int> calls;
  const std::optional<CheckedChoice> checked = stream_check_with(1.1, calls, 1.2);
  ASSERT_TRUE(checked);
  EXPECT_TRUE(checked->check.runner_up.starts_with("data-parallel")) << checked->check.runner_up;
  EXPECT_TRUE(checked->check.third.starts_with("switched")) << checked->check.third;
  EXPECT_DOUBLE_EQ(checked->check.third_ms, 0.5);
  EXPECT_EQ(checked->kept.configuration, checked->check.third);
  EXPECT_EQ(checked->kept.plan.strategy, "switched-hypercluster");
  EXPECT_EQ(calls.size(), 3u);
  EXPECT_THAT(auto_check_text(checked->check), HasSubstr(", third switched-hypercluster"));
  EXPECT_EQ(auto_check_json(checked->check, "switched-hypercluster")["third_ms"], 0.5);
}

TEST(PlanAndRun, AStreamDoesNotTimeAThirdFamilyPredictedFarSlower) {
  std::map<std::string, int> calls;
  const std::optional<CheckedChoice> checked = stream_check_with(1.1, calls, 1.3);
  ASSERT_TRUE(checked);
  EXPECT_TRUE(checked->check.third.empty()) << checked->check.third;
  EXPECT_EQ(calls.size(), 2u);
}

TEST(PlanAndRun, AStreamDoesNotTimeAFamilyPredictedFarSlower) {
  std::map<std::string, int> calls;
  EXPECT_FALSE(stream_check_with(1.3, calls));
  EXPECT_TRUE(calls.empty());
}

TEST(PlanAndRun, APlanFileRunsAsWrittenWithoutACheck) {
  const Graph graph = branchy();
  ModelPlanOptions options;
  options.strategy = "lc";
  const ModelPlan written = plan_model(graph, static_costs(graph), options);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("plan_and_run_" + std::to_string(getpid()) + ".json"))
                               .string();
  write_model_plan(path, written, graph);
  FakeTimes times{{{"candidate", 2.0}, {"sequential", 1.0}}, {}};
  std::vector<std::string> log;
  RunRecipe recipe = auto_recipe(times, log);
  recipe.strategy.clear();
  recipe.plan_file = path;
  PreparedRun prepared = prepare_run(graph, recipe);
  std::filesystem::remove(path);
  EXPECT_FALSE(prepared.auto_check);
  EXPECT_FALSE(prepared.costs);
  ASSERT_TRUE(prepared.plan);
  EXPECT_EQ(prepared.plan->plan.order, written.plan.order);
  ASSERT_NE(prepared.parallel, nullptr);
}

TEST(PlanAndRun, APlanFileRunsTheConvolutionFamilyItRecords) {
  const Graph graph = branchy();
  ModelPlanOptions options;
  options.strategy = "lc";
  ModelPlan written = plan_model(graph, static_costs(graph), options);
  written.convolution_family = ConvolutionFamily::kChannelsLast;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("plan_and_run_family_" + std::to_string(getpid()) + ".json"))
                               .string();
  write_model_plan(path, written, graph);
  FakeTimes times;
  std::vector<std::string> log;
  RunRecipe recipe = auto_recipe(times, log);
  recipe.strategy.clear();
  recipe.plan_file = path;
  recipe.layouts = "auto";
  PreparedRun prepared = prepare_run(graph, recipe);
  std::filesystem::remove(path);
  EXPECT_EQ(prepared.layouts.family, ConvolutionFamily::kChannelsLast);
  EXPECT_FALSE(prepared.layouts.measured);
  for (const std::string& line : log) EXPECT_THAT(line, ::testing::Not(HasSubstr("measured")));
}

TEST(PlanAndRun, AMissingPlanFileIsNamed) {
  FakeTimes times;
  std::vector<std::string> log;
  RunRecipe recipe = auto_recipe(times, log);
  recipe.strategy.clear();
  recipe.plan_file = "/nonexistent/plan.json";
  try {
    prepare_run(branchy(), recipe);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/plan.json"));
  }
}

TEST(PlanAndRun, AnUnknownConvolutionFamilyIsRefused) {
  FakeTimes times;
  std::vector<std::string> log;
  RunRecipe recipe = auto_recipe(times, log);
  recipe.layouts = "diagonal";
  try {
    prepare_run(chain(), recipe);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("diagonal"));
  }
}

// The keep-the-fastest decision of both checks (threads and ranks), from given medians in the
// order the candidates are preferred: choice, runner-up, sequential.
TEST(FastestMeasured, KeepsTheSmallestMedian) {
  EXPECT_EQ(fastest_measured({3.0, 2.0, 2.5}), 1u);
  EXPECT_EQ(fastest_measured({3.0, 2.5, 2.0}), 2u);
  EXPECT_EQ(fastest_measured({1.9, 2.0, 2.5}), 0u);
  EXPECT_EQ(fastest_measured({4.0, 1.0}), 1u);
}

TEST(FastestMeasured, ATieKeepsTheCandidatePreferredFirst) {
  EXPECT_EQ(fastest_measured({2.0, 2.0, 2.0}), 0u);
  EXPECT_EQ(fastest_measured({3.0, 2.0, 2.0}), 1u);
}

TEST(FastestMeasured, AMedianThatIsNoNumberNeverWins) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(fastest_measured({nan, 5.0, 4.0}), 2u);
  EXPECT_EQ(fastest_measured({5.0, nan, 6.0}), 0u);
  EXPECT_EQ(fastest_measured({inf, 7.0}), 1u);
  EXPECT_THROW(fastest_measured({}), Error);
  try {
    fastest_measured({nan, inf});
    FAIL() << "no finite median";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("measured no candidate"));
  }
}

TEST(AutoCheckReport, JsonAndTextNameEveryTimedCandidate) {
  AutoCheck check;
  check.candidate = "lc";
  check.candidate_configuration = "lc, 2 devices";
  check.candidate_ms = 3.5;
  check.runner_up = "heft, 2 devices";
  check.runner_up_ms = 3.25;
  check.sequential_ms = 4;
  check.kept = "heft, 2 devices";
  const nlohmann::json json = auto_check_json(check, "heft");
  EXPECT_EQ(json["candidate"], "lc");
  EXPECT_EQ(json["candidate_configuration"], "lc, 2 devices");
  EXPECT_EQ(json["candidate_ms"], 3.5);
  EXPECT_EQ(json["runner_up"], "heft, 2 devices");
  EXPECT_EQ(json["runner_up_ms"], 3.25);
  EXPECT_EQ(json["sequential_ms"], 4.0);
  EXPECT_EQ(json["kept"], "heft");
  EXPECT_EQ(json["kept_configuration"], "heft, 2 devices");
  EXPECT_EQ(auto_check_text(check),
            "timed lc, 2 devices at 3.500 ms, runner-up heft, 2 devices at 3.250 ms against "
            "sequential at 4.000 ms: kept heft, 2 devices");
  check.runner_up.clear();
  EXPECT_FALSE(auto_check_json(check, "lc").contains("runner_up"));
}

}  // namespace
}  // namespace cleave
