// The command line of generated programs: options and the threads a program runs with.
#include <gtest/gtest.h>

#include <string>
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

TEST(ProgramThreads, ThePlansThreadsWhileTheCoresAreFree) {
  EXPECT_EQ(program_threads_per_worker(plan_of(1, 2), false, {0, 2}), 2);
}

TEST(ProgramThreads, FewerIntraOpThreadsWhenOtherProcessesHoldTheCores) {
  EXPECT_EQ(program_threads_per_worker(plan_of(1, 2), false, {1, 2}), 1);
  EXPECT_EQ(program_threads_per_worker(plan_of(2, 2), false, {2, 4}), 1);
  // Never fewer than one, even where the workers would have to be folded.
  EXPECT_EQ(program_threads_per_worker(plan_of(2, 1), false, {4, 2}), 1);
}

TEST(ProgramThreads, FixedKeepsThePlansThreads) {
  EXPECT_EQ(program_threads_per_worker(plan_of(1, 2), true, {4, 2}), 2);
}

TEST(ProgramOptions, FixedThreadsIsAnOptionOfOneProcessProgramsOnly) {
  EXPECT_TRUE(parse({"--fixed-threads"}, false).fixed_threads);
  EXPECT_FALSE(parse({}, false).fixed_threads);
  EXPECT_THROW(parse({"--fixed-threads"}, true), Error);
}

}  // namespace
}  // namespace cleave
