// The command line of generated programs: options and the threads a program runs with.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "codegen_runtime/program_main.h"

namespace cleave {
namespace {

ProgramMainOptions parse(std::vector<std::string> args, bool ranks) {
  args.insert(args.begin(), "model_run");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  bool help = false;
  return parse_program_options(static_cast<int>(argv.size()), argv.data(), ranks, help);
}

StaticProgramTables plan_of(int workers, int threads_per_worker) {
  StaticProgramTables tables{};
  tables.workers = workers;
  tables.threads_per_worker = threads_per_worker;
  return tables;
}

// The threads a program ran with: workers' cores, then intra-op threads per worker.
std::pair<int, int> threads(const StaticProgramTables& tables, bool fixed, const HostLoad& load) {
  const PlanThreads fit = program_threads(tables, fixed, load);
  return {fit.threads, fit.threads_per_worker};
}

TEST(ProgramThreads, ThePlansThreadsWhileTheCoresAreFree) {
  EXPECT_EQ(threads(plan_of(1, 2), false, {0, 2}), std::make_pair(1, 2));
  EXPECT_EQ(threads(plan_of(2, 1), false, {0, 2}), std::make_pair(2, 1));
}

TEST(ProgramThreads, FewerIntraOpThreadsWhenOtherProcessesHoldTheCores) {
  EXPECT_EQ(threads(plan_of(1, 2), false, {1, 2}), std::make_pair(1, 1));
  EXPECT_EQ(threads(plan_of(2, 2), false, {2, 4}), std::make_pair(2, 1));
}

TEST(ProgramThreads, WorkersFoldOntoTheFreeCoresAsCleaveRunFoldsThem) {
  // One other runnable thread on 2 cores leaves one core for a 2-worker plan.
  EXPECT_EQ(threads(plan_of(2, 1), false, {1, 2}), std::make_pair(1, 1));
  EXPECT_EQ(threads(plan_of(2, 1), false, {4, 2}), std::make_pair(1, 1));
  EXPECT_EQ(threads(plan_of(4, 1), false, {2, 4}), std::make_pair(2, 1));
}

TEST(ProgramThreads, FixedKeepsThePlansThreads) {
  EXPECT_EQ(threads(plan_of(1, 2), true, {4, 2}), std::make_pair(1, 2));
  EXPECT_EQ(threads(plan_of(2, 1), true, {4, 2}), std::make_pair(2, 1));
}

TEST(ProgramOptions, FixedThreadsIsAnOptionOfOneProcessProgramsOnly) {
  EXPECT_TRUE(parse({"--fixed-threads"}, false).fixed_threads);
  EXPECT_FALSE(parse({}, false).fixed_threads);
  EXPECT_THROW(parse({"--fixed-threads"}, true), Error);
}

}  // namespace
}  // namespace cleave
